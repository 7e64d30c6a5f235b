package report

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/engine/results"
)

// TestSampleTableBounded: a received results.json whose samples each have
// a metric and a size of their own cannot make a workload's table one row
// and one column a sample (n squared cells); a run's filled sweep is still
// pivoted (round 9's attack).
func TestSampleTableBounded(t *testing.T) {
	sample := func(metric string, size int64, repeat int) results.Sample {
		s := results.Sample{Metric: metric, Value: 1.5, Unit: "Gb/s"}
		s.Meta.Size, s.Meta.Repeat = size, repeat
		return s
	}
	var sparse []results.Sample
	for i := range 3000 {
		sparse = append(sparse, sample(fmt.Sprintf("m%d", i), int64(i+1), 0))
	}
	var sweep []results.Sample
	for _, size := range []int64{4096, 65536, 1 << 20} {
		for r := range 2 {
			sweep = append(sweep, sample("bw_avg", size, r), sample("bw_peak", size, r))
		}
	}
	for _, tc := range []struct {
		name     string
		samples  []results.Sample
		maxCells int
		pivoted  bool
	}{
		{"a metric and a size a sample", sparse, 4*3000 + 10_000, false},
		{"a filled sweep", sweep, 4 * 12, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb := sampleTable(tc.samples)
			cells := 0
			for _, r := range tb.Rows {
				cells += len(r)
			}
			for _, r := range tb.Raw {
				cells += len(r)
			}
			if cells > 2*tc.maxCells {
				t.Fatalf("%d samples made %d cells (rows and raw), want at most %d", len(tc.samples), cells, 2*tc.maxCells)
			}
			cols := strings.Join(tb.Columns, ",")
			if got := strings.Contains(cols, "bw_avg"); got != tc.pivoted {
				t.Errorf("columns %q: pivoted by metric %v, want %v", cols, got, tc.pivoted)
			}
			// Every sample's value is shown either way.
			shown := 0
			for _, r := range tb.Rows {
				for _, c := range r {
					if strings.HasPrefix(c, "1.5") {
						shown++
					}
				}
			}
			if shown != len(tc.samples) {
				t.Errorf("%d values shown, want %d", shown, len(tc.samples))
			}
		})
	}
}
