package results

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestResolveMetric: a metric name is itself; an older expect name is its
// metric (old = true); anything else is unknown.
func TestResolveMetric(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		old, ok  bool
	}{
		{"bw_avg", "bw_avg", false, true},
		{"bw_avg_gbps", "bw_avg", true, true},
		{"tcp_gbps", "tcp_bw", true, true},
		{"tcp_mibps", "tcp_bw", true, true},
		{"lat_p99_us", "lat_p99", true, true},
		{"tcp_bw_mib", "", false, false}, // retired: no longer a metric
		{"speed", "", false, false},
	} {
		m, old, ok := ResolveMetric(tc.in)
		if m.Name != tc.want || old != tc.old || ok != tc.ok {
			t.Errorf("ResolveMetric(%q) = %q, old %v, ok %v; want %q, %v, %v", tc.in, m.Name, old, ok, tc.want, tc.old, tc.ok)
		}
	}
}

// TestDropRetired: the MiB/s copy of TCP throughput older runs recorded is
// dropped on reading, so compare and summaries count the quantity once.
func TestDropRetired(t *testing.T) {
	in := []Sample{{Metric: "tcp_bw", Value: 0.42, Unit: "Gb/s"}, {Metric: "tcp_bw_mib", Value: 50.07, Unit: "MiB/s"}, {Metric: "duration", Value: 1, Unit: "s"}}
	got := DropRetired(in)
	if diff := cmp.Diff([]Sample{in[0], in[2]}, got); diff != "" {
		t.Errorf("DropRetired (-want +got):\n%s", diff)
	}
	r, err := ReadRun("../../testdata/runs/nightly/2026-11-20T020000Z")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range r.Samples {
		if s.Metric == "tcp_bw_mib" {
			t.Fatalf("ReadRun kept a retired tcp_bw_mib sample: %+v", s)
		}
	}
}

// TestEveryToolMetricKnown: every metric a tool records is in the
// vocabulary, once.
func TestEveryToolMetricKnown(t *testing.T) {
	for _, tool := range []string{"ib_write_bw", "ib_read_lat", "ibv_rc_pingpong", "rping", "tcp", "exec"} {
		seen := map[string]bool{}
		for _, n := range ToolMetrics(tool) {
			if _, ok := MetricByName(n); !ok || seen[n] {
				t.Errorf("%s: metric %q unknown or listed twice", tool, n)
			}
			seen[n] = true
		}
	}
}
