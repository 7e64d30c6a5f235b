package run

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/engine/results"
	"github.com/rlab-dev/rlab/kinds"
)

// TestOneMetricVocabulary: the names an expect reads are the names of
// results.json (and so of summary.md, the report and compare): for every
// tool, result.* is exactly its metrics plus size and repeat.
func TestOneMetricVocabulary(t *testing.T) {
	for _, tool := range kinds.Names() {
		attrs := lab.ResultAttrs(tool)
		want := append(results.ToolMetrics(tool), "size", "repeat")
		if !slices.Equal(attrs, want) {
			t.Errorf("%s: expect reads %v, results.json records %v", tool, attrs, want)
		}
	}
}

// TestRunExpectNames: a run of tcp writes tcp_bw only (one quantity, one
// metric), and its expects hold by the metric's name and by the older names
// (tcp_gbps, and tcp_mibps in MiB/s), which read the same number.
func TestRunExpectNames(t *testing.T) {
	res, _ := runLab(t, twoHosts+`
workload "bulk" {
  tool   = "tcp"
  server = host.a
  client = host.b
  bytes  = "8MiB"
  expect {
    condition = result.tcp_bw > 0
  }
  expect {
    condition = result.tcp_gbps == result.tcp_bw
  }
  expect {
    condition = result.tcp_mibps > 0
  }
}
`, Options{})
	if res.Code != ExitOK {
		t.Fatalf("code %d, err %v", res.Code, res.Err)
	}
	r := readRun(t, res.Dir)
	var names []string
	var gbps float64
	for _, s := range r.Samples {
		if results.IsCounter(s) {
			continue // the kernel's counters around it (counters_test.go)
		}
		if !slices.Contains(names, s.Metric) {
			names = append(names, s.Metric)
		}
		if s.Metric == "tcp_bw" {
			gbps = s.Value
		}
	}
	if !slices.Equal(names, []string{"tcp_bw", "exit_code", "duration"}) {
		t.Errorf("results.json metrics = %v, want tcp_bw, exit_code, duration", names)
	}
	w := r.Workloads[0]
	if len(w.Expects) != 3 {
		t.Fatalf("expects = %+v", w.Expects)
	}
	for _, e := range w.Expects {
		if !e.Held || e.Value == nil {
			t.Errorf("expect %q: held %v, value %v", e.Condition, e.Held, e.Value)
		}
	}
	got := *w.Expects[2].Value
	mib := gbps * 1e9 / 8 / (1 << 20)
	v, err := strconv.ParseFloat(strings.TrimPrefix(got, "tcp_mibps = "), 64)
	if err != nil || mib == 0 || math.Abs(v-mib)/mib > 0.01 {
		t.Errorf("tcp_mibps expect read %q; tcp_bw %g Gb/s is %g MiB/s", got, gbps, mib)
	}
}
