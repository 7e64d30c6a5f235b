package report

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rlab-dev/rlab/engine/results"
	"github.com/rlab-dev/rlab/kinds"
	"github.com/rlab-dev/rlab/kinds/madeup"
)

// flavorShows is what the report shows of each tool flavor, written out by
// hand from the report people read (testdata/report/run's report.html),
// not from the descriptor: the chart family that picks its hint, whether
// it runs over RDMA, the charts a workload gets when every metric of its
// tool has values at two sizes, and its side in RDMA vs TCP and the loss
// sweep.
var flavorShows = map[kinds.Flavor]struct {
	kind   string
	rdma   bool
	charts []string
	side   string // "RDMA", "TCP", or "" for neither
}{
	kinds.Flavor("perftest_bw"):  {"bw", true, []string{"Bandwidth vs message size", "Message rate vs message size"}, "RDMA"},
	kinds.Flavor("perftest_lat"): {"lat", true, []string{"Latency percentiles by message size"}, ""},
	kinds.Flavor("pingpong"):     {"pingpong", true, []string{"Pingpong throughput vs message size"}, ""},
	kinds.Flavor("rping"):        {"rping", true, nil, ""},
	kinds.Flavor("tcp"):          {"tcp", false, nil, "TCP"},
	kinds.Flavor("exec"):         {"exec", false, nil, ""},
	kinds.Flavor("program"):      {"exec", false, nil, ""},                                              // its output and its metric blocks, as exec
	madeup.Flavor:                {"made", true, []string{"Made-up throughput and round trip"}, "RDMA"}, // kinds/madeup, registered by TestMain
	madeup.PipeFlavor:            {"made_pipe", false, nil, "TCP"},
}

// TestChartsFollowDescriptor: every tool's report (chart family, RDMA or
// not, its charts, its side in RDMA vs TCP) is what flavorShows says, and
// the families that draw charts explain them.
func TestChartsFollowDescriptor(t *testing.T) {
	for _, tl := range kinds.All() {
		want, ok := flavorShows[tl.Flavor]
		if !ok {
			t.Errorf("%s: flavor %s is not in flavorShows: say what the report shows of it", tl.Name, tl.Flavor)
			continue
		}
		if k := chartFamily(tl.Name); k != want.kind {
			t.Errorf("%s: chart family %q, want %q", tl.Name, k, want.kind)
		}
		if rdmaTool(tl.Name) != want.rdma {
			t.Errorf("%s: rdmaTool = %v, want %v", tl.Name, rdmaTool(tl.Name), want.rdma)
		}
		var ss []results.Sample
		for _, m := range kinds.MetricsOf(tl.Name) {
			for _, size := range []int64{64, 4096} {
				ss = append(ss, results.Sample{Metric: m, Value: 1, Unit: "x", Meta: results.Meta{Workload: "w", Tool: tl.Name, Size: size}})
			}
		}
		var got []string
		for _, c := range workloadCharts("w0", results.Measures(ss)) {
			got = append(got, c.Title)
		}
		if diff := cmp.Diff(want.charts, got); diff != "" {
			t.Errorf("%s: charts (-want +got):\n%s", tl.Name, diff)
		}
		side := ""
		if thr, overRDMA := throughputOf(tl.Name); thr != "" {
			side = map[bool]string{true: "RDMA", false: "TCP"}[overRDMA]
		}
		if side != want.side {
			t.Errorf("%s: side in RDMA vs TCP %q, want %q", tl.Name, side, want.side)
		}
	}
	for _, k := range []string{"bw", "lat", "pingpong"} {
		if hint(k) == "" {
			t.Errorf("chart family %s has no hint", k)
		}
	}
	if chartFamily("no_such_tool") != "other" {
		t.Error("an unknown tool has a chart family")
	}
}
