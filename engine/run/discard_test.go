package run

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/engine/plan"
	"github.com/rlab-dev/rlab/engine/runstate"
	"github.com/rlab-dev/rlab/steps"
)

// fakeVMs stands in for LocalVMs: it boots nothing, and every VM host it is
// given is reached at the pipe bed's in-process agent; Shutdown counts its
// calls and answers shutdownErr.
type fakeVMs struct {
	accel       string
	shutdownErr error
	// endpoint, when set, is where a VM host is reached (a netns host);
	// else 127.0.0.1:2222, which the pipe bed ignores.
	endpoint  map[string]runstate.Host
	booted    []string
	shutdowns atomic.Int32
}

func (f *fakeVMs) Boot(_ context.Context, hosts []*lab.Host, _ string) (VMSet, error) {
	for _, h := range hosts {
		f.booted = append(f.booted, h.Name)
	}
	return &fakeVMSet{f}, nil
}

type fakeVMSet struct{ f *fakeVMs }

func (s *fakeVMSet) Endpoint(host string) (runstate.Host, bool) {
	if !slices.Contains(s.f.booted, host) {
		return runstate.Host{}, false
	}
	if ep, ok := s.f.endpoint[host]; ok {
		return ep, true
	}
	return runstate.Host{Address: "127.0.0.1", Port: 2222, User: "root"}, true
}
func (s *fakeVMSet) State() ([]byte, error) { return []byte(`{"vms":[]}`), nil }
func (s *fakeVMSet) Shutdown(context.Context) error {
	s.f.shutdowns.Add(1)
	return s.f.shutdownErr
}
func (s *fakeVMSet) Accel(string) (string, string) {
	return s.f.accel, "TCG software emulation (asked for)"
}

// Abandon ends the in-process session as a dropped SSH connection would,
// and remembers that it was abandoned rather than closed.
func (h *pipeHost) Abandon() error {
	h.abandoned.Store(true)
	h.kill()
	return nil
}

const vmAndSSH = `
lab "discard" {}
host "v" {
  vm {}
}
host "b" { address = "127.0.0.1" }
workload "on_v" {
  tool    = "exec"
  host    = host.v
  command = ["echo", "hello from the VM"]
}
workload "on_b" {
  tool    = "exec"
  host    = host.b
  command = ["echo", "hello from b"]
}
impair "wan_v" {
  host   = host.v
  netdev = "lo"
  loss   = "1%"
}
impair "wan_b" {
  host   = host.b
  netdev = "lo"
  loss   = "1%"
}
`

// TestTeardownDiscardsVM: at teardown, what the run made inside a local VM
// is not undone one by one (no netem removal there, its session abandoned,
// not closed for the agent's cleanup); the VM is stopped, the events say
// what was left to it and why, and the journal counts it undone. The SSH
// host beside it is undone as before. When the VM could not be stopped its
// effects stay pending, and `rlab down` stops it and marks them.
func TestTeardownDiscardsVM(t *testing.T) {
	for _, tt := range []struct {
		name        string
		shutdownErr error
		wantCode    int
	}{
		{"stopped", nil, ExitOK},
		{"stop failed", errors.New("qemu pid 42 not reaped"), ExitInfra},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "run")
			bed := newPipeBed(t)
			bed.netem = newFakeNetem(t, out)
			vms := &fakeVMs{accel: "tcg", shutdownErr: tt.shutdownErr}
			res := runPlanned(context.Background(), t, loadLab(t, vmAndSSH), plan.Options{}, Options{Connector: bed, VMs: vms, Out: out, NoReport: true})
			if res.Code != tt.wantCode {
				t.Fatalf("code %d, want %d: %v", res.Code, tt.wantCode, res.Err)
			}
			if d := cmp.Diff([]string{"v"}, vms.booted); d != "" {
				t.Errorf("booted (-want +got):\n%s", d)
			}
			if n := vms.shutdowns.Load(); n != 1 {
				t.Errorf("VM set stopped %d times, want 1", n)
			}
			calls := bed.netem.calls()
			slices.Sort(calls)
			want := []string{"b apply wan_b lo loss=1", "b remove lo", "v apply wan_v lo loss=1"}
			if d := cmp.Diff(want, calls); d != "" {
				t.Errorf("impair calls (-want +got):\n%s", d)
			}
			if !bed.host("v").abandoned.Load() {
				t.Error("the VM's session was closed for its agent's cleanup, not abandoned")
			}
			if bed.host("b").abandoned.Load() {
				t.Error("the SSH host's session was abandoned: its agent must clean up")
			}
			var notes []string
			for _, e := range readEvents(t, res.Dir) {
				if e.Type == "step.end" && e.Step == "teardown" && e.Host != "" {
					notes = append(notes, e.Host+": "+e.Message)
				}
			}
			wantNotes := []string{"v: " + DiscardNote + "; not undone inside it: netem on lo"}
			if d := cmp.Diff(wantNotes, notes); d != "" {
				t.Errorf("teardown events per host (-want +got):\n%s", d)
			}
			pending := func() []string {
				var p []string
				for _, e := range readState(t, res.Dir).Effects {
					if !e.Undone {
						p = append(p, e.Host+" "+e.Type+" "+e.ID)
					}
				}
				slices.Sort(p)
				return p
			}
			var wantPending []string
			if tt.shutdownErr != nil {
				wantPending = []string{"v impair wan_v"}
			}
			// The exec processes ended by themselves; the netem is what
			// stays in force until the VM stops.
			got := slices.DeleteFunc(pending(), func(p string) bool { return !strings.Contains(p, " impair ") })
			if d := cmp.Diff(wantPending, got); d != "" {
				t.Errorf("effects left pending (-want +got):\n%s", d)
			}
			if tt.shutdownErr == nil {
				return
			}
			// rlab down after the failed stop: it stops the VMs from
			// state.json; of the SSH host b only what the run left there
			// (its work dir, which the in-process agent's layout keeps)
			// needs a connection, never the VM's leftovers.
			stopped := 0
			dres, err := Down(context.Background(), res.Dir, DownOptions{Connector: bed, StopVMs: func(context.Context, []byte) error { stopped++; return nil }})
			if err != nil {
				t.Fatalf("down: %v (%+v)", err, dres)
			}
			if stopped != 1 {
				t.Errorf("down stopped the VMs %d times, want 1", stopped)
			}
			if p := pending(); len(p) != 0 {
				t.Errorf("after down, effects still pending: %v", p)
			}
		})
	}
}

// TestNoteEmulated: the VM hosts booted under TCG are the steps' emulated
// hosts (their perftest gets -u 18), with the accelerator's note; under KVM,
// and for hosts that are not this run's VMs, none is.
func TestNoteEmulated(t *testing.T) {
	for _, tt := range []struct {
		accel string
		want  map[string]string
	}{
		{"tcg", map[string]string{"v": "host v is a local VM under TCG software emulation (asked for)"}},
		{"kvm", nil},
	} {
		r := &runner{discard: map[string]bool{"v": true}, env: &steps.Env{}}
		r.noteEmulated(&fakeVMSet{&fakeVMs{accel: tt.accel}})
		if d := cmp.Diff(tt.want, r.env.Emulation); d != "" {
			t.Errorf("%s: emulation (-want +got):\n%s", tt.accel, d)
		}
		if got := r.env.Emulated("b"); got != "" {
			t.Errorf("%s: host b, not a VM, is emulated: %q", tt.accel, got)
		}
	}
}
