package report

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlab-dev/rlab/engine/results"
)

func TestBySize(t *testing.T) {
	s := func(size int64, rep int, v float64) results.Sample {
		return results.Sample{Metric: "bw_avg", Value: v, Unit: "Gb/s", Meta: results.Meta{Size: size, Repeat: rep}}
	}
	for _, tc := range []struct {
		name string
		in   []results.Sample
		want []sizeAgg
	}{
		{"none", nil, []sizeAgg{}},
		{"one", []results.Sample{s(64, 0, 2)}, []sizeAgg{{64, 2, 2, 2, 1}}},
		{"odd repeats: middle value", []results.Sample{s(64, 0, 3), s(64, 1, 1), s(64, 2, 10)}, []sizeAgg{{64, 3, 1, 10, 3}}},
		{"even repeats: mean of the middle two", []results.Sample{s(64, 0, 4), s(64, 1, 1), s(64, 2, 2), s(64, 3, 9)}, []sizeAgg{{64, 3, 1, 9, 4}}},
		{"sizes sorted, NaN and Inf left out", []results.Sample{s(4096, 0, 5), s(64, 0, 1), s(64, 1, math.NaN()), s(4096, 1, math.Inf(1))},
			[]sizeAgg{{64, 1, 1, 1, 1}, {4096, 5, 5, 5, 1}}},
		{"other metrics ignored", []results.Sample{{Metric: "bw_peak", Value: 7}}, []sizeAgg{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, bySize(tc.in, "bw_avg")); d != "" {
				t.Errorf("bySize (-want +got):\n%s", d)
			}
		})
	}
}

func TestNiceScale(t *testing.T) {
	for _, tc := range []struct {
		max, top float64
		ticks    int
	}{
		{0, 1, 6}, {0.076, 0.08, 5}, {1, 1, 6}, {6638.19, 8000, 5}, {0.00125, 0.00125, 6}, {-5, 1, 6}, {math.NaN(), 1, 6},
	} {
		top, ticks := niceScale(tc.max)
		if math.Abs(top-tc.top) > 1e-12 || len(ticks) != tc.ticks {
			t.Errorf("niceScale(%v) = %v with %d ticks, want %v with %d", tc.max, top, len(ticks), tc.top, tc.ticks)
		}
	}
}

// TestSpreadWhiskers: repeats fold into a median point with a whisker
// from the lowest to the highest repeat, inside the plot.
func TestSpreadWhiskers(t *testing.T) {
	var ss []results.Sample
	for r, v := range []float64{1, 2, 4} {
		ss = append(ss, results.Sample{Metric: "bw_avg", Value: v, Unit: "Gb/s", Meta: results.Meta{Size: 4096, Repeat: r}},
			results.Sample{Metric: "bw_avg", Value: v * 2, Unit: "Gb/s", Meta: results.Meta{Size: 65536, Repeat: r}})
	}
	charts := workloadCharts("w0", ss)
	if len(charts) != 1 {
		t.Fatalf("got %d charts, want the bandwidth chart only", len(charts))
	}
	c := charts[0]
	dots := c.Series[0].Dots
	if len(dots) != 2 {
		t.Fatalf("got %d points, want 2", len(dots))
	}
	for _, d := range dots {
		if !d.Spread || !(d.YHi < d.Y && d.Y < d.YLo) {
			t.Errorf("point %+v: want a whisker with the median inside it (SVG y grows downwards)", d)
		}
		if d.YHi < c.Plot.Y || d.YLo > c.Plot.Y+c.Plot.H {
			t.Errorf("whisker %v..%v leaves the plot %+v", d.YHi, d.YLo, c.Plot)
		}
	}
}
