package report

import (
	"fmt"
	"strings"
	"testing"
	"time"

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
		{"a metric and a size a sample", sparse, 4*3000 + results.MaxPivotSlack, false},
		{"a filled sweep", sweep, 4 * 12, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb := sampleTable(tc.samples, results.NewPivotBudget())
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

// TestSampleTablesBoundedTogether: the cells past four a sample are bounded
// for the report's tables together, not table by table (found in attack
// round 10, high: 500 workloads of 100 samples, each with a metric and a
// size of its own, were 10,000 cells each under the per-table bound, 5
// million in all: 98 s, 780 MB and a 53 MB report.html from a 5.8 MB
// results.json). Here 200 such workloads: 4 million cells (rows and raw)
// before.
func TestSampleTablesBoundedTogether(t *testing.T) {
	dir := t.TempDir()
	start := time.Date(2026, 11, 28, 4, 0, 0, 0, time.UTC)
	r := &results.Run{Schema: results.SchemaVersion, Lab: "wide", ID: "2026-11-28T040000Z", Started: start, Finished: start.Add(time.Minute), Status: results.RunOK}
	const workloads, each = 200, 100
	for w := range workloads {
		name := fmt.Sprintf("w%d", w)
		r.Workloads = append(r.Workloads, results.Workload{Name: name, Tool: "ib_write_bw", Status: results.StatusOK})
		for i := range each {
			s := results.Sample{Metric: fmt.Sprintf("m%d", i), Value: 1.5, Unit: "Gb/s"}
			s.Meta.Workload, s.Meta.Tool, s.Meta.Size = name, "ib_write_bw", int64(i+1)
			r.Samples = append(r.Samples, s)
		}
	}
	if err := results.WriteRun(dir, r); err != nil {
		t.Fatal(err)
	}
	d, err := Build(dir, Options{NoGraphviz: true})
	if err != nil {
		t.Fatal(err)
	}
	cells := 0
	for _, w := range d.Workloads {
		for _, row := range w.Table.Rows {
			cells += len(row)
		}
		for _, row := range w.Table.Raw {
			cells += len(row)
		}
	}
	if most := 2 * (4*workloads*each + results.MaxPivotSlack); cells > most {
		t.Errorf("%d workloads of %d samples made %d cells (rows and raw), want at most %d", workloads, each, cells, most)
	}
}

// TestExpectsBoundedTogether: the report shows at most maxExpects expects
// together, each workload past it saying how many more it has and how
// many of those did not hold, and the totals count them all (found in
// attack round 12, medium: 200,000 expects in a received results.json
// made `rlab report` take 10.7 s and 311 MB and write a 57 MB
// report.html). Here 20 workloads of 1,000: all 20,000 shown before.
func TestExpectsBoundedTogether(t *testing.T) {
	dir := t.TempDir()
	start := time.Date(2026, 11, 28, 4, 0, 0, 0, time.UTC)
	r := &results.Run{Schema: results.SchemaVersion, Lab: "expects", ID: "2026-11-28T040000Z", Started: start, Finished: start.Add(time.Minute), Status: results.RunFailed}
	const workloads, each = 20, 1000
	for w := range workloads {
		wl := results.Workload{Name: fmt.Sprintf("w%d", w), Tool: "exec", Status: results.StatusOK}
		for i := range each {
			wl.Expects = append(wl.Expects, results.Expect{Condition: fmt.Sprintf("bw_avg_gbps > %d", i), Held: i%2 == 0, Size: int64(i + 1)})
		}
		r.Workloads = append(r.Workloads, wl)
	}
	if err := results.WriteRun(dir, r); err != nil {
		t.Fatal(err)
	}
	d, err := Build(dir, Options{NoGraphviz: true})
	if err != nil {
		t.Fatal(err)
	}
	shown, more, moreFailed := 0, 0, 0
	for _, w := range d.Workloads {
		shown += len(w.Expects)
		more += w.ExpectsMore
		moreFailed += w.ExpectsMoreFailed
	}
	if shown > maxExpects || shown == workloads*each {
		t.Errorf("%d expects shown, want at most %d", shown, maxExpects)
	}
	if shown+more != workloads*each || moreFailed != more/2 {
		t.Errorf("%d shown and %d more (%d of them failed), want %d in all (half failed)", shown, more, moreFailed, workloads*each)
	}
	if got := d.Expects.Held + d.Expects.Failed; got != workloads*each || d.Expects.Failed != workloads*each/2 {
		t.Errorf("totals %+v, want all %d counted", d.Expects, workloads*each)
	}
	if len(d.Problems) > maxExpects+workloads {
		t.Errorf("%d problems listed, want at most %d", len(d.Problems), maxExpects+workloads)
	}
	var html strings.Builder
	if err := Write(&html, d); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("%d more expects not shown (%d did not hold)", each, each/2); !strings.Contains(html.String(), want) {
		t.Errorf("report.html does not say %q", want)
	}
}
