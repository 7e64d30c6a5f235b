package plan

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlab-dev/rlab/engine/lab"
)

// walkLab: a1 and b1 on hosts of their own, ab across both after them, a2
// after ab on a, and a capture scoped to a2 and ab (in that order, not the
// file's).
const walkLab = `
lab "walk" {}
host "a" { address = "127.0.0.1" }
host "b" { address = "127.0.0.2" }
workload "a1" {
  tool    = "exec"
  host    = host.a
  command = ["true"]
}
workload "b1" {
  tool    = "exec"
  host    = host.b
  command = ["true"]
}
workload "ab" {
  tool   = "tcp"
  server = host.a
  client = host.b
  bytes  = "1MiB"
}
workload "a2" {
  tool    = "exec"
  host    = host.a
  command = ["true"]
}
capture "c" {
  host   = host.a
  netdev = "lo"
  during = [workload.a2, workload.ab]
}
capture "all" {
  host   = host.b
  netdev = "lo"
}
`

// TestWalk: what the run walks is read off the DAG once, here: each
// workload's steps, the workloads it waits for and its client's dial; each
// capture's steps and, when scoped, the workloads it covers in its
// `during` order (the whole-run capture: none), and the workloads each is
// in force during (the whole-run one: those on its host). With --only, the
// selection's.
func TestWalk(t *testing.T) {
	p := filepath.Join(t.TempDir(), "walk.hcl")
	if err := os.WriteFile(p, []byte(walkLab), 0o600); err != nil {
		t.Fatal(err)
	}
	l := load(t, p, lab.LoadOptions{})
	names := func(ws []*lab.Workload) []string {
		out := []string{}
		for _, w := range ws {
			out = append(out, w.Name)
		}
		return out
	}
	type wl struct {
		Steps, After []string
		Dial         bool
	}
	type win struct{ Start, Stop, During, Covers []string }
	for _, tt := range []struct {
		only []string
		wls  map[string]wl
		caps map[string]win
	}{
		{nil, map[string]wl{
			"a1": {Steps: []string{"a/workload-run/a1"}, After: []string{}},
			"b1": {Steps: []string{"b/workload-run/b1"}, After: []string{}},
			"ab": {Steps: []string{"a/workload-server/ab", "b/workload-client/ab"}, After: []string{"a1", "b1"}, Dial: true},
			"a2": {Steps: []string{"a/workload-run/a2"}, After: []string{"ab"}},
		}, map[string]win{
			"c":   {Start: []string{"a/start-capture/c"}, Stop: []string{"a/stop-capture/c"}, During: []string{"a2", "ab"}, Covers: []string{"a2", "ab"}},
			"all": {Start: []string{"b/start-capture/all"}, Stop: []string{"b/stop-capture/all"}, During: []string{}, Covers: []string{"b1", "ab"}},
		}},
		{[]string{"b1", "a2"}, map[string]wl{
			"b1": {Steps: []string{"b/workload-run/b1"}, After: []string{}},
			"a2": {Steps: []string{"a/workload-run/a2"}, After: []string{}},
		}, map[string]win{
			// Scoped to what of its `during` the selection runs.
			"c":   {Start: []string{"a/start-capture/c"}, Stop: []string{"a/stop-capture/c"}, During: []string{"a2"}, Covers: []string{"a2"}},
			"all": {Start: []string{"b/start-capture/all"}, Stop: []string{"b/stop-capture/all"}, During: []string{}, Covers: []string{"b1"}},
		}},
	} {
		pl, err := NewWith(l, Options{Only: tt.only})
		if err != nil {
			t.Fatal(err)
		}
		wls := map[string]wl{}
		for i, wp := range pl.Workloads {
			if wp.Workload != pl.Selected.Workloads[i] {
				t.Errorf("--only %v: workload %d is %s, the selection's is %s", tt.only, i, wp.Workload.Name, pl.Selected.Workloads[i].Name)
			}
			wls[wp.Workload.Name] = wl{Steps: wp.Steps, After: names(wp.After), Dial: wp.Dial != nil}
		}
		if diff := cmp.Diff(tt.wls, wls); diff != "" {
			t.Errorf("--only %v: workloads (-want +got):\n%s", tt.only, diff)
		}
		caps := map[string]win{}
		for _, wp := range pl.Captures {
			caps[wp.Capture.Name] = win{Start: wp.Start, Stop: wp.Stop, During: names(wp.During), Covers: names(wp.Covers)}
		}
		if diff := cmp.Diff(tt.caps, caps); diff != "" {
			t.Errorf("--only %v: captures (-want +got):\n%s", tt.only, diff)
		}
	}
}
