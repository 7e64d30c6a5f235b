package run

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc"
	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/engine/plan"
	"github.com/rlab-dev/rlab/engine/preflight"
	"github.com/rlab-dev/rlab/engine/results"
	"github.com/rlab-dev/rlab/engine/runstate"
	"github.com/rlab-dev/rlab/internal/fanout"
	"github.com/rlab-dev/rlab/steps"
)

// stepWorkload is the plan's workload for the steps package: the shared
// part (kinds.Workload) and the plan's resolved trials (what its op runs,
// placeholders filled) whole, the host and rxe references as names, and
// for a tcp workload the address its client dials (the plan's Dial,
// resolved once).
func stepWorkload(wp *plan.WorkloadPlan) *steps.Workload {
	w := wp.Workload
	sw := &steps.Workload{Workload: w.Workload, Trials: wp.Trials}
	if w.ServerHost != nil {
		sw.ServerHost = w.ServerHost.Name
		if d := wp.Dial; d != nil { // tcp; RDMA tools dial their server rxe
			sw.ServerAddr, sw.DialWhy = d.Addr, d.Why
			if d.Device != nil {
				sw.DialDevice = d.Device.Name
			}
		}
	}
	if w.ClientHost != nil {
		sw.ClientHost = w.ClientHost.Name
	}
	if w.Host != nil {
		sw.Host = w.Host.Name
	}
	if w.ServerDevice != nil {
		sw.ServerDevice = w.ServerDevice.Name
	}
	if w.ClientDevice != nil {
		sw.ClientDevice = w.ClientDevice.Name
	}
	return sw
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	if err := results.WriteFileSynced(path, append(b, '\n')); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	return nil
}

// writeFacts writes a host's facts with the lab's sensitive values
// redacted: the host names its login user (user = var.login), its work
// dir under that user's home and its RDMA devices (one an rdma block
// names by a sensitive value), and facts.json kept them as they came
// (attack round 14). Every text of the JSON is redacted, keys included;
// numbers stay numbers. The run keeps using the facts as they came.
func (r *runner) writeFacts(path string, f *proto.Facts) error {
	red := newRedactor(r.lab.Sensitive)
	if red.Longest() == 0 {
		return writeJSON(path, f)
	}
	b, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	return writeJSON(path, lab.RedactJSON(red, v))
}

// bootVMs starts the lab's local VM hosts and points their targets at them.
func (r *runner) bootVMs(ctx context.Context) error {
	var vmHosts []*lab.Host
	for _, h := range r.hosts {
		if h.VM {
			vmHosts = append(vmHosts, h.Ref)
		}
	}
	if len(vmHosts) == 0 {
		return nil
	}
	if r.opts.VMs == nil {
		return errors.New("boot local VM hosts: this rlab cannot start VMs")
	}
	set, err := r.opts.VMs.Boot(ctx, vmHosts, r.dir)
	if set != nil {
		r.vms = set
		if b, serr := set.State(); serr == nil {
			r.journal.Update(func(st *runstate.State) { st.VMs = b })
		}
	}
	if err != nil {
		return fmt.Errorf("boot local VM hosts: %w", err)
	}
	r.discard = map[string]bool{}
	for _, h := range vmHosts {
		if _, ok := set.Endpoint(h.Name); ok {
			r.discard[h.Name] = true
		}
	}
	r.noteEmulated(set) // discard.go
	return r.journal.Update(func(st *runstate.State) {
		for i := range st.Hosts {
			if ep, ok := set.Endpoint(st.Hosts[i].Name); ok {
				ep.Name, ep.Slug, ep.VM = st.Hosts[i].Name, st.Hosts[i].Slug, true
				st.Hosts[i] = ep
			}
		}
	})
}

// conn wraps a Host so that transport failures (anything but an agent's
// answer) count as infrastructure errors and mark the host lost.
type conn struct {
	Host
	r *runner
}

func (c *conn) wrap(ctx context.Context, err error) error {
	if err == nil || ctx.Err() != nil {
		return err
	}
	var pe *proto.Error
	if errors.As(err, &pe) {
		return err
	}
	c.r.mu.Lock()
	if _, ok := c.r.lost[c.Name()]; !ok {
		c.r.lost[c.Name()] = err
	}
	c.r.mu.Unlock()
	return &infraError{err}
}

