package results

import (
	"fmt"
	"strings"
	"testing"
)

// TestSummaryPivotBounded: summary.md's tables pivot values by size and
// metric (a workload's section) and by workload and metric (a tool's table
// from 16 workloads); a received results.json whose samples each have a
// metric of their own cannot make them n squared cells, and a run's filled
// sweep is pivoted as before (round 9's attack).
func TestSummaryPivotBounded(t *testing.T) {
	sample := func(wl, metric string, size int64) Sample {
		return Sample{Metric: metric, Value: 1.5, Unit: "Gb/s", Meta: Meta{Workload: wl, Tool: "ib_write_bw", Size: size, Hosts: []string{"a", "b"}}}
	}
	wl := func(name string) Workload {
		return Workload{Name: name, Tool: "ib_write_bw", Status: StatusOK, Hosts: []string{"a", "b"}}
	}
	sizes := &Run{Lab: "x", Workloads: []Workload{wl("w")}}
	for i := range 3000 {
		sizes.Samples = append(sizes.Samples, sample("w", fmt.Sprintf("m%d", i), int64(i+1)))
	}
	workloads := &Run{Lab: "x"}
	for i := range 3000 {
		name := fmt.Sprintf("w%d", i)
		workloads.Workloads = append(workloads.Workloads, wl(name))
		workloads.Samples = append(workloads.Samples, sample(name, fmt.Sprintf("m%d", i), 4096))
	}
	sweep := &Run{Lab: "x"}
	for i := range 20 {
		name := fmt.Sprintf("w%d", i)
		sweep.Workloads = append(sweep.Workloads, wl(name))
		for _, size := range []int64{4096, 65536} {
			sweep.Samples = append(sweep.Samples, sample(name, "bw_avg", size), sample(name, "bw_peak", size))
		}
	}
	small := &Run{Lab: "x", Workloads: []Workload{wl("w")}, Samples: append([]Sample(nil), sweep.Samples[:4]...)}
	for i := range small.Samples {
		small.Samples[i].Meta.Workload = "w"
	}
	for _, tc := range []struct {
		name    string
		run     *Run
		pivoted string // a header every pivoted table has
		values  int    // values shown at least
	}{
		{"a metric and a size a sample", sizes, "", 3000},
		{"a metric a workload", workloads, "", 3000},
		// The compact table shows the largest size.
		{"a filled sweep, compact", sweep, "| bw_peak | bw_avg |", 40},
		{"a filled sweep, one workload", small, "| bw_peak (Gb/s) | bw_avg (Gb/s) |", 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			md := Summary(tc.run, "")
			if most := 200*len(tc.run.Samples) + 64<<10; len(md) > most {
				t.Fatalf("%d samples made %d bytes of summary, want at most %d", len(tc.run.Samples), len(md), most)
			}
			if tc.pivoted != "" && !strings.Contains(string(md), tc.pivoted) {
				t.Errorf("summary has no %q:\n%s", tc.pivoted, md)
			}
			// Every value is still shown.
			if got := strings.Count(string(md), "1.5"); got < tc.values {
				t.Errorf("%d values shown, want %d:\n%.2000s", got, tc.values, md)
			}
		})
	}
}

// TestSummaryWorkloadNamedAgain: a received results.json that names one
// workload again and again cannot make summary.md list all its figures once
// a name (20,000 names over 500,000 samples were 10^10), nor walk every
// sample once a workload for its counters (round 9's attack).
func TestSummaryWorkloadNamedAgain(t *testing.T) {
	r := &Run{Lab: "x"}
	for range 2000 {
		r.Workloads = append(r.Workloads, Workload{Name: "w", Tool: "ib_write_bw", Status: StatusOK})
	}
	for i := range 2000 {
		r.Samples = append(r.Samples, Sample{Metric: fmt.Sprintf("m%d", i), Value: 1.5, Unit: "Gb/s", Meta: Meta{Workload: "w", Tool: "ib_write_bw", Size: 4096}})
	}
	md := Summary(r, "")
	if most := 200*len(r.Samples) + 64<<10; len(md) > most {
		t.Fatalf("one workload named 2,000 times over 2,000 samples: %d bytes of summary, want at most %d", len(md), most)
	}
	if got := strings.Count(string(md), "| w |"); got != 1 {
		t.Errorf("workload w has %d rows, want 1", got)
	}
}

// TestSummaryTablesBoundedTogether: the cells summary.md's tables hold past
// four a value are the summary's, shared by its tables in order, as the
// report's are (SECURITY 164): per table, many tables of 100 values each
// with a metric and a size of their own (a workload's host pairs, or a
// compact table per tool) were 10,000 cells each, and 500,000 samples made
// rlab show take 72 s and 2 GB for 309 MB of text.
func TestSummaryTablesBoundedTogether(t *testing.T) {
	const each = 100
	sections := &Run{Lab: "x"} // under compactAt: a section per workload
	for w := range 15 {
		name := fmt.Sprintf("w%d", w)
		sections.Workloads = append(sections.Workloads, Workload{Name: name, Tool: "ib_write_bw", Status: StatusOK})
		for g := range 8 {
			for i := range each {
				sections.Samples = append(sections.Samples, Sample{Metric: fmt.Sprintf("m%d", i), Value: 1.5, Unit: "Gb/s",
					Meta: Meta{Workload: name, Tool: "ib_write_bw", Size: int64(i + 1), Hosts: []string{"a", fmt.Sprintf("b%d", g)}}})
			}
		}
	}
	tools := &Run{Lab: "x"} // compact: a table per tool
	for tl := range 50 {
		tool := fmt.Sprintf("tool%d", tl)
		for i := range each {
			name := fmt.Sprintf("w%d.%d", tl, i)
			tools.Workloads = append(tools.Workloads, Workload{Name: name, Tool: tool, Status: StatusOK})
			tools.Samples = append(tools.Samples, Sample{Metric: fmt.Sprintf("m%d", i), Value: 1.5, Unit: "Gb/s", Meta: Meta{Workload: name, Tool: tool, Size: 4096}})
		}
	}
	for _, tc := range []struct {
		name string
		run  *Run
	}{
		{"host pairs of 15 workloads", sections},
		{"50 tools of 100 workloads", tools},
	} {
		t.Run(tc.name, func(t *testing.T) {
			md := Summary(tc.run, "")
			// A cell is a '|' (and the row's last); a row of a list or of
			// a table per tool is under 10.
			if cells, most := strings.Count(string(md), "|"), 10*len(tc.run.Samples)+MaxPivotSlack; cells > most {
				t.Fatalf("%d samples made %d cells of summary, want at most %d", len(tc.run.Samples), cells, most)
			}
			if got := strings.Count(string(md), "1.5"); got < len(tc.run.Samples) {
				t.Errorf("%d values shown, want %d", got, len(tc.run.Samples))
			}
		})
	}
}
