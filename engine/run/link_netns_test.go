package run

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/engine/plan"
	"github.com/rlab-dev/rlab/steps"
)

// TestNetnsDataLinkDown cuts the data link between two netns hosts while a
// long tcp workload runs on it (a blackhole route to the server in the
// client's namespace: SSH from the controller to both still works, as with
// a VM whose data NIC died). The run must stop that workload long before
// its own end, name the link (`data link h0 ↔ h1 on eth0 down`), call it
// infrastructure (exit 2), and skip the pair's next workload with that
// reason rather than let it hang in turn. A workload on another pair is
// not touched.
func TestNetnsDataLinkDown(t *testing.T) {
	bed, hosts := netnsBed(t, 3)
	const long = 120 * time.Second
	l := loadLab(t, `lab "netns" {}
`+hosts+`
workload "bulk" {
  tool     = "tcp"
  server   = host.h0
  client   = host.h1
  duration = "`+long.String()+`"
}
workload "after" {
  tool   = "tcp"
  server = host.h0
  client = host.h1
  bytes  = "1MiB"
}
workload "other" {
  tool   = "tcp"
  server = host.h2
  client = host.h1
  bytes  = "1MiB"
}
`)
	var once sync.Once
	var cut time.Time
	cutLink := func(e Event) {
		if e.Type != "step.start" || e.Workload != "bulk" {
			return
		}
		once.Do(func() {
			go func() {
				time.Sleep(2 * time.Second) // the transfer is under way
				out, err := exec.Command("ip", "-n", bed.Hosts[1].NS, "route", "add", "blackhole", bed.Hosts[0].Addr+"/32").CombinedOutput()
				if err != nil {
					t.Errorf("cut the link: %v: %s", err, out)
				}
				cut = time.Now()
			}()
		})
	}
	t.Cleanup(func() {
		exec.Command("ip", "-n", bed.Hosts[1].NS, "route", "del", "blackhole", bed.Hosts[0].Addr+"/32").Run()
	})
	var notices []string
	var mu sync.Mutex
	start := time.Now()
	res := runPlanned(context.Background(), t, l, plan.Options{}, Options{Connector: sshConnector(t), Out: filepath.Join(t.TempDir(), "run"), NoReport: true,
		OnEvent: func(e Event) {
			cutLink(e)
			if e.Type == EventNotice {
				mu.Lock()
				notices = append(notices, e.Message)
				mu.Unlock()
			}
		}})
	took := time.Since(start)
	const name = "data link h0 ↔ h1 on eth0 down"
	if res.Code != ExitInfra || res.Err == nil || !strings.Contains(res.Err.Error(), name) {
		t.Fatalf("code %d, err %v; want %d naming %q", res.Code, res.Err, ExitInfra, name)
	}
	if took >= long {
		t.Errorf("the run took %s: it waited for the workload's own end (%s), not for the link check", took, long)
	}
	t.Logf("link cut %s after the start; the run ended %s later", cut.Sub(start).Round(time.Second), time.Since(cut).Round(time.Second))
	st := map[string]*steps.Outcome{}
	for _, o := range res.Outcomes {
		st[o.Workload] = o
	}
	if o := st["bulk"]; o == nil || o.Status != steps.StatusFailed || !strings.Contains(o.Error, name) {
		t.Errorf("bulk: %+v, want failed naming the link", o)
	}
	if o := st["after"]; o == nil || o.Status != steps.StatusSkipped || !strings.Contains(o.Error, name) {
		t.Errorf("after: %+v, want skipped naming the link", o)
	}
	if o := st["other"]; o == nil || o.Status != steps.StatusOK {
		t.Errorf("other (h2 ↔ h1, not cut): %+v, want ok", o)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(notices) == 0 || !strings.Contains(strings.Join(notices, "\n"), name) {
		t.Errorf("notices %q: want the link named at once", notices)
	}
}