// Lost and LostErr are the host's (steps.Lossy), when it says; else Lost
// is never closed.
func (c *conn) Lost() <-chan struct{} {
	if l, ok := c.Host.(steps.Lossy); ok {
		return l.Lost()
	}
	return nil
}

func (c *conn) LostErr() error {
	if l, ok := c.Host.(steps.Lossy); ok {
		return l.LostErr()
	}
	return nil
}

func (c *conn) Send(ctx context.Context, req *rpc.Request) error {
	return c.wrap(ctx, c.Host.Send(ctx, req))
}

func (c *conn) Pull(ctx context.Context, files []proto.FileInfo, dst string) error {
	return c.wrap(ctx, c.Host.Pull(ctx, files, dst))
}

// connectAll connects every host in parallel, reads its facts and saves
// them. A host that cannot be reached is reported (exit 2) and its
// workloads are skipped; the other hosts go on, so one dead machine of a
// class does not stop the other pairs.
func (r *runner) connectAll(ctx context.Context) error {
	targets := map[string]Target{}
	for _, sh := range r.journal.Snapshot().Hosts {
		targets[sh.Name] = Target{Host: sh}
	}
	var failed atomic.Int32
	fanout.Each(ctx, r.hosts, r.opts.Parallel, func(ctx context.Context, h *plan.HostPlan) error {
		t := targets[h.Name]
		t.Plan = h
		t.LogDir = filepath.Join(r.hostDir(h.Slug), "logs")
		t.Sensitive = r.lab.Sensitive
		start := time.Now()
		ids := r.plan.IDs(h.Name, "", plan.Connect, plan.ShipAgent)
		r.emit(Event{Type: "step.start", Step: "connect", Host: h.Name, IDs: ids})
		err := os.MkdirAll(t.LogDir, 0o700)
		if err == nil {
			err = r.connect(ctx, h, t)
		}
		ev := Event{Type: "step.end", Step: "connect", Host: h.Name, Status: "ok", Seconds: time.Since(start).Seconds(), IDs: ids}
		if err == nil {
			ev.Message = r.agentArrival(h.Name)
		}
		if err != nil {
			ev.Status, ev.Error = "failed", err.Error()
		}
		r.emit(ev)
		if err != nil && ctx.Err() == nil {
			failed.Add(1)
			r.markLost(h.Name, err)
			r.addErr(&infraError{err})
		}
		return nil
	})
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if n := int(failed.Load()); n > 0 && n == len(r.hosts) {
		return errAllUnreachable
	}
	return nil
}

// agentArrival is how the agent of a connected host got there
// (sshHost.AgentArrival), or "" when its connector does not say.
func (r *runner) agentArrival(host string) string {
	r.mu.Lock()
	c := r.conns[host]
	r.mu.Unlock()
	if cw, ok := c.(*conn); ok {
		c = cw.Host
	}
	if a, ok := c.(interface{ AgentArrival() string }); ok {
		return a.AgentArrival()
	}
	return ""
}

// errAllUnreachable stops a run no host of which could be reached (each
// host's error is already reported).
var errAllUnreachable = errors.New("no host could be reached")

// markLost records that a host cannot be used any more.
func (r *runner) markLost(host string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.lost[host]; !ok {
		r.lost[host] = err
	}
}

func (r *runner) isLost(host string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lost[host] != nil
}

