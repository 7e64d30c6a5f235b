package server

import (
	"slices"
	"testing"

	"github.com/rlab-dev/rlab/agent/tooldesc"
)

// TestProbesFollowDescriptor: the agent looks for exactly the programs of the
// tool descriptor and asks the versions it says how to ask.
func TestProbesFollowDescriptor(t *testing.T) {
	var want []string
	asks := map[string]bool{}
	for _, p := range tooldesc.Programs() {
		want = append(want, p.Name)
		if len(p.Version.Args) > 0 {
			asks[p.Name] = true
		}
	}
	if !slices.Equal(toolNames, want) {
		t.Errorf("toolNames = %v, want the descriptor's %v", toolNames, want)
	}
	for n, tv := range toolVersions {
		p, _ := tooldesc.ProgramByName(n)
		if !asks[n] || !slices.Equal(tv.args, p.Version.Args) {
			t.Errorf("toolVersions[%s] = %v, the descriptor says %v", n, tv.args, p.Version.Args)
		}
		delete(asks, n)
	}
	for n := range asks {
		t.Errorf("the descriptor says how to ask %s its version; the agent does not ask", n)
	}
}
