package steps

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/engine/results"
	"github.com/rlab-dev/rlab/kinds"
)

// TestOutputSamples: metric blocks read stdout and stderr; a count is in
// lines, a value in the block's unit with its direction kept; a pattern
// that matched nothing is an error naming it while the others' samples stay.
func TestOutputSamples(t *testing.T) {
	r := &proto.ProcResult{Stdout: "RDMA_WRITE complete\nwrote in 2.0 s (24.85 MiB/s)\n", Stderr: "RDMA_WRITE complete\n"}
	ms := []kinds.OutputMetric{
		{Name: "writes", Pattern: "RDMA_WRITE complete"},
		{Name: "mibps", Pattern: `\((?P<value>[0-9.]+) MiB/s\)`, Unit: "MiB/s", Better: "higher"},
		{Name: "reads", Pattern: "RDMA_READ complete"},
	}
	ss, err := OutputSamples(ms, r)
	want := []results.Sample{
		{Metric: "writes", Value: 2, Unit: "lines"},
		{Metric: "mibps", Value: 24.85, Unit: "MiB/s", Meta: results.Meta{Extra: map[string]string{BetterExtra: "higher"}}},
	}
	if d := cmp.Diff(want, ss); d != "" {
		t.Errorf("samples (-want +got):\n%s", d)
	}
	if err == nil || !strings.Contains(err.Error(), `metric "reads": pattern "RDMA_READ complete" matched no line of the output`) {
		t.Errorf("err = %v", err)
	}
}
