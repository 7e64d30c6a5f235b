package run

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlab-dev/rlab/agent/dist"
	"github.com/rlab-dev/rlab/engine/plan"
	"github.com/rlab-dev/rlab/engine/runstate"
	"github.com/rlab-dev/rlab/engine/testbed"
)

// TestDownThroughJumpNetns: `rlab down` reaches a host behind a two-hop
// jump string (real OpenSSH: bastion, then bastion2, then the host) from
// state.json alone: through the hops the plan resolved, recorded as such
// (no string to parse again), and, for a state.json an older rlab wrote,
// through its jump string.
func TestDownThroughJumpNetns(t *testing.T) {
	if _, err := dist.Binary("linux", "amd64"); err != nil {
		if ok, _ := testbed.Enabled(); ok {
			t.Fatalf("agent not embedded (make agent): %v", err)
		}
		t.Skip("agent not embedded")
	}
	t.Setenv("XDG_CONFIG_HOME", t.TempDir()) // the state key of this test alone
	bed := testbed.Start(t, testbed.Options{BehindBastion2: 1, LogLevel: "INFO"})
	c0 := bed.Hosts[len(bed.Hosts)-1]
	jump := fmt.Sprintf("%s@%s:22,%s@%s:22", bed.User, bed.Bastion.Addr, bed.User, bed.Bastion2.Addr)
	l := loadLab(t, fmt.Sprintf(`lab "jump-down" {}
host "c0" {
  address       = %q
  user          = %q
  identity_file = %q
  known_hosts   = %q
  jump          = %q
}
workload "out" {
  tool    = "exec"
  host    = host.c0
  command = ["sh", "-c", "echo left > left.txt"]
}
`, c0.Addr, bed.User, bed.KeyFile, bed.KnownHosts, jump))
	wantHops := []plan.Hop{{User: bed.User, Address: bed.Bastion.Addr, Port: 22}, {User: bed.User, Address: bed.Bastion2.Addr, Port: 22}}

	for _, tt := range []struct {
		name  string
		older bool // rewritten as an older rlab wrote it: the jump string, no hops
	}{{"hops recorded", false}, {"older state.json: jump string", true}} {
		t.Run(tt.name, func(t *testing.T) {
			// --keep leaves the host's work dir: down must log in to remove it.
			res := runPlanned(context.Background(), t, l, plan.Options{}, Options{Connector: sshConnector(t), Out: filepath.Join(t.TempDir(), "run"), Keep: true, NoReport: true})
			if res.Code != ExitOK {
				t.Fatalf("code %d: %v", res.Code, res.Err)
			}
			st := readState(t, res.Dir)
			h := st.Hosts[0]
			if d := cmp.Diff(wantHops, h.Hops); d != "" || h.Jump != "" {
				t.Fatalf("state.json's c0: jump %q, hops (-want +got):\n%s", h.Jump, d)
			}
			if !workDirLeft(h) {
				t.Fatalf("--keep left no work dir to remove: %+v", h)
			}
			if tt.older {
				resignState(t, res.Dir, func(s *runstate.State) { s.Hosts[0].Hops, s.Hosts[0].Jump = nil, jump })
			}
			b1, b2 := bed.Logins(t, bed.Bastion), bed.Logins(t, bed.Bastion2)
			down, err := Down(context.Background(), res.Dir, DownOptions{Connector: sshConnector(t)})
			if err != nil {
				t.Fatalf("down: %v", err)
			}
			got := strings.Join(down.Undone, "\n")
			if !strings.Contains(got, "c0: work dir "+h.WorkDir+" (") {
				t.Errorf("down did not remove c0's work dir %s:\n%s", h.WorkDir, got)
			}
			if _, err := os.Stat(h.WorkDir); !os.IsNotExist(err) {
				t.Errorf("after down, c0's work dir %s: %v", h.WorkDir, err)
			}
			if bed.Logins(t, bed.Bastion) == b1 || bed.Logins(t, bed.Bastion2) == b2 {
				t.Error("down reached c0 without logging in to both bastions")
			}
		})
	}
}

// resignState edits a run's state.json and signs it again with this
// user's key, as the rlab that wrote it would have.
func resignState(t *testing.T, dir string, f func(*runstate.State)) {
	t.Helper()
	if runstate.ReadKey() == nil {
		t.Fatal("no state key")
	}
	var st runstate.State
	editState(t, dir, func(s *runstate.State) { f(s); st = *s })
	// Create signs it as a run's journal does (paths, then the whole file).
	if _, err := runstate.Create(dir, st); err != nil {
		t.Fatal(err)
	}
}
