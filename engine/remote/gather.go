package remote

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc"
	"github.com/rlab-dev/rlab/engine/sshx"
	"github.com/rlab-dev/rlab/kinds"
)

// FactsParams is the facts request the controller sends: the programs to
// look for are every registered family's and the helpers (kinds.Programs),
// so what the agent probes is the controller's descriptor, not compiled into
// the agent (its hash does not change when a tool's hint does). packages
// are program blocks' packages, whose installed state preflight reads: a
// run asks each host about those its plan builds there (engine/run
// factsRequest), facts and check about the lab's (needs.PackageNames).
func FactsParams(refresh bool, packages []string) proto.FactsParams {
	p := proto.FactsParams{Refresh: refresh, Packages: packages}
	kinds.MustBeRegistered("engine/remote: the programs facts probes")
	for _, prog := range kinds.Programs() {
		v := prog.Version
		p.Probe = append(p.Probe, proto.Probe{Name: prog.Name, Args: v.Args, Pattern: v.Pattern, From: v.From, RDMACore: v.RDMACore, PerftestHelp: v.PerftestHelp, HelpFlags: v.HelpFlags})
	}
	return p
}

// Spec is one host to gather facts from.
type Spec struct {
	Target     sshx.Target
	KnownHosts string // the lab's known_hosts file for the host (sshx.Options.LabKnownHosts; "" none)
	Become     bool
}

// GatherOptions configure Gather.
type GatherOptions struct {
	SSH      sshx.Options
	Agents   *Agents
	Parallel int    // hosts at once; default sshx.DefaultParallel
	RunID    string // default "facts" (reused: facts leave nothing behind worth keeping)
	// Progress, when set, is called as each host passes a stage:
	// "connected", "installed", "done" (or "failed").
	Progress func(host, stage string)
	// RefreshFacts makes every agent ask its tools their versions again
	// instead of using its cache (proto.FactsParams.Refresh).
	RefreshFacts bool
	// Packages are the package names the facts request asks about
	// (proto.FactsParams.Packages).
	Packages []string
	// CallTimeout bounds each agent call (StartOptions.CallTimeout): a host
	// whose agent does not answer in time is reported with an error naming
	// it and the call, while the others go on.
	CallTimeout time.Duration
	// Then, when set, is called with each host's agent and facts while the
	// agent is still open (rlab provision installs through it); the host's
	// Result then keeps no facts: Then had them, and a host's facts may
	// hold strings up to a reply line (8 MiB) each, kept for every host
	// until the last is done.
	Then func(ctx context.Context, host string, a *Agent, f *proto.Facts)
	// Mask masks the sensitive values in the errors agents answer with
	// before they are cut (StartOptions.Mask).
	Mask func(s string, cut bool) string
}

// Result is one host's facts, or why there are none.
type Result struct {
	Name  string
	Facts *proto.Facts
	Err   error // names the host and what was being done
	Sent  int64 // agent bytes shipped to it
	Hello proto.Hello
}

// GatherStats sums a Gather.
type GatherStats struct {
	Hosts, Failed int
	AgentBytes    int64
	Elapsed       time.Duration
}

// Gather connects to every host at once (bounded), installs and starts the
// agent, asks for its facts and closes. A host that fails is reported in its
// Result while the others go on.
func Gather(ctx context.Context, specs []Spec, o GatherOptions) ([]Result, GatherStats, error) {
	start := time.Now()
	if o.RunID == "" {
		o.RunID = "facts"
	}
	if o.Agents == nil {
		return nil, GatherStats{}, errors.New("gather facts: no agent binaries")
	}
	progress := func(h, s string) {
		if o.Progress != nil {
			o.Progress(h, s)
		}
	}
	dialers := map[string]*sshx.Dialer{}
	var dmu sync.Mutex
	dialer := func(kh string) (*sshx.Dialer, error) {
		dmu.Lock()
		defer dmu.Unlock()
		if d := dialers[kh]; d != nil {
			return d, nil
		}
		so := o.SSH
		so.KnownHosts = append([]string(nil), o.SSH.KnownHosts...)
		if kh != "" {
			// A lab's file: read only, and only for hosts the user's
			// files have no entry for (as in run.SSHConnector).
			so.LabKnownHosts = append([]string{sshx.ExpandHome(kh)}, o.SSH.LabKnownHosts...)
		}
		d, err := sshx.NewDialer(so)
		if err != nil {
			return nil, err
		}
		dialers[kh] = d
		return d, nil
	}
	defer func() {
		for _, d := range dialers {
			d.Close()
		}
	}()
	res := make([]Result, len(specs))
	var sent atomic.Int64
	sshx.ForEach(ctx, len(specs), o.Parallel, func(ctx context.Context, i int) {
		s := specs[i]
		r := &res[i]
		r.Name = s.Target.Name
		err := func() error {
			d, err := dialer(s.KnownHosts)
			if err != nil {
				return err
			}
			c, err := d.Dial(ctx, s.Target)
			if err != nil {
				return err
			}
			defer c.Close()
			progress(r.Name, "connected")
			a, inst, err := o.Agents.Open(ctx, c, StartOptions{Host: r.Name, RunID: o.RunID, Become: s.Become, Keep: true, CallTimeout: o.CallTimeout, Mask: o.Mask})
			if inst != nil {
				r.Sent = inst.Sent
				sent.Add(inst.Sent)
			}
			if err != nil {
				return err
			}
			progress(r.Name, "installed")
			defer a.Close()
			r.Hello = a.Hello
			f, err := rpc.Call(ctx, a.RPC(), rpc.Facts, FactsParams(o.RefreshFacts, o.Packages))
			if err != nil {
				return err
			}
			r.Facts = &f
			if o.Then != nil {
				o.Then(ctx, r.Name, a, &f)
				r.Facts = nil
			}
			return nil
		}()
		if err != nil {
			var ce *CallError
			if errors.As(err, &ce) || errors.Is(err, ErrAgentLost) {
				r.Err = err // already names the host
			} else {
				r.Err = fmt.Errorf("host %q: %w", r.Name, err)
			}
			progress(r.Name, "failed")
			return
		}
		progress(r.Name, "done")
	})
	st := GatherStats{Hosts: len(specs), AgentBytes: sent.Load(), Elapsed: time.Since(start)}
	for _, r := range res {
		if r.Err != nil {
			st.Failed++
		}
	}
	return res, st, nil
}
