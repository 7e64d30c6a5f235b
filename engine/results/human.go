package results

import (
	"math"
	"strconv"
	"strings"
)

// scale is one display unit of a metric's unit: Per is how many of the
// recorded unit make one of it.
type scale struct {
	Per  float64
	Name string
}

// unitScales are the display units of each recorded unit, largest first.
// results.json keeps the recorded unit; only what people read is scaled.
var unitScales = map[string][]scale{
	"Gb/s":      {{1, "Gb/s"}, {1e-3, "Mb/s"}, {1e-6, "kb/s"}},
	"Mbit/s":    {{1e3, "Gb/s"}, {1, "Mb/s"}, {1e-3, "kb/s"}},
	"MiB/s":     {{1024, "GiB/s"}, {1, "MiB/s"}, {1.0 / 1024, "KiB/s"}},
	"Mpps":      {{1, "Mpps"}, {1e-3, "kpps"}, {1e-6, "pps"}},
	"usec":      {{1e6, "s"}, {1e3, "ms"}, {1, "usec"}, {1e-3, "nsec"}},
	"usec/iter": {{1e6, "s/iter"}, {1e3, "ms/iter"}, {1, "usec/iter"}, {1e-3, "nsec/iter"}},
	"s":         {{1, "s"}, {1e-3, "ms"}, {1e-6, "usec"}},
	"bytes":     {{1 << 40, "TiB"}, {1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}, {1, "B"}},
}

// HumanValue prints a measured value with its unit for people: scaled to
// the display unit that keeps it at or above 1 (327 kpps, not 0.000327
// Mpps; 256 MiB, not 268435456 bytes), 4 significant digits. Units without
// scales are printed as recorded.
func HumanValue(v float64, unit string) string {
	sc, ok := unitScales[unit]
	if !ok || v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return strings.TrimSpace(FormatValue(v) + " " + unit)
	}
	pick := sc[len(sc)-1]
	for _, s := range sc {
		if math.Abs(v) >= s.Per {
			pick = s
			break
		}
	}
	return FormatValue(v/pick.Per) + " " + pick.Name
}

// HumanBytes prints a byte count with a binary unit (1.5 GiB, 268 KiB,
// 512 B), exact counts without decimals (256 MiB).
func HumanBytes(n int64) string {
	if n < 1024 && n > -1024 {
		return strconv.FormatInt(n, 10) + " B"
	}
	return HumanValue(float64(n), "bytes")
}

// displayScale picks one display unit for a column of values of one unit
// (a summary table's metric): the one HumanValue would pick for the
// column's median magnitude, so most cells read between 1 and 1000.
func displayScale(unit string, vals []float64) scale {
	sc, ok := unitScales[unit]
	if !ok {
		return scale{1, unit}
	}
	var mags []float64
	for _, v := range vals {
		if v != 0 && !math.IsNaN(v) && !math.IsInf(v, 0) {
			mags = append(mags, math.Abs(v))
		}
	}
	if len(mags) == 0 {
		for _, s := range sc {
			if s.Per == 1 {
				return s
			}
		}
		return scale{1, unit}
	}
	m := Median(mags)
	for _, s := range sc {
		if m >= s.Per {
			return s
		}
	}
	return sc[len(sc)-1]
}

// Column is the display unit of a column of values of one recorded unit,
// the one summary.md's tables use (the report's tables read it too):
// Name for the header, Format for each cell.
type Column struct{ s scale }

// ColumnFor picks the display unit for vals, recorded in unit.
func ColumnFor(unit string, vals []float64) Column { return Column{displayScale(unit, vals)} }

// Name is the display unit ("kpps", "MiB/s"; the recorded unit when it has
// no scales).
func (c Column) Name() string { return c.s.Name }

// Format prints v (in the recorded unit) in the column's display unit,
// without the unit: the header says it.
func (c Column) Format(v float64) string { return FormatValue(v / c.s.Per) }
