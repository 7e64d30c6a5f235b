package run

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/engine/plan"
)

// TestAgentWatchdogNetns: the controller's network vanishes mid-run (the
// host's link blackholed: no FIN, no RST; real sshd keeps the session open
// for hours). The host's agent, hearing no ping for the run's
// --agent-watchdog limit, stops the run's workload, records it and exits;
// rlab down later lists the workload as already undone by the agent.
func TestAgentWatchdogNetns(t *testing.T) {
	bed, hosts := netnsBed(t, 1)
	h0 := bed.Host("h0")
	l := loadLab(t, `lab "watchdog" {}
`+hosts+`
workload "long" {
  tool = "exec"
  host = host.h0
  command = ["sleep", "600"]
}`)
	const limit = 3 * time.Second
	started := make(chan struct{})
	var once sync.Once
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := filepath.Join(t.TempDir(), "run")
	p, conn := planned(t, l, plan.Options{}), sshConnector(t)
	done := make(chan *Result, 1)
	go func() {
		done <- Run(ctx, l, Options{Plan: p, Connector: conn, Out: dir, AgentWatchdog: limit, NoReport: true,
			TeardownTimeout: 5 * time.Second, OnEvent: func(e Event) {
				if e.Type == "step.start" && e.Workload == "long" {
					once.Do(func() { close(started) })
				}
			}})
	}()
	select {
	case <-started:
	case r := <-done:
		t.Fatalf("run ended before its workload started: code %d: %v", r.Code, r.Err)
	case <-time.After(2 * time.Minute):
		t.Fatal("workload not started within 2 minutes")
	}
	running := func() (agent, sleep bool) {
		for _, cmd := range bed.Pids(t, h0) {
			agent = agent || strings.Contains(cmd, "rlab-agent serve")
			sleep = sleep || cmd == "sleep 600"
		}
		return
	}
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if a, s := running(); a && s {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("agent and workload not both running on h0: %v", bed.Pids(t, h0))
		}
	}
	// Quiet for several limits while connected: the pings keep the agent.
	time.Sleep(2 * limit)
	if a, s := running(); !a || !s {
		t.Fatalf("agent %v, workload %v after %s connected: the controller's pings should keep them", a, s, 2*limit)
	}
	restore := bed.Blackhole(t, h0)
	gone := time.Now()
	for ; ; time.Sleep(100 * time.Millisecond) {
		a, s := running()
		if !a && !s {
			break
		}
		if time.Since(gone) > limit+20*time.Second {
			t.Fatalf("%s after the controller's network vanished (watchdog %s): agent %v, workload %v still running; sessions: %v", time.Since(gone), limit, a, s, bed.Pids(t, h0))
		}
	}
	// The agent counts from the last ping it read, at most limit/6 before.
	if d := time.Since(gone); d < limit-limit/6-100*time.Millisecond {
		t.Errorf("the agent ended %s after its controller vanished, before its %s limit", d, limit)
	}
	st := readState(t, dir)
	var wd string
	for _, h := range st.Hosts {
		if h.Name == "h0" {
			wd = h.WorkDir
		}
	}
	b, err := os.ReadFile(filepath.Join(wd, proto.WatchdogFile))
	if err != nil {
		t.Fatalf("the agent's record: %v", err)
	}
	var rec proto.WatchdogRecord
	if err := json.Unmarshal(b, &rec); err != nil || len(rec.Undone.Stopped) == 0 {
		t.Fatalf("the agent's record %s: %v", b, err)
	}
	cancel()
	r := <-done
	if r.Code == ExitOK {
		t.Errorf("the run with a lost host exited 0")
	}
	restore()
	res, err := Down(context.Background(), dir, DownOptions{Connector: sshConnector(t)})
	if err != nil {
		t.Fatalf("down: %v (%v)", err, res)
	}
	found := false
	for _, u := range res.Undone {
		if strings.HasPrefix(u, "h0: proc ") && strings.Contains(u, "already undone by the run's agent") {
			found = true
		}
	}
	t.Logf("down: %q", res.Undone)
	if !found {
		t.Errorf("down listed %q, want h0's workload as already undone by the run's agent", res.Undone)
	}
}