func (r *runner) connect(ctx context.Context, h *plan.HostPlan, t Target) error {
	c, err := r.opts.Connector.Connect(ctx, t, r.runID)
	if err != nil {
		return fmt.Errorf("connect to host %q (%s): %w", h.Name, t.Address, err)
	}
	cw := &conn{Host: c, r: r}
	r.mu.Lock()
	r.conns[h.Name] = cw
	r.env.Hosts[h.Name] = cw
	r.mu.Unlock()
	f, err := rpc.Invoke(ctx, cw, rpc.Facts, factsRequest(h))
	if err != nil {
		return fmt.Errorf("read facts of host %q: %w", h.Name, err)
	}
	r.mu.Lock()
	r.env.Facts[h.Name] = &f
	r.mu.Unlock()
	r.armWatchdog(ctx, h.Name, c) // after facts: an agent stuck from the start is named by facts
	hd := r.hostDir(h.Slug)
	if err := os.MkdirAll(filepath.Join(hd, "logs"), 0o700); err != nil {
		return fmt.Errorf("create host folder: %w", err)
	}
	if err := r.writeFacts(filepath.Join(hd, "facts.json"), &f); err != nil {
		return err
	}
	pid := 0
	var start *proto.ProcIdentity
	if hp, ok := c.(interface{ Hello() proto.Hello }); ok {
		pid = hp.Hello().PID
		if id := hp.Hello().ProcIdentity; id.StartTicks != 0 && id.Check() == nil {
			start = &id
		}
	}
	return r.journal.NoteHost(func(st *runstate.State) {
		for i := range st.Hosts {
			if st.Hosts[i].Name == h.Name {
				st.Hosts[i].Connected, st.Hosts[i].WorkDir, st.Hosts[i].AgentPID = true, f.WorkDir, pid
				st.Hosts[i].AgentStart = start
			}
		}
	})
}

func (r *runner) preflight(ctx context.Context) error {
	check := r.opts.Preflight
	if check == nil {
		check = preflight.Check
	}
	probs := check(r.plan.Selected, r.env.Facts)
	if len(probs) == 0 {
		return nil
	}
	text := func(ps []preflight.Problem) []string {
		out := make([]string, len(ps))
		for i, p := range ps {
			out[i] = p.String()
		}
		return out
	}
	if len(r.plan.Students) > 0 {
		// A class lab goes on with the students whose hosts are fine when
		// every problem names one of the run's hosts.
		ours := make(map[string]bool, len(r.hosts))
		for _, h := range r.hosts {
			ours[h.Name] = true
		}
		byHost := map[string][]preflight.Problem{}
		for _, p := range probs {
			if !ours[p.Host] {
				byHost = nil
				break
			}
			byHost[p.Host] = append(byHost[p.Host], p)
		}
		if byHost != nil {
			for _, h := range r.hosts {
				if ps := byHost[h.Name]; len(ps) > 0 {
					r.breakHost(h.Name, fmt.Errorf("preflight of host %q found %d problem(s): %s", h.Name, len(ps), strings.Join(text(ps), "; ")))
				}
			}
			return nil
		}
	}
	return fmt.Errorf("preflight found %d problem(s):\n  %s", len(probs), strings.Join(text(probs), "\n  "))
}

func (r *runner) createDevices(ctx context.Context) error {
	return fanout.Each(ctx, r.rxes, r.opts.Parallel, func(ctx context.Context, x *steps.Device) error {
		if r.isLost(x.Host) || r.hostProblem(x.Host) != nil {
			return nil // its workloads are skipped
		}
		err := r.apply(ctx, x, x.Host, "", r.plan.IDs(x.Host, x.Name, plan.CreateDevice)...)
		if err != nil && len(r.plan.Students) > 0 && ctx.Err() == nil {
			// One student's device must not stop the class.
			r.breakHost(x.Host, err)
			return nil
		}
		return err
	})
}

// apply runs one step with its events; ids are the plan steps it runs.
func (r *runner) apply(ctx context.Context, s steps.Op, host, workload string, ids ...string) error {
	start := time.Now()
	r.emit(Event{Type: "step.start", Step: s.Describe(), Host: host, Workload: workload, IDs: ids})
	err := s.Apply(ctx, r.env)
	ev := Event{Type: "step.end", Step: s.Describe(), Host: host, Workload: workload, Status: "ok", Seconds: time.Since(start).Seconds(), IDs: ids}
	if o, ok := s.(steps.Outcomer); ok && o.Outcome().Status != "" {
		ev.Status = o.Outcome().Status
	}
	if err != nil {
		if ev.Status == "ok" {
			ev.Status = "failed"
		}
		ev.Error = err.Error()
	}
	r.emit(ev)
	return err
}

// captureWindow is a capture and the workloads it covers (none: the whole
// run).
type captureWindow struct {
	// The plan's capture as it is: its start and stop steps, the file it
	// makes, the workloads it covers.
	*plan.WindowPlan
	op     *steps.Capture
	during []*workloadNode // the plan's During: the workloads its stop waits for

	mu        sync.Mutex
	started   bool
	err       error
	remaining int
}

