package remote_test

import (
	"os"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/engine/remote"
	"github.com/rlab-dev/rlab/kinds"
	"github.com/rlab-dev/rlab/kinds/builtin"
)

func TestMain(m *testing.M) {
	builtin.Register() // FactsParams sends the families' programs
	os.Exit(m.Run())
}

// TestFactsParamsProbeEveryProgram: the facts request names every program
// of the registered families (perftest's, pingpong's, rping's) after the
// helpers, and the helpers are exactly the agent's default list, so a
// request without the list (an older controller) still finds them.
func TestFactsParamsProbeEveryProgram(t *testing.T) {
	p := remote.FactsParams(true, nil)
	if !p.Refresh {
		t.Error("Refresh lost")
	}
	var names []string
	for _, pr := range p.Probe {
		names = append(names, pr.Name)
	}
	var want []string
	for _, prog := range kinds.Programs() {
		want = append(want, prog.Name)
	}
	if d := cmp.Diff(want, names); d != "" {
		t.Errorf("probe names (-kinds.Programs +sent):\n%s", d)
	}
	for _, n := range []string{"ib_write_bw", "ibv_rc_pingpong", "rping"} {
		if !slices.Contains(names, n) {
			t.Errorf("%s is not probed", n)
		}
	}
	if len(p.Probe) < len(proto.DefaultProbes) {
		t.Fatalf("%d probes, fewer than the agent's %d defaults", len(p.Probe), len(proto.DefaultProbes))
	}
	if d := cmp.Diff(proto.DefaultProbes, p.Probe[:len(proto.DefaultProbes)]); d != "" {
		t.Errorf("the agent's default probes are not kinds' helpers (-agent +kinds):\n%s", d)
	}
}
