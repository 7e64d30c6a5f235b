package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rlab-dev/rlab/engine/down"
	runengine "github.com/rlab-dev/rlab/engine/run"
	"github.com/rlab-dev/rlab/engine/runstate"
	"github.com/rlab-dev/rlab/steps"
)

// TestDownListing: rlab down says what it undid, what it left and why,
// what was already undone, or that nothing was left.
func TestDownListing(t *testing.T) {
	st := &runstate.State{
		Hosts: []runstate.Host{{Name: "server"}, {Name: "client"}, {Name: "vm1", VM: true}},
		Effects: []steps.Effect{
			{Host: "server", Type: "rxe", ID: "rxe_eth1", Created: true},
			{Host: "server", Type: "rxe", ID: "rxe0"},                                // found
			{Host: "client", Type: "rxe", ID: "rxe_eth1", Created: true, Keep: true}, // kept
			{Host: "client", Type: "capture", ID: "cap.roce", Undone: true},
			{Host: "client", Type: "proc", ID: "wl.x", Undone: true},
		},
		VMs: json.RawMessage(`{"vms":[]}`),
	}
	tests := []struct {
		name    string
		before  *runstate.State
		res     *down.Result
		ok      bool
		running map[string]bool
		want    []string
	}{
		{"undid, left, stopped", st, &down.Result{Undone: []string{"server: rxe rxe_eth1"}}, true, map[string]bool{"vm1": true}, []string{
			"undone server: rxe rxe_eth1",
			"left rxe rxe0 on host server: it was there before the run",
			"left rxe rxe_eth1 on host client: kept (keep = true or --keep)",
			"stopped VM vm1",
			"2 thing(s) already undone (by the run itself or an earlier rlab down)"}},
		{"VM gone before down", &runstate.State{Hosts: st.Hosts, VMs: st.VMs}, &down.Result{}, true, map[string]bool{}, []string{"VM vm1 already gone"}},
		{"VM stop failed", &runstate.State{Hosts: st.Hosts, VMs: st.VMs}, &down.Result{}, false, nil, []string{"nothing was left to undo"}},
		{"clean run", &runstate.State{Effects: []steps.Effect{{Type: "proc", Undone: true}}}, &down.Result{}, true, nil,
			[]string{"1 thing(s) already undone (by the run itself or an earlier rlab down)"}},
		{"nothing", &runstate.State{}, &down.Result{}, true, nil, []string{"nothing was left to undo"}},
		{"host text", nil, &down.Result{Undone: []string{"h: proc \x1b[2J"}}, true, nil, []string{`undone h: proc \x1b[2J`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := downListing(tc.before, tc.res, tc.ok, false, tc.running)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("listing (-want +got):\n%s", d)
			}
		})
	}
}

// TestErrorLines: joined errors print one per line, a wrapped join's lines
// too, without blanks, repeats or control characters.
func TestErrorLines(t *testing.T) {
	a := errors.New(`workload "w" failed: exit 1`)
	b := errors.New(`host "h1" unreachable: dial tcp: timeout`)
	tests := []struct {
		name string
		err  error
		want []string
	}{
		{"nil", nil, nil},
		{"one", a, []string{a.Error()}},
		{"joined", errors.Join(a, b), []string{a.Error(), b.Error()}},
		{"wrapped join", fmt.Errorf("run: %w", errors.Join(a, b, b)), []string{"run: " + a.Error(), b.Error()}},
		{"control characters", errors.New("bad\x1b[2J\r\n\nnext"), []string{`bad\x1b[2J`, "next"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, errorLines(tc.err)); d != "" {
				t.Errorf("lines (-want +got):\n%s", d)
			}
		})
	}
	var buf strings.Builder
	printErrors(&buf, "Error: ", errors.Join(a, b))
	if want := "Error: " + a.Error() + "\nError: " + b.Error() + "\n"; buf.String() != want {
		t.Errorf("printed %q, want %q", buf.String(), want)
	}
}

// TestRunningVMsGone: a VM whose recorded qemu process is gone (the pid is
// now some other process, or none) is not running, so down says "already
// gone" for it rather than "stopped".
func TestRunningVMsGone(t *testing.T) {
	state := []byte(fmt.Sprintf(`{"vms":[{"host":"vm1","pid":%d,"start_time":1,"pid_file":"/nonexistent/vm1.pid"},{"host":"vm2","pid":0}]}`, os.Getpid()))
	got := runengine.RunningVMs(state)
	if d := cmp.Diff(map[string]bool{"vm1": false, "vm2": false}, got); d != "" {
		t.Errorf("running (-want +got):\n%s", d)
	}
	st := &runstate.State{Hosts: []runstate.Host{{Name: "vm1", VM: true}}, VMs: state}
	if d := cmp.Diff([]string{"VM vm1 already gone"}, downListing(st, &down.Result{}, true, false, got)); d != "" {
		t.Errorf("listing (-want +got):\n%s", d)
	}
}
