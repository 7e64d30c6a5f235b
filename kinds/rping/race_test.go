package rping

import (
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/agent/proto"
)

// TestTeardownRace: an rping client's exit 255 is taken as a clean end only
// for rping's own teardown race after every ping-pong asked for (as CI saw
// under TCG: 100 ping-pongs, the disconnect, then "rdma_get_cm_event: Bad
// file descriptor"); any other failure stays one.
func TestTeardownRace(t *testing.T) {
	pings := func(n int) string {
		return strings.Repeat("ping data: rdma-ping-0: ABCDEFGHIJKLMNOPQRSTUVWXYZ\n", n)
	}
	for _, tc := range []struct {
		name     string
		res      proto.ProcResult
		harmless bool
	}{
		{"the race after all pings", proto.ProcResult{ExitCode: 255, Stdout: pings(100) + "client DISCONNECT EVENT...\n", Stderr: "rdma_get_cm_event: Bad file descriptor\n"}, true},
		{"too few pings", proto.ProcResult{ExitCode: 255, Stdout: pings(99) + "client DISCONNECT EVENT...\n", Stderr: "rdma_get_cm_event: Bad file descriptor\n"}, false},
		{"another exit code", proto.ProcResult{ExitCode: 1, Stdout: pings(100) + "client DISCONNECT EVENT...\n", Stderr: "rdma_get_cm_event: Bad file descriptor\n"}, false},
		{"no disconnect", proto.ProcResult{ExitCode: 255, Stdout: pings(100), Stderr: "rdma_get_cm_event: Bad file descriptor\n"}, false},
		{"a real error too", proto.ProcResult{ExitCode: 255, Stdout: pings(100) + "client DISCONNECT EVENT...\n", Stderr: "cq completion failed status 5\nrdma_get_cm_event: Bad file descriptor\n"}, false},
		{"another failure", proto.ProcResult{ExitCode: 255, Stderr: "rdma_resolve_addr: No such device\n"}, false},
	} {
		if got := teardownRace(&tc.res, 100); (got != "") != tc.harmless {
			t.Errorf("%s: %q, want harmless %v", tc.name, got, tc.harmless)
		}
	}
}
