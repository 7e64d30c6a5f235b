package lab

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"
)

var sizeUnits = []struct {
	suffix string
	mult   int64
}{
	// Longest suffixes first so "KiB" is not read as "B".
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1000}, {"MB", 1000 * 1000}, {"GB", 1000 * 1000 * 1000}, {"TB", 1000 * 1000 * 1000 * 1000},
	{"B", 1},
}

// ParseSize parses a byte size: a whole number of bytes ("4096") or a whole
// number with one unit and no space ("64KiB", "1GiB", "10MB"). Units are
// case-sensitive: "kib" is an error, because "mb" and "Mb" would be bits.
func ParseSize(s string) (int64, error) {
	if s == "" {
		return 0, fmt.Errorf("empty size")
	}
	num, mult := s, int64(1)
	for _, u := range sizeUnits {
		if strings.HasSuffix(s, u.suffix) {
			num, mult = strings.TrimSuffix(s, u.suffix), u.mult
			break
		}
	}
	if num == "" {
		return 0, fmt.Errorf("size %q has a unit but no number", s)
	}
	for _, r := range num {
		if r < '0' || r > '9' {
			return 0, fmt.Errorf("size %q is not a whole number with an optional unit (B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)", s)
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n > math.MaxInt64/mult {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return n * mult, nil
}

// sizeFromNumber accepts a bare number of bytes: whole and not negative.
func sizeFromNumber(f *big.Float) (int64, error) {
	if !f.IsInt() {
		return 0, fmt.Errorf("size %s is not a whole number of bytes", f.Text('g', -1))
	}
	n, acc := f.Int64()
	if acc != big.Exact {
		return 0, fmt.Errorf("size %s is too large", f.Text('g', -1))
	}
	return n, nil
}

// ParseDuration parses a duration with units ("30s", "5m", "1h30m"); a bare
// number is an error because its unit would be a guess.
func ParseDuration(s string) (time.Duration, error) {
	if s == "" {
		return 0, fmt.Errorf("empty duration")
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return 0, fmt.Errorf("duration %q has no unit; write e.g. %q", s, s+"s")
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("duration %q is not a number with units such as \"500ms\", \"30s\", \"5m\", \"1h30m\"", s)
	}
	return d, nil
}
