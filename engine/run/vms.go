package run

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/engine/image"
	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/engine/plan"
	"github.com/rlab-dev/rlab/engine/remote"
	"github.com/rlab-dev/rlab/engine/runstate"
	"github.com/rlab-dev/rlab/engine/vm"
)

// LocalVMs boots a lab's `vm {}` hosts as QEMU VMs (engine/vm) from the
// cached image (`rlab image build` makes it).
type LocalVMs struct {
	Log      *slog.Logger
	Progress func(host, state string)
	// BootWave boots at most this many VMs at once, each wave up before the
	// next starts (rlab run --parallel); 0 boots them all at once.
	BootWave int
	// Agent returns the agent binary the VMs are handed on their agent
	// disk (engine/agentdisk), so connecting to them uploads nothing; nil,
	// or an error, attaches the disk empty (the connection then uploads
	// the agent and says why).
	Agent func() ([]byte, error)
	// Machine says what this machine has for VMs; nil reads it
	// (vm.ReadMachine). Tests give their own figures.
	Machine func() (plan.Machine, error)
}

// Fit refuses VMs that do not fit this machine's memory, before anything
// is made: a *plan.FitError with the numbers and the fixes. A machine
// whose figures cannot be read is not refused (Boot then says what
// failed).
func (v *LocalVMs) Fit(c *plan.VMCost) error {
	if c == nil {
		return nil
	}
	read := v.Machine
	if read == nil {
		read = func() (plan.Machine, error) {
			mem, cpus, err := vm.ReadMachine()
			return plan.Machine{MemAvailableBytes: mem, CPUs: cpus}, err
		}
	}
	m, err := read()
	if err != nil {
		if v.Log != nil {
			v.Log.Warn("cannot check that the VMs fit", "err", err)
		}
		return nil
	}
	return c.Fit(m)
}

// Boot implements VMBooter.
func (v *LocalVMs) Boot(ctx context.Context, hosts []*lab.Host, runDir string) (VMSet, error) {
	// Each host boots the image its vm block names (image.RecipeFor), found
	// once per name in the cache.
	imgs := map[string]*image.Image{}
	var ms []vm.Machine
	for _, h := range hosts {
		img := imgs[h.VM.Image]
		if img == nil {
			r := image.RecipeFor(h.VM.Image)
			var err error
			if img, err = image.Lookup(image.CacheDir(), r); err != nil {
				build := "`rlab image build` or `make vm-image`"
				if r.Variant != "" {
					build = "`rlab image build --image " + r.Release + "-" + r.Variant + "`"
				} else if r.Release != image.DefaultRelease {
					build = "`rlab image build --release " + r.Release + "`"
				}
				return nil, fmt.Errorf("host %s: no VM image %s in %s (build it once with %s, as root): %w", h.Name, r.Name(), image.CacheDir(), build, err)
			}
			imgs[h.VM.Image] = img
		}
		m := vm.Machine{Name: h.Name, Slug: h.Slug, MemoryBytes: h.VM.MemoryBytes, CPUs: h.VM.CPUs, BootTimeout: h.VM.BootTimeout,
			Image: img, Internet: h.VM.Internet}
		for _, n := range h.VM.Networks {
			m.Networks = append(m.Networks, vm.Network{Name: n.Name, Address: n.Address, MTU: n.MTU})
		}
		ms = append(ms, m)
	}
	// No ACPI powerdown at the end: the VMs are thrown away with their
	// overlays (discard.go), so qemu is told to stop at once (SIGTERM)
	// rather than waiting for the guest's systemd to shut down.
	var agent []byte
	if v.Agent != nil {
		var err error
		if agent, err = v.Agent(); err != nil && v.Log != nil {
			v.Log.Warn("no agent for the VMs' agent disk; it will be uploaded", "err", err)
		}
	}
	set, err := vm.Boot(ctx, ms, runDir, vm.Options{Logger: v.Log, Progress: v.Progress, PowerdownTimeout: -1, BootWave: v.BootWave, Agent: agent, WarmAgent: warmRequest()})
	if err != nil {
		if set != nil {
			return &vmSet{set}, err
		}
		return nil, err
	}
	return &vmSet{set}, nil
}

