package results

import (
	"math"
	"strconv"
	"strings"
)

// HumanValue prints a measured value with the unit it is recorded in:
// the unit results.json, an expect condition (result.<metric>) and
// --metric-threshold use for it, so a number read in any view means the
// same thing when copied into an expect (0.02495 Gb/s, not 24.95 Mb/s).
// FormatValue gives the digits: 4 significant ones, never more than the
// value, so `result.<metric> >= <printed>` holds.
func HumanValue(v float64, unit string) string {
	return strings.TrimSpace(FormatValue(v) + " " + unit)
}

// byteScales are the binary units of a size in bytes, largest first: a
// file's or a buffer's size, not a metric (metrics keep their unit).
var byteScales = []struct {
	per  float64
	name string
}{{1 << 40, "TiB"}, {1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}, {1, "B"}}

// HumanBytes prints a byte count with a binary unit (1.5 GiB, 268 KiB,
// 512 B), exact counts without decimals (256 MiB).
func HumanBytes(n int64) string {
	if n < 1024 && n > -1024 {
		return strconv.FormatInt(n, 10) + " B"
	}
	v := float64(n)
	for _, s := range byteScales {
		if math.Abs(v) >= s.per {
			return strconv.FormatFloat(v/s.per, 'g', 4, 64) + " " + s.name
		}
	}
	return strconv.FormatInt(n, 10) + " B"
}

// Column is the unit of a table's column of one metric: the metric's
// recorded unit, the one every other view prints it in (summary.md's
// tables and the report's read it): Name for the header, Format for each
// cell.
type Column struct{ unit string }

// ColumnFor is the column of values recorded in unit (vals are not
// looked at: a column is never rescaled, so its cells copy into an expect
// as they read).
func ColumnFor(unit string, vals []float64) Column { return Column{unit} }

// Name is the column's unit.
func (c Column) Name() string { return c.unit }

// Format prints v without the unit: the header says it.
func (c Column) Format(v float64) string { return FormatValue(v) }
