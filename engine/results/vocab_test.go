package results

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rlab-dev/rlab/kinds"
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

// TestCounterVocabulary: no kernel counter shares a name with a tool's
// metric or an older expect name (results.json would mix them), every one
// has a unit, a kind and a doc, and the tools read the counters their
// devices have: RDMA tools all, tcp the netdev statistics, exec none.
func TestCounterVocabulary(t *testing.T) {
	for _, c := range Counters {
		if _, ok := kinds.MetricByName(c.Name); ok {
			t.Errorf("counter %s is also a tool metric", c.Name)
		}
		if _, _, ok := kinds.MetricByAlias(c.Name); ok {
			t.Errorf("counter %s is also an older expect name", c.Name)
		}
		if c.Unit == "" || c.Doc == "" || c.Devices == "" || (c.Class != CounterTraffic && c.Class != CounterTrouble) {
			t.Errorf("counter %+v incomplete", c)
		}
		if m, ok := MetricByName(c.Name); !ok || m.HigherIsBetter || m.Unit != c.Unit {
			t.Errorf("MetricByName(%s) = %+v, %v", c.Name, m, ok)
		}
	}
	has := func(tool, name string) bool { return slices.Contains(ToolMetrics(tool), name) }
	for _, tc := range []struct {
		tool, name string
		want       bool
	}{
		{"ib_write_bw", "rcvd_seq_err", true},
		{"ib_write_bw", "tx_packets", true},
		{"ibv_rc_pingpong", "out_of_sequence", true},
		{"tcp", "tx_packets", true},
		{"tcp", "rcvd_seq_err", false},
		{"exec", "tx_packets", false},
	} {
		if got := has(tc.tool, tc.name); got != tc.want {
			t.Errorf("%s reads %s: %v, want %v", tc.tool, tc.name, got, tc.want)
		}
	}
	for _, tc := range []struct{ name, unit string }{
		{"sent_pkts", "packets"}, {"rx_bytes", "bytes"}, {"rcvd_seq_err", "count"},
		{"roce_adp_retrans", "count"}, {"rdma_tx_bytes", "bytes"}, {"cc_rx_cnp_pkts", "packets"},
	} {
		if got := CounterUnit(tc.name); got != tc.unit {
			t.Errorf("CounterUnit(%s) = %q, want %q", tc.name, got, tc.unit)
		}
	}
}
