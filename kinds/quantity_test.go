package kinds_test

import (
	"math"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/kinds"
)

// TestParseQuantity: the spellings a threshold may be written in and what
// each is in its metric's unit. b is a bit and B a byte (MB/s is 8 Mb/s),
// KiB/s is 1024 bytes; perftest's "MB/sec" (which means MiB/s) is refused
// rather than guessed.
func TestParseQuantity(t *testing.T) {
	tests := []struct {
		in, to string
		want   float64
	}{
		{"20 Mb/s", "Gb/s", 0.02},
		{"20Mb/s", "Gb/s", 0.02},
		{"24.95 Mb/s", "Gb/s", 0.02495}, // exactly the literal a person would write instead
		{"  24.95   Mbit/s ", "Gb/s", 0.02495},
		{"20 Mbps", "Gb/s", 0.02},
		{"1 Gb/s", "Mb/s", 1000},
		{"1 Gbps", "Mbit/s", 1000},
		{"100 kb/s", "Mb/s", 0.1},
		{"1 Tb/s", "Gb/s", 1000},
		{"1000 b/s", "kbps", 1},
		{"1 MB/s", "Mb/s", 8}, // bytes, not bits
		{"125 MB/s", "Gb/s", 1},
		{"1 GB/s", "Gb/s", 8},
		{"1 KB/s", "b/s", 8000},
		{"1 kB/s", "b/s", 8000},
		{"1 KiB/s", "b/s", 8192},
		{"1 MiB/s", "Mb/s", 8.388608},
		{"1 GiB/s", "Gb/s", 8.589934592},
		{"1 B/s", "b/s", 8},
		{"1.5 ms", "usec", 1500},
		{"1.5ms", "usec", 1500},
		{"1 msec", "usec", 1000},
		{"250 ns", "usec", 0.25},
		{"250 nsec", "usec", 0.25},
		{"7 us", "usec", 7},
		{"7 µs", "usec", 7},
		{"7 μs", "usec", 7},
		{"7 usec/iter", "usec", 7},
		{"2 s", "usec", 2e6},
		{"2 sec", "s", 2},
		{"500 ms", "s", 0.5},
		{"2e3 us", "ms", 2},
		{"761 pps", "Mpps", 0.000761},
		{"761 pps", "kpps", 0.761},
		{"1.2 kpps", "pps", 1200},
		{"3 Mpps", "kpps", 3000},
		{"1 Gpps", "Mpps", 1000},
		{".5 Mpps", "kpps", 500},
		{"0 Gb/s", "Mb/s", 0},
	}
	for _, tt := range tests {
		t.Run(tt.in+" in "+tt.to, func(t *testing.T) {
			q, err := kinds.ParseQuantity(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			to, ok := kinds.LookupUnit(tt.to)
			if !ok {
				t.Fatalf("unit %q unknown", tt.to)
			}
			got, err := q.In(to)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("%s in %s = %v, want %v", tt.in, tt.to, got, tt.want)
			}
		})
	}
}

// TestParseQuantityErrors: what is refused, and that the message says why.
func TestParseQuantityErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "does not start with a number"},
		{"Mb/s", "does not start with a number"},
		{"20", "has no unit"},
		{"20 Mx/s", `unknown unit "Mx/s"`},
		{"20 mb/s", `unknown unit "mb/s"`},   // m is milli: a bit rate in millibits is a typo
		{"20 MBps", `unknown unit "MBps"`},   // bytes are written B/s
		{"20 Kb/s", `unknown unit "Kb/s"`},   // the SI kilo is k
		{"20 MB/sec", "write MiB/s"},         // perftest's MB/sec is MiB/s
		{"20 Gb/sec", `write "Gb/s"`},        // say the spelling that works
		{"20 lines", `unknown unit "lines"`}, // a count has no conversion
		{"-5 us", "negative"},
		{"1.2.3 us", "decimal number"},
		{"1e400 Gb/s", "out of range"},
		{"1e99999999 Gb/s", "out of range"}, // refused before any big arithmetic
		{"5e us", `unknown unit "e us"`},
		{"20 Mb/s Mb/s", `unknown unit "Mb/s Mb/s"`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			_, err := kinds.ParseQuantity(tt.in)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ParseQuantity(%q) = %v, want an error containing %q", tt.in, err, tt.want)
			}
		})
	}
}

// TestQuantityDimensions: a unit converts only within its dimension.
func TestQuantityDimensions(t *testing.T) {
	q, err := kinds.ParseQuantity("5 us")
	if err != nil {
		t.Fatal(err)
	}
	gb, _ := kinds.LookupUnit("Gb/s")
	if _, err := q.In(gb); err == nil || !strings.Contains(err.Error(), "is a time, not a bandwidth") {
		t.Errorf("5 us in Gb/s: err %v, want a dimension error", err)
	}
	a, _ := kinds.LookupUnit("Mb/s")
	b, _ := kinds.LookupUnit("Mbit/s")
	c, _ := kinds.LookupUnit("MB/s")
	if !a.Same(b) || a.Same(c) {
		t.Errorf("Mb/s same as Mbit/s: %v (want true); as MB/s: %v (want false)", a.Same(b), a.Same(c))
	}
}

// TestMetricUnitsKnown: every unit a registered family records a metric in
// is in the unit table, so a unit function's comparison with it can be
// checked at load time. A family that adds a unit adds it to quantity.go.
func TestMetricUnitsKnown(t *testing.T) {
	ms := kinds.Metrics()
	if len(ms) < 10 {
		t.Fatalf("%d metrics registered; the built-in families were not", len(ms))
	}
	for _, m := range ms {
		if _, ok := kinds.LookupUnit(m.Unit); !ok {
			t.Errorf("metric %s is recorded in %q, which the unit table (quantity.go) does not know", m.Name, m.Unit)
		}
	}
}

// FuzzParseQuantity: whatever parses is a finite, non-negative number with
// a unit, Format writes it so it parses back to the same number and unit,
// and a conversion to another unit of its dimension and back is within a
// rounding of where it started.
func FuzzParseQuantity(f *testing.F) {
	for _, s := range []string{"20 Mb/s", "24.95Mb/s", "1.5 ms", "761 pps", "2e3 us", "1 MiB/s", "-1 us", "1e400 Gb/s", ".5 Mpps", "7 µs", "5e us", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q, err := kinds.ParseQuantity(s)
		if err != nil {
			return
		}
		if math.IsNaN(q.Value) || math.IsInf(q.Value, 0) || q.Value < 0 {
			t.Fatalf("ParseQuantity(%q) = %v", s, q.Value)
		}
		again, err := kinds.ParseQuantity(q.Format())
		if err != nil || again.Value != q.Value || again.Unit != q.Unit {
			t.Fatalf("ParseQuantity(%q) = %+v; its Format %q parses to %+v, %v", s, q, q.Format(), again, err)
		}
		for _, name := range kinds.UnitsOf(q.Unit.Dim) {
			to, _ := kinds.LookupUnit(name)
			v, err := q.In(to)
			if err != nil {
				t.Fatal(err)
			}
			back, err := kinds.Quantity{Value: v, Unit: to}.In(q.Unit)
			if err != nil {
				t.Fatal(err)
			}
			if v != 0 && !math.IsInf(v, 0) && back != 0 && math.Abs(back-q.Value) > 1e-12*q.Value {
				t.Fatalf("%s in %s = %v, back %v", q.Format(), name, v, back)
			}
		}
	})
}
