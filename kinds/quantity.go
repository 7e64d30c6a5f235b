package kinds

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// Quantities with units, for `expect` thresholds written as a view shows
// them ("24.95 Mb/s", "1.5 ms", "761 pps"): the units a person may write,
// what each measures, and how it converts to the unit a metric is recorded
// in. Metric units themselves are declared by each family (Metric.Unit);
// TestMetricUnitsKnown fails when a family records a unit this table does
// not know, so the two cannot drift apart silently.

// Dimension is what a unit measures; units of one dimension convert into
// each other, units of two never do.
type Dimension string

// The dimensions of the metric units.
const (
	Bandwidth  Dimension = "bandwidth"   // base: bit/s
	Time       Dimension = "time"        // base: s
	PacketRate Dimension = "packet rate" // base: packets (messages) per second
	Count      Dimension = "count"       // counted things: lines, packets, bytes, an exit code; never converted
)

// Unit is one spelling of a unit a quantity may be written in.
type Unit struct {
	Name string
	Dim  Dimension
	// Base is how many of the dimension's base unit one of this unit is,
	// as an exact fraction ("1000000", "1/1000000") so a conversion adds no
	// rounding of its own: gbps("24.95 Mb/s") is the float64 of 0.02495.
	Base string
}

// units are the spellings accepted, by dimension. Case matters: b is a
// bit and B a byte (1 MB/s = 8 Mb/s), M is mega and m milli.
var units = []Unit{
	{"bit/s", Bandwidth, "1"}, {"b/s", Bandwidth, "1"}, {"bps", Bandwidth, "1"},
	{"kbit/s", Bandwidth, "1000"}, {"kb/s", Bandwidth, "1000"}, {"kbps", Bandwidth, "1000"},
	{"Mbit/s", Bandwidth, "1000000"}, {"Mb/s", Bandwidth, "1000000"}, {"Mbps", Bandwidth, "1000000"},
	{"Gbit/s", Bandwidth, "1000000000"}, {"Gb/s", Bandwidth, "1000000000"}, {"Gbps", Bandwidth, "1000000000"},
	{"Tbit/s", Bandwidth, "1000000000000"}, {"Tb/s", Bandwidth, "1000000000000"}, {"Tbps", Bandwidth, "1000000000000"},
	{"B/s", Bandwidth, "8"}, {"kB/s", Bandwidth, "8000"}, {"KB/s", Bandwidth, "8000"},
	{"MB/s", Bandwidth, "8000000"}, {"GB/s", Bandwidth, "8000000000"},
	{"KiB/s", Bandwidth, "8192"}, {"MiB/s", Bandwidth, "8388608"}, {"GiB/s", Bandwidth, "8589934592"},
	{"ns", Time, "1/1000000000"}, {"nsec", Time, "1/1000000000"},
	{"us", Time, "1/1000000"}, {"usec", Time, "1/1000000"}, {"µs", Time, "1/1000000"}, {"μs", Time, "1/1000000"},
	{"usec/iter", Time, "1/1000000"}, // pingpong's pp_lat: time per iteration
	{"ms", Time, "1/1000"}, {"msec", Time, "1/1000"},
	{"s", Time, "1"}, {"sec", Time, "1"},
	{"pps", PacketRate, "1"}, {"kpps", PacketRate, "1000"}, {"Mpps", PacketRate, "1000000"}, {"Gpps", PacketRate, "1000000000"},
	{"count", Count, "1"}, {"lines", Count, "1"}, {"packets", Count, "1"}, {"bytes", Count, "1"}, {"code", Count, "1"},
}

// LookupUnit returns the unit spelt exactly n.
func LookupUnit(n string) (Unit, bool) {
	for _, u := range units {
		if u.Name == n {
			return u, true
		}
	}
	return Unit{}, false
}

// UnitsOf lists the spellings of a dimension's units, smallest first as
// the table has them.
func UnitsOf(d Dimension) []string {
	var out []string
	for _, u := range units {
		if u.Dim == d {
			out = append(out, u.Name)
		}
	}
	return out
}