type vmSet struct{ s *vm.Set }

func (v *vmSet) Endpoint(host string) (runstate.Host, bool) {
	for _, m := range v.s.VMs {
		if m.Name != host {
			continue
		}
		h, p, err := net.SplitHostPort(m.Addr)
		if err != nil {
			return runstate.Host{}, false
		}
		port, _ := strconv.Atoi(p)
		return runstate.Host{Address: h, Port: port, User: m.User, IdentityFile: m.IdentityFile, KnownHosts: m.KnownHosts}, true
	}
	return runstate.Host{}, false
}

// Accel is the accelerator the VMs were booted with and what the output
// says of it ("TCG software emulation (KVM not usable: ...)").
func (v *vmSet) Accel(string) (accel, note string) { return v.s.Accel, v.s.AccelNote }

func (v *vmSet) State() ([]byte, error) { return json.Marshal(v.s.State()) }

func (v *vmSet) Shutdown(ctx context.Context) error { return v.s.Shutdown(ctx) }

// StopVMs stops the VMs a state.json records (for engine/down: Options.StopVMs).
func StopVMs(ctx context.Context, state []byte) error {
	var st vm.State
	if err := json.Unmarshal(state, &st); err != nil {
		return fmt.Errorf("read VM state: %w", err)
	}
	return vm.StopFromState(ctx, st, 20*time.Second)
}

// RunningVMs says, by host name, which VMs a state.json records are still
// running (the same qemu process), so rlab down can tell a VM it stopped
// from one long gone. Unreadable state gives nil.
func RunningVMs(state []byte) map[string]bool {
	var st vm.State
	if json.Unmarshal(state, &st) != nil {
		return nil
	}
	up := map[string]bool{}
	for _, v := range st.VMs {
		up[v.Host] = v.Running()
	}
	return up
}

// warmRequest is what the agent in a snapshot's template is asked before
// the save (vm.Options.WarmAgent): the facts a run asks, so its tool-version
// cache is warm in every restored VM. Packages are left out: the cache
// holds tool versions only.
func warmRequest() []byte {
	params, err := json.Marshal(remote.FactsParams(false, nil))
	if err != nil {
		return nil
	}
	b, err := json.Marshal(proto.Request{ID: 1, Method: proto.MethodFacts, Params: params})
	if err != nil {
		return nil
	}
	return b
}

// Died says why the VM of host stopped under the run ("" while it runs):
// its guest's kernel panic, read from its console (vm.Set.Died).
func (v *vmSet) Died(host string, wait time.Duration) string { return v.s.Died(host, wait) }

// diedSet is a VMSet that can say why one of its VMs stopped.
type diedSet interface {
	Died(host string, wait time.Duration) string
}

// explainLostVMs names why each lost host that is a local VM went away:
// its VM stopped (a guest whose kernel panicked takes qemu with it). That
// comes first among the run's errors, and is the host's unreachable line,
// rather than only "agent lost: its session ended".
func (r *runner) explainLostVMs() {
	ds, ok := r.vms.(diedSet)
	if !ok || r.vms == nil {
		return
	}
	for _, h := range r.hosts {
		r.mu.Lock()
		vm := r.discard[h.Name]
		r.mu.Unlock()
		if !vm || !r.hostGone(h.Name) { // link.go
			continue
		}
		r.mu.Lock()
		err := r.lost[h.Name]
		r.mu.Unlock()
		why := ds.Died(h.Name, 5*time.Second)
		if why == "" {
			continue
		}
		e := &infraError{fmt.Errorf("host %q: %s", h.Name, why)}
		r.log.Error("a VM stopped during the run", "host", h.Name, "why", why)
		r.emit(Event{Type: "error", Error: e.Error()})
		r.mu.Lock()
		r.infra = append([]error{e}, r.infra...)
		r.lost[h.Name] = fmt.Errorf("%s: %w", why, err)
		r.mu.Unlock()
	}
}
