package run

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc"
	"github.com/rlab-dev/rlab/agent/rpc/rpctest"
	"github.com/rlab-dev/rlab/engine/plan"
	"github.com/rlab-dev/rlab/engine/results"
)

// runStuck runs src with host stuck's agent lying as lie, every client
// with short deadlines, and returns when the run ends (bounded: a run that
// hangs fails the test instead of the suite).
func runStuck(t *testing.T, src string, stuck string, lie rpctest.Lie) (*Result, *pipeBed) {
	t.Helper()
	bed := newPipeBed(t)
	bed.lie = map[string]rpctest.Lie{stuck: lie}
	// Short deadlines for the stuck host only, but not so short that its
	// honest answers miss them on a loaded machine; the others keep the
	// defaults.
	bed.client = map[string]rpc.Options{stuck: {Timeout: 3 * time.Second, Heartbeat: 50 * time.Millisecond}}
	l := loadLab(t, src)
	p, out := planned(t, l, plan.Options{}), filepath.Join(t.TempDir(), "run")
	done := make(chan *Result, 1)
	go func() {
		// StopTimeout: the stop of a timed-out workload and its dmesg
		// wait for the stuck host that long (40 s and 20 s by default).
		done <- Run(context.Background(), l, Options{Plan: p, Connector: bed, NoReport: true, Out: out, TeardownTimeout: 10 * time.Second, StopTimeout: 5 * time.Second})
	}()
	select {
	case res := <-done:
		return res, bed
	case <-time.After(2 * time.Minute): // liveness bound, not a timing assertion
		t.Fatal("the run did not end by itself with a stuck host")
	}
	return nil, nil
}

const stuckLab = `
lab "stuck" {}
host "h1" { address = "127.0.0.1" }
host "h2" { address = "127.0.0.1" }
workload "on_h1" {
  tool    = "exec"
  host    = host.h1
  command = ["echo", "h1 output"]
  timeout = "2s"
}
workload "on_h2" {
  tool    = "exec"
  host    = host.h2
  command = ["echo", "h2 output"]
}
`

// TestStuckHostAbandoned: a host whose agent never answers one kind of
// call, or streams events for it forever instead, is abandoned with an
// error naming it, the call and the deadline; the run ends by itself with
// exit 2; the other host's workload ran and its results and logs are kept.
//
// A proc.wait is bounded by the workload's own timeout first: the workload
// times out (exit 1) and the host, which answers the stop, stays.
func TestStuckHostAbandoned(t *testing.T) {
	tests := []struct {
		method  string
		timeout string // on_h1's
		code    int
		want    string
	}{
		{proto.MethodFacts, "2m", ExitInfra, `host "h1": agent did not answer facts within `},
		{proto.MethodProcStart, "2m", ExitInfra, `host "h1": agent did not answer proc.start within `},
		{proto.MethodFilesList, "2m", ExitInfra, `host "h1": agent did not answer files.list within `},
		{proto.MethodProcWait, "2s", ExitFailed, `workload "on_h1" (exec): timed out after 2s`}, // a workload of one unit names none (steps/prologue.go)
	}
	for _, tc := range tests {
		for _, mode := range []string{rpctest.Mute, rpctest.Flood} {
			t.Run(tc.method+"/"+mode, func(t *testing.T) {
				src := strings.Replace(stuckLab, `timeout = "2s"`, `timeout = "`+tc.timeout+`"`, 1)
				res, _ := runStuck(t, src, "h1", func(m string) string {
					if m == tc.method {
						return mode
					}
					return rpctest.Answer
				})
				if res.Code != tc.code {
					t.Fatalf("code %d, want %d (err %v)", res.Code, tc.code, res.Err)
				}
				if want := tc.want; !strings.Contains(res.Err.Error(), want) {
					t.Errorf("error:\n%v\nwant it to contain %q", res.Err, want)
				}
				r := readRun(t, res.Dir)
				for _, w := range r.Workloads {
					if w.Name == "on_h2" && w.Status != results.StatusOK {
						t.Errorf("good host's workload: %s: %s", w.Status, w.Error)
					}
				}
				if b, err := os.ReadFile(filepath.Join(res.Dir, "hosts", "h2", "logs", "wl.on_h2.exec.r0.stdout")); err != nil || string(b) != "h2 output\n" {
					t.Errorf("good host's output: %q, %v", b, err)
				}
				if tc.code == ExitInfra && !strings.Contains(strings.Join(res.Unreachable, "\n"), `host "h1"`) {
					t.Errorf("unreachable %q, want h1 named", res.Unreachable)
				}
			})
		}
	}
}

const stuckClass = `
lab "class" {}
locals {
  students = toset(["ana", "bob"])
}
host "server" {
  for_each = local.students
  address  = "127.0.0.1"
}
workload "hello" {
  for_each = local.students
  tool     = "exec"
  host     = host.server[each.key]
  command  = ["echo", "hi ${each.key}"]
}
`

// TestStuckStudentOnlyFails: in a class lab, one student's host that never
// answers facts fails that student alone; the others' workloads run.
func TestStuckStudentOnlyFails(t *testing.T) {
	res, _ := runStuck(t, stuckClass, `server["bob"]`, func(m string) string {
		if m == proto.MethodFacts {
			return rpctest.Mute
		}
		return rpctest.Answer
	})
	if res.Code != ExitInfra {
		t.Fatalf("code %d, want %d (err %v)", res.Code, ExitInfra, res.Err)
	}
	st := map[string]results.Student{}
	for _, s := range res.Students {
		st[s.Key] = s
	}
	if st["ana"].Status != results.StudentReady || st["ana"].OK != 1 {
		t.Errorf("student ana: %+v, want ready with her workload ok", st["ana"])
	}
	if st["bob"].Status != results.StudentFailed || !strings.Contains(st["bob"].Reason, `agent did not answer facts within`) {
		t.Errorf("student bob: %+v, want failed naming the stuck facts", st["bob"])
	}
}
