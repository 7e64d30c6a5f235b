package main

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	runengine "github.com/rlab-dev/rlab/engine/run"
	"github.com/rlab-dev/rlab/steps"
)

// TestDownListing: rlab down says what it undid, what it left and why,
// what the run had undone itself, or that nothing was left.
func TestDownListing(t *testing.T) {
	st := &runengine.State{
		Hosts: []runengine.StateHost{{Name: "server"}, {Name: "client"}, {Name: "vm1", VM: true}},
		Effects: []steps.Effect{
			{Host: "server", Kind: "rxe", ID: "rxe_eth1", Created: true},
			{Host: "server", Kind: "rxe", ID: "rxe0"},                                // found
			{Host: "client", Kind: "rxe", ID: "rxe_eth1", Created: true, Keep: true}, // kept
			{Host: "client", Kind: "capture", ID: "cap.roce", Undone: true},
			{Host: "client", Kind: "proc", ID: "wl.x", Undone: true},
		},
		VMs: json.RawMessage(`{"vms":[]}`),
	}
	tests := []struct {
		name   string
		before *runengine.State
		res    *runengine.DownResult
		ok     bool
		want   []string
	}{
		{"undid, left, stopped", st, &runengine.DownResult{Undone: []string{"server: rxe rxe_eth1"}}, true, []string{
			"undone server: rxe rxe_eth1",
			"left rxe rxe0 on host server: it was there before the run",
			"left rxe rxe_eth1 on host client: kept (keep = true or --keep)",
			"stopped VM vm1",
			"the run had undone 2 thing(s) itself"}},
		{"VM stop failed", &runengine.State{Hosts: st.Hosts, VMs: st.VMs}, &runengine.DownResult{}, false, []string{"nothing was left to undo"}},
		{"clean run", &runengine.State{Effects: []steps.Effect{{Kind: "proc", Undone: true}}}, &runengine.DownResult{}, true,
			[]string{"the run had undone 1 thing(s) itself"}},
		{"nothing", &runengine.State{}, &runengine.DownResult{}, true, []string{"nothing was left to undo"}},
		{"host text", nil, &runengine.DownResult{Undone: []string{"h: proc \x1b[2J"}}, true, []string{"undone h: proc ?[2J"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := downListing(tc.before, tc.res, tc.ok)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("listing (-want +got):\n%s", d)
			}
		})
	}
}
