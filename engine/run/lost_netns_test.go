package run

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/engine/plan"
	"github.com/rlab-dev/rlab/engine/runstate"
	"github.com/rlab-dev/rlab/steps"
)

// TestNetnsServerLostEndsItsClient: the agent of a pair's server host dies
// (SIGKILL: its SSH session ends, as when a local VM's guest panics and
// takes qemu with it) while the client runs a command that would take
// minutes. The client's wait ends at once with the server host's loss: the
// workload fails (not timed out) naming host h0 and the lost agent, the
// run is infrastructure (exit 2), and it ends long before the workload's
// timeout (CI's failed stop 36 waited out 5 minutes for a client whose
// server VM was gone).
func TestNetnsServerLostEndsItsClient(t *testing.T) {
	_, hosts := netnsBed(t, 2)
	const timeout = 4 * time.Minute
	l := programLabWith(t, "lab \"lost\" {}\n"+hosts+`
program "pingpair" {
  source = "pingpair"
  build  = ["make", "server"]
}
workload "hang" {
  tool           = "program"
  program        = program.pingpair
  server         = host.h0
  client         = host.h1
  server_command = ["./server", "${self.port}", "-forever"]
  client_command = ["sh", "sleep.sh"]
  timeout        = "`+timeout.String()+`"
}
`, map[string]string{"sleep.sh": "echo waiting\nexec sleep 293\n"})
	t.Cleanup(func() {
		exec.Command("pkill", "-f", "^sleep 293$").Run()
		exec.Command("pkill", "-f", "/server [0-9]+ -forever").Run()
	})
	out := filepath.Join(t.TempDir(), "run")
	var once sync.Once
	var killed time.Time
	kill := func(e Event) {
		if e.Type != "step.start" || e.Workload != "hang" {
			return
		}
		once.Do(func() {
			go func() {
				// The client is under way once its sleep runs.
				for i := 0; i < 600 && exec.Command("pgrep", "-f", "^sleep 293$").Run() != nil; i++ {
					time.Sleep(100 * time.Millisecond)
				}
				b, err := os.ReadFile(filepath.Join(out, "state.json"))
				var st runstate.State
				if err == nil {
					err = json.Unmarshal(b, &st)
				}
				pid := 0
				for _, h := range st.Hosts {
					if h.Name == "h0" {
						pid = h.AgentPID
					}
				}
				if err != nil || pid <= 1 {
					t.Errorf("no agent pid of h0 in state.json (%v): %s", err, b)
					return
				}
				if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
					t.Errorf("kill h0's agent (pid %d): %v", pid, err)
				}
				killed = time.Now()
			}()
		})
	}
	start := time.Now()
	res := runPlanned(context.Background(), t, l, plan.Options{}, Options{Connector: sshConnector(t), Out: out, NoReport: true, OnEvent: kill})
	took := time.Since(start)
	if killed.IsZero() {
		t.Fatalf("h0's agent was not killed: code %d, %v", res.Code, res.Err)
	}
	t.Logf("agent killed %s after the start; the run ended %s later: %v", killed.Sub(start).Round(time.Second), time.Since(killed).Round(time.Second), res.Err)
	if took >= timeout {
		t.Errorf("the run took %s: the client's wait ran to the workload's timeout (%s)", took, timeout)
	}
	if res.Code != ExitInfra {
		t.Errorf("code %d (%v), want %d (infrastructure)", res.Code, res.Err, ExitInfra)
	}
	var o *steps.Outcome
	for _, x := range res.Outcomes {
		if x.Workload == "hang" {
			o = x
		}
	}
	if o == nil {
		t.Fatalf("no outcome of hang: %+v", res.Outcomes)
	}
	if o.Status != steps.StatusFailed || !strings.Contains(o.Error, `host "h0"`) || !strings.Contains(o.Error, "lost") {
		t.Errorf("hang: %s: %s; want failed, naming h0's lost agent", o.Status, o.Error)
	}
	if errors.Is(res.Err, steps.ErrTimedOut) {
		t.Errorf("the run's error is a timeout: %v", res.Err)
	}
}