// Same reports whether a and b are one unit spelt two ways (Mb/s and
// Mbit/s): same dimension, same size.
func (u Unit) Same(v Unit) bool { return u.Dim == v.Dim && u.base().Cmp(v.base()) == 0 }

func (u Unit) base() *big.Rat {
	r, ok := new(big.Rat).SetString(u.Base)
	if !ok {
		panic("kinds: bad unit base " + u.Base)
	}
	return r
}

// Quantity is a number with its unit, as written.
type Quantity struct {
	Value float64
	Unit  Unit
	exact *big.Rat // the number as written, before float64 rounding
}

// ParseQuantity reads "20 Mb/s", "20Mb/s", "1.5ms", "761 pps", "2e3 us": a
// decimal number that is not negative, optional spaces, then a unit of the
// table (not a count: those have no conversion). The error says which units
// there are.
func ParseQuantity(s string) (Quantity, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && strings.IndexByte("0123456789.eE+-", t[i]) >= 0 {
		// an e only as an exponent: after a digit or dot, before a digit or sign
		if (t[i] == 'e' || t[i] == 'E') && (i+1 >= len(t) || strings.IndexByte("0123456789+-", t[i+1]) < 0) {
			break
		}
		i++
	}
	num, name := t[:i], strings.TrimSpace(t[i:])
	if num == "" {
		return Quantity{}, fmt.Errorf("%q does not start with a number; write a number then its unit, like \"20 Mb/s\"", s)
	}
	if strings.HasPrefix(num, "-") {
		return Quantity{}, fmt.Errorf("%q is negative; a threshold of a rate or a time is not", s)
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return Quantity{}, fmt.Errorf("%q does not start with a decimal number like 20, 24.95 or 1e3", s)
	}
	if _, exp, ok := strings.Cut(strings.ToLower(num), "e"); err != nil || math.IsInf(f, 0) || ok && len(strings.TrimLeft(exp, "+-0")) > 3 {
		return Quantity{}, fmt.Errorf("%q is out of range", s)
	}
	r, ok := new(big.Rat).SetString(num)
	if !ok {
		return Quantity{}, fmt.Errorf("%q does not start with a decimal number like 20, 24.95 or 1e3", s)
	}
	if name == "" {
		return Quantity{}, fmt.Errorf("%q has no unit", s)
	}
	u, ok := LookupUnit(name)
	if !ok || u.Dim == Count {
		return Quantity{}, &UnknownUnitError{Text: s, Unit: name}
	}
	return Quantity{Value: f, Unit: u, exact: r}, nil
}

// UnknownUnitError is a quantity whose unit the table does not have.
type UnknownUnitError struct{ Text, Unit string }

func (e *UnknownUnitError) Error() string {
	msg := fmt.Sprintf("%q has an unknown unit %q", e.Text, e.Unit)
	switch {
	case e.Unit == "MB/sec":
		msg += " (perftest's MB/sec is 2^20 bytes per second: write MiB/s)"
	case strings.HasSuffix(e.Unit, "/sec"):
		msg += fmt.Sprintf(" (write %q)", strings.TrimSuffix(e.Unit, "/sec")+"/s")
	}
	return msg
}

// Format writes q so that ParseQuantity reads it back exactly.
func (q Quantity) Format() string {
	return strconv.FormatFloat(q.Value, 'g', -1, 64) + " " + q.Unit.Name
}

// In converts q to unit to, which must have q's dimension; it rounds once,
// from the exact number written to float64.
func (q Quantity) In(to Unit) (float64, error) {
	if q.Unit.Dim != to.Dim {
		return 0, fmt.Errorf("%s is a %s, not a %s", q.Format(), q.Unit.Dim, to.Dim)
	}
	x := q.exact
	if x == nil {
		x = new(big.Rat)
		x.SetFloat64(q.Value)
	}
	x = new(big.Rat).Mul(x, q.Unit.base())
	x.Quo(x, to.base())
	f, _ := x.Float64()
	return f, nil
}