// window is a capture or an impairment: applied before the workloads it
// covers and undone after the last one (none: the whole run, applied in
// its own set-up phase and undone at teardown).
type window interface {
	onHost() string
	whole() bool
	start(ctx context.Context, r *runner) error
	stop(ctx context.Context, r *runner)
}

func (c *captureWindow) onHost() string { return c.op.Host }
func (c *captureWindow) whole() bool    { return len(c.during) == 0 }

// startWhole starts the whole-run windows of ws on every host at once (a
// set-up phase).
func startWhole[W window](ctx context.Context, r *runner, ws []W) error {
	var whole []W
	for _, w := range ws {
		if w.whole() && !r.isLost(w.onHost()) {
			whole = append(whole, w)
		}
	}
	return fanout.Each(ctx, whole, r.opts.Parallel, func(ctx context.Context, w W) error {
		if r.hostProblem(w.onHost()) != nil {
			return nil // its workloads are skipped
		}
		err := w.start(ctx, r)
		if err != nil && len(r.plan.Students) > 0 && ctx.Err() == nil {
			r.breakHost(w.onHost(), err) // one student's capture or link must not stop the class
			return nil
		}
		return err
	})
}

// stopAll undoes every window of ws still in force (teardown).
func stopAll[W window](ctx context.Context, r *runner, ws []W) {
	fanout.Each(ctx, ws, r.opts.Parallel, func(ctx context.Context, w W) error {
		w.stop(ctx, r) // idempotent: windows already stopped are no-ops
		return nil
	})
}

func (c *captureWindow) start(ctx context.Context, r *runner) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started {
		return c.err
	}
	c.started = true
	c.err = r.apply(ctx, c.op, c.op.Host, "", c.Start...)
	return c.err
}

// finished is called after each covered workload; the last one stops the
// capture.
func (c *captureWindow) finished(ctx context.Context, r *runner) {
	c.mu.Lock()
	c.remaining--
	last := c.remaining == 0
	c.mu.Unlock()
	if last {
		c.stop(ctx, r)
	}
}

func (c *captureWindow) stop(ctx context.Context, r *runner) {
	start := time.Now()
	err := c.op.Undo(ctx, r.env)
	ev := Event{Type: "step.end", Step: "stop " + c.op.Describe(), Host: c.op.Host, Status: "ok", Seconds: time.Since(start).Seconds(), IDs: c.Stop}
	if err != nil {
		ev.Status, ev.Error = "failed", err.Error()
		r.addErr(&infraError{err})
	}
	r.emit(ev)
}

// fetchAll pulls every connected host's work dir into hosts/<slug>/.
func (r *runner) fetchAll(ctx context.Context) {
	fanout.Each(ctx, r.hosts, r.opts.Parallel, func(ctx context.Context, h *plan.HostPlan) error {
		r.mu.Lock()
		_, ok := r.conns[h.Name]
		_, lost := r.lost[h.Name]
		r.mu.Unlock()
		if !ok || lost {
			return nil
		}
		// Its captures' files are captures because its capture steps
		// made them (steps.Env.Made), not by their names.
		f := &steps.Fetch{Host: h.Name, Dir: r.hostDir(h.Slug)}
		err := r.apply(ctx, f, h.Name, "", r.plan.IDs(h.Name, "", plan.Fetch)...)
		if err != nil {
			r.addErr(&infraError{err})
		}
		// What it pulled is carried to results.json (results.go): its
		// artifacts, with paths from the run directory, not looked for
		// again on disk.
		r.mu.Lock()
		for i, a := range f.Artifacts {
			a.Path = path.Join("hosts", h.Slug, a.Path)
			r.artifacts = append(r.artifacts, a)
			if r.pulled[h.Name] == nil {
				r.pulled[h.Name] = map[string]string{}
			}
			r.pulled[h.Name][f.Pulled[i].Path] = a.Path
		}
		r.mu.Unlock()
		if !r.discard[h.Name] { // a discarded VM's work dir goes with it
			r.removeWorkDir(ctx, h.Name, err)
		}
		return nil
	})
}

