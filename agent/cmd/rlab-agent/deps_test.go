package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestAgentImportsNoKinds: the agent binary is built from nothing of kinds/
// (descriptors, hints, charts, expect aliases, the families' steps and
// parsers), so editing a tool's descriptor leaves the agent's sha256 as it
// is and nothing is re-shipped to the hosts. What to probe comes in the
// facts request (proto.FactsParams.Probe).
func TestAgentImportsNoKinds(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps listed %d packages: %q", len(deps), deps)
	}
	var agentPkgs int
	for _, d := range deps {
		if d == "github.com/rlab-dev/rlab/kinds" || strings.HasPrefix(d, "github.com/rlab-dev/rlab/kinds/") {
			t.Errorf("the agent depends on %s", d)
		}
		if strings.HasPrefix(d, "github.com/rlab-dev/rlab/agent/") {
			agentPkgs++
		}
	}
	if agentPkgs == 0 {
		t.Errorf("no agent package among the dependencies: %q", deps)
	}
}
