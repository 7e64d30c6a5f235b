package report

import (
	"testing"

	"github.com/rlab-dev/rlab/kinds"
)

// TestChartsFollowDescriptor: every tool has a chart family the report
// knows, RDMA or not as the descriptor says, and the families that draw
// charts explain them.
func TestChartsFollowDescriptor(t *testing.T) {
	for _, tl := range kinds.All() {
		if k := toolKind(tl.Name); k == "other" || k != tl.Chart {
			t.Errorf("%s: chart family %q, the descriptor says %q", tl.Name, k, tl.Chart)
		}
		if rdmaTool(tl.Name) != tl.RDMA {
			t.Errorf("%s: rdmaTool = %v, the descriptor says RDMA = %v", tl.Name, rdmaTool(tl.Name), tl.RDMA)
		}
	}
	for _, k := range []string{"bw", "lat", "pingpong"} {
		if hint(k) == "" {
			t.Errorf("chart family %s has no hint", k)
		}
	}
	if toolKind("no_such_tool") != "other" {
		t.Error("an unknown tool has a chart family")
	}
}
