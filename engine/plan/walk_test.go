package plan

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/kinds"
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
// in force during (the whole-run one: those on its host), and the file a
// capture makes, named after its window. With --only, the selection's.
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
		Steps, After, Hosts []string
		Dial                bool
	}
	type win struct {
		Start, Stop, During, Covers []string
		File                        string
	}
	for _, tt := range []struct {
		only []string
		wls  map[string]wl
		caps map[string]win
	}{
		{nil, map[string]wl{
			"a1": {Steps: []string{"a/workload-run/a1"}, After: []string{}, Hosts: []string{"a"}},
			"b1": {Steps: []string{"b/workload-run/b1"}, After: []string{}, Hosts: []string{"b"}},
			"ab": {Steps: []string{"a/workload-server/ab", "b/workload-client/ab"}, After: []string{"a1", "b1"}, Hosts: []string{"a", "b"}, Dial: true},
			"a2": {Steps: []string{"a/workload-run/a2"}, After: []string{"ab"}, Hosts: []string{"a"}},
		}, map[string]win{
			"c":   {Start: []string{"a/start-capture/c"}, Stop: []string{"a/stop-capture/c"}, During: []string{"a2", "ab"}, Covers: []string{"a2", "ab"}, File: "cap.c.a2-ab.pcap"},
			"all": {Start: []string{"b/start-capture/all"}, Stop: []string{"b/stop-capture/all"}, During: []string{}, Covers: []string{"b1", "ab"}, File: "cap.all.pcap"},
		}},
		{[]string{"b1", "a2"}, map[string]wl{
			"b1": {Steps: []string{"b/workload-run/b1"}, After: []string{}, Hosts: []string{"b"}},
			"a2": {Steps: []string{"a/workload-run/a2"}, After: []string{}, Hosts: []string{"a"}},
		}, map[string]win{
			// Scoped to what of its `during` the selection runs.
			"c":   {Start: []string{"a/start-capture/c"}, Stop: []string{"a/stop-capture/c"}, During: []string{"a2"}, Covers: []string{"a2"}, File: "cap.c.a2.pcap"},
			"all": {Start: []string{"b/start-capture/all"}, Stop: []string{"b/stop-capture/all"}, During: []string{}, Covers: []string{"b1"}, File: "cap.all.pcap"},
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
			var hosts []string
			for _, h := range wp.Hosts {
				hosts = append(hosts, h.Name)
			}
			wls[wp.Workload.Name] = wl{Steps: wp.Steps, After: names(wp.After), Hosts: hosts, Dial: wp.Dial != nil}
		}
		if diff := cmp.Diff(tt.wls, wls); diff != "" {
			t.Errorf("--only %v: workloads (-want +got):\n%s", tt.only, diff)
		}
		caps := map[string]win{}
		for _, wp := range pl.Captures {
			caps[wp.Capture.Name] = win{Start: wp.Start, Stop: wp.Stop, During: names(wp.During), Covers: names(wp.Covers), File: wp.File}
		}
		if diff := cmp.Diff(tt.caps, caps); diff != "" {
			t.Errorf("--only %v: captures (-want +got):\n%s", tt.only, diff)
		}
	}
}

// TestPlanResolvesJumps: a planned host carries its jump string parsed
// (Hops, first dialled first) or the planned lab host it jumps through
// (Via); a jump string that is not one fails the plan, before any
// connect.
func TestPlanResolvesJumps(t *testing.T) {
	p := filepath.Join(t.TempDir(), "jump.hcl")
	src := `
lab "jump" {}
host "j" { address = "10.0.0.9" }
host "a" {
  address = "127.0.0.1"
  jump    = "bastion.example.org,ops@10.0.0.8:2200"
}
host "b" {
  address = "127.0.0.2"
  jump    = host.j
}
workload "ab" {
  tool   = "tcp"
  server = host.a
  client = host.b
  bytes  = "1MiB"
}
`
	if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	l := load(t, p, lab.LoadOptions{})
	pl, err := New(l)
	if err != nil {
		t.Fatal(err)
	}
	a, b, j := pl.HostOf(l.HostByName("a")), pl.HostOf(l.HostByName("b")), pl.HostOf(l.HostByName("j"))
	if a == nil || b == nil || j == nil {
		t.Fatalf("planned hosts a %v, b %v, j %v", a, b, j)
	}
	want := []Hop{{Address: "bastion.example.org"}, {User: "ops", Address: "10.0.0.8", Port: 2200}}
	if d := cmp.Diff(want, a.Hops); d != "" || a.Via != nil {
		t.Errorf("a: hops (-want +got):\n%s, via %v", d, a.Via)
	}
	if b.Via != j || b.Hops != nil || !j.JumpOnly {
		t.Errorf("b: via %v (want j's plan), hops %v; j jump only %v", b.Via, b.Hops, j.JumpOnly)
	}
	l.HostByName("a").Jump = "ops@10.0.0.8:99999"
	if _, err := New(l); err == nil || !strings.Contains(err.Error(), `host "a"`) || !strings.Contains(err.Error(), "bad port") {
		t.Errorf("a bad jump string: plan error %v, want it named at plan time", err)
	}
}

// TestProbePortIsFree: the port a workload's data link is probed on is in
// its own block and taken by none of its trials (ports that the plan's
// trials show); a workload whose trials fill the block gets none (0).
func TestProbePortIsFree(t *testing.T) {
	files, _ := filepath.Glob("../../labs/*.hcl")
	// walkLab's tcp workload repeated 10 times: its trials fill its block.
	full := filepath.Join(t.TempDir(), "full.hcl")
	if err := os.WriteFile(full, []byte(strings.Replace(walkLab, `bytes  = "1MiB"`, `bytes  = "1MiB"
  repeat = 10`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	files = append(files, full)
	seen := map[bool]int{}
	for _, f := range files {
		p, err := New(load(t, f, lab.LoadOptions{}))
		if err != nil {
			t.Fatal(err)
		}
		for _, wp := range p.Workloads {
			w := wp.Workload
			full := len(kinds.Trials(&w.Workload, w.Sizes)) >= kinds.PortsPerWorkload
			seen[full]++
			if full != (wp.ProbePort == 0) {
				t.Errorf("%s %s: probe port %d with %d trials", f, w.Name, wp.ProbePort, len(kinds.Trials(&w.Workload, w.Sizes)))
			}
			if wp.ProbePort == 0 {
				continue
			}
			if first := kinds.PortFor(w.Index, 0, 0); wp.ProbePort < first || wp.ProbePort >= first+kinds.PortsPerWorkload {
				t.Errorf("%s %s: probe port %d outside the block from %d", f, w.Name, wp.ProbePort, first)
			}
			for _, id := range wp.Steps {
				for _, tr := range p.Step(id).Trials {
					if tr.Port == wp.ProbePort {
						t.Errorf("%s %s: probe port %d is the port of trial %+v", f, w.Name, wp.ProbePort, tr)
					}
				}
			}
		}
	}
	if seen[false] == 0 || seen[true] == 0 {
		t.Errorf("the example labs should have workloads with and without a free port: %v", seen)
	}
}