// teardown stops what is left, deletes the rxe devices this run created
// (unless kept), asks each agent to clean up, closes the sessions and stops
// the VMs; everything is journaled.
func (r *runner) teardown(ctx context.Context) {
	ids := r.plan.IDs("", "", plan.Teardown)
	r.emit(Event{Type: "step.start", Step: "teardown", IDs: ids})
	r.noteDiscarded() // discard.go
	for _, n := range r.workloads {
		if r.allDiscarded(n.Hosts) {
			continue
		}
		if err := n.op.Undo(ctx, r.env); err != nil {
			r.log.Warn("teardown: stop workload processes", "workload", n.Workload.Name, "err", err)
		}
	}
	fanout.Each(ctx, r.rxes, r.opts.Parallel, func(ctx context.Context, x *steps.Device) error {
		if r.discard[x.Host] {
			return nil
		}
		if err := x.Undo(ctx, r.env); err != nil {
			r.addErr(&infraError{fmt.Errorf("teardown: %w", err)})
		}
		return nil
	})
	var keep []string
	if r.opts.Keep {
		for _, x := range r.rxes {
			keep = append(keep, x.Device)
		}
	} else {
		for _, x := range r.rxes {
			if x.Keep {
				keep = append(keep, x.Device)
			}
		}
	}
	// Without a keep list every agent is told at once that its input ended
	// (no round trip: it undoes what the run made and exits on EOF), so a
	// class's agents clean up and exit together; the waves below then
	// wait for each session to end instead of ending them 64 at a time.
	if len(keep) == 0 {
		for _, h := range r.hosts {
			r.mu.Lock()
			c, ok := r.conns[h.Name]
			r.mu.Unlock()
			if !ok || r.discard[h.Name] {
				continue
			}
			if cw, ok := c.(*conn); ok {
				c = cw.Host
			}
			if e, ok := c.(inputEnder); ok {
				e.EndInput()
			}
		}
	}
	fanout.Each(ctx, r.hosts, r.opts.Parallel, func(ctx context.Context, h *plan.HostPlan) error {
		r.mu.Lock()
		c, ok := r.conns[h.Name]
		_, lost := r.lost[h.Name]
		r.mu.Unlock()
		if !ok {
			return nil
		}
		if r.discard[h.Name] {
			abandon(c, r.log, h.Name) // discard.go
			return nil
		}
		// Closing the session makes the agent clean up (stop what runs,
		// delete the rxe devices it created); an explicit cleanup call is
		// needed only to tell it what to keep.
		if !lost && len(keep) > 0 {
			if _, err := rpc.Invoke(ctx, c, rpc.Cleanup, proto.CleanupParams{Keep: keep}); err != nil {
				r.log.Warn("teardown: agent cleanup", "host", h.Name, "err", err)
			}
		}
		if err := c.Close(); err != nil {
			r.log.Debug("teardown: close agent session", "host", h.Name, "err", err)
		}
		return nil
	})
	vmsDown := false
	if r.vms != nil {
		if err := r.vms.Shutdown(ctx); err != nil {
			r.addErr(&infraError{fmt.Errorf("teardown: stop VMs: %w", err)})
		} else {
			vmsDown = true
		}
	}
	now := r.opts.Now().UTC()
	r.journal.Update(func(st *runstate.State) {
		for i := range st.Effects {
			e := &st.Effects[i]
			if r.discard[e.Host] {
				// Gone with the VM once it stopped; else `rlab down`
				// stops it and says so.
				e.Undone = e.Undone || vmsDown
				continue
			}
			// The agents' cleanup stopped every process and capture and
			// deleted the rxe devices they created.
			if e.Type != "rxe" || (e.Created && !e.Keep && !r.opts.Keep) {
				if h := r.conns[e.Host]; h != nil && r.lost[e.Host] == nil {
					e.Undone = true
				}
			}
		}
		st.TornDown = &now
	})
	r.emit(Event{Type: "step.end", Step: "teardown", Status: "ok", IDs: ids})
}

// inputEnder is a Host whose agent can be told its input ended without
// waiting for it to exit (teardown; Close then waits).
type inputEnder interface{ EndInput() }
