package run

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/rlab-dev/rlab/agent/rpc"
	"github.com/rlab-dev/rlab/engine/plan"
	"github.com/rlab-dev/rlab/engine/results"
	"github.com/rlab-dev/rlab/engine/rundir"
	"github.com/rlab-dev/rlab/steps"
)

// workloadNode is one workload in the run's dependency graph.
type workloadNode struct {
	// The plan's workload as it is: its lab workload, its steps, the
	// hosts they run on (whose loss skips it) and its probe port.
	*plan.WorkloadPlan
	spec     *steps.Workload
	op       steps.Op
	deps     []*workloadNode  // the workloads its plan steps depend on (After)
	captures []*captureWindow // scoped captures that cover it
	impairs  []*impairWindow  // scoped impairments that cover it (impair.go)
	done     chan struct{}

	mu      sync.Mutex
	skipped string // why it did not run
	// counterNotes: its kernel counters that could not be read, are absent
	// or went backwards (counters.go).
	counterNotes []results.CounterNote
}

func (n *workloadNode) outcome() *steps.Outcome {
	o := n.op.(steps.Outcomer).Outcome()
	n.mu.Lock()
	defer n.mu.Unlock()
	if o.Status == "" {
		reason := n.skipped
		if reason == "" {
			reason = "not run: the run stopped before its workloads"
		}
		o.Workload, o.Tool, o.Status, o.Error = n.Workload.Name, n.Workload.Tool, steps.StatusSkipped, reason
	}
	return o
}

// runWorkloads runs every workload once the workloads its plan steps depend
// on are done (schedule.go), at most Parallel at once.
func (r *runner) runWorkloads(ctx context.Context) {
	sem := make(chan struct{}, r.opts.Parallel)
	var wg sync.WaitGroup
	for _, n := range r.workloads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(n.done)
			for _, d := range n.deps {
				select {
				case <-d.done:
				case <-ctx.Done():
				}
			}
			if reason := r.skipReason(ctx, n); reason != "" {
				n.mu.Lock()
				n.skipped = reason
				n.mu.Unlock()
				r.emit(Event{Type: "step.end", Step: n.op.Describe(), Workload: n.Workload.Name, Status: steps.StatusSkipped, Error: reason})
				for _, c := range n.captures {
					cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.opts.StopTimeout)
					c.finished(cctx, r)
					cancel()
				}
				r.finishImpairs(ctx, n) // impair.go
				return
			}
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				n.mu.Lock()
				n.skipped = "interrupted before it started"
				n.mu.Unlock()
				return
			}
			defer func() { <-sem }()
			r.runWorkload(ctx, n)
		}()
	}
	wg.Wait()
}

// skipReason says why a workload cannot run: interrupted, or one of its
// hosts' agent is lost.
func (r *runner) skipReason(ctx context.Context, n *workloadNode) string {
	if ctx.Err() != nil {
		return "interrupted before it started"
	}
	if reason := r.linkDown(n); reason != "" {
		return reason
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, h := range n.Hosts {
		if err := r.lost[h.Name]; err != nil {
			return fmt.Sprintf("host %q lost: %v", h.Name, err)
		}
		if err := r.broken[h.Name]; err != nil {
			return fmt.Sprintf("host %q not prepared: %v", h.Name, err)
		}
	}
	return ""
}

func (r *runner) runWorkload(ctx context.Context, n *workloadNode) {
	defer r.finishImpairs(ctx, n) // impair.go: after the captures' stops below
	if err := r.applyImpairs(ctx, n); err != nil {
		r.skipUnimpaired(ctx, n, err)
		for _, c := range n.captures {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.opts.StopTimeout)
			c.finished(cctx, r)
			cancel()
		}
		return
	}
	for _, c := range n.captures {
		if err := c.start(ctx, r); err != nil {
			r.addErr(&infraError{err})
		}
	}
	// While it runs, its data link is watched: a dead link stops it at
	// once rather than at its timeout (link.go).
	wctx, stop := context.WithCancelCause(ctx)
	if l, ok := r.linkOf(n); ok {
		go r.watchLink(wctx, stop, l)
	}
	before := r.readCounters(ctx, n, nil)
	err := r.apply(wctx, n.op, "", n.Workload.Name, n.Steps...)
	stop(nil)
	if ie := (*infraError)(nil); errors.Is(err, rpc.ErrLost) && !errors.As(err, &ie) {
		// One of its hosts' agent was lost under it (runPair ends a
		// client's wait when its server's is): infrastructure, as a
		// call on a lost host is.
		err = &infraError{err}
	}
	r.readCounters(ctx, n, before)
	if err != nil {
		r.addErr(err)
	}
	// The processes of a failed run are stopped now, not at the end: the
	// next workload on these hosts needs them gone.
	// Clean-up runs even when ctx has ended, but each part is bounded: a host
	// that keeps its session up and never answers must not hang the run.
	bounded := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.WithoutCancel(ctx), r.opts.StopTimeout)
	}
	if err != nil {
		uctx, cancel := bounded()
		if uerr := n.op.Undo(uctx, r.env); uerr != nil {
			r.log.Warn("stop workload processes", "workload", n.Workload.Name, "err", uerr)
			if uctx.Err() != nil {
				// Its hosts did not answer a stop in time: give up on them
				// (their sessions are closed, so every later call fails
				// at once) rather than hang the run.
				for _, h := range n.Hosts {
					r.abandon(h.Name, fmt.Errorf("host %q did not answer a request to stop workload %q within %s", h.Name, n.Workload.Name, r.opts.StopTimeout))
				}
			}
		}
		cancel()
	}
	if err != nil && ctx.Err() == nil {
		// Did it fail because its data link died? Then the link is named
		// and the pair's later workloads are skipped.
		lctx, cancel := bounded()
		r.checkLinkAfter(lctx, n)
		cancel()
	}
	if errors.Is(err, steps.ErrTimedOut) {
		r.saveDmesg(context.WithoutCancel(ctx), n) // bounded inside
	}
	for _, c := range n.captures {
		cctx, cancel := bounded()
		c.finished(cctx, r)
		cancel()
	}
}

// saveDmesg keeps the kernel log tail of a hung workload's hosts in
// hosts/<slug>/logs/dmesg.<workload>.txt.
func (r *runner) saveDmesg(ctx context.Context, n *workloadNode) {
	ctx, cancel := context.WithTimeout(ctx, min(30*time.Second, r.opts.StopTimeout))
	defer cancel()
	for _, h := range n.Hosts {
		out, err := steps.DmesgTail(ctx, r.env, h.Name, "dmesg."+n.Workload.Slug, 200)
		if err != nil {
			out = fmt.Sprintf("(dmesg unavailable: %v)\n", err)
		}
		p := filepath.Join(r.hostDir(h.Slug), "logs", "dmesg."+n.Workload.Slug+".txt")
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err == nil {
			rundir.WriteFile(p, []byte(out))
		}
	}
}

// abandon marks a host lost and closes its agent session in the background,
// which fails every call still waiting on it.
func (r *runner) abandon(host string, err error) {
	r.markLost(host, err)
	r.addErr(&infraError{err})
	r.mu.Lock()
	c := r.conns[host]
	r.mu.Unlock()
	if c != nil {
		go c.Close()
	}
}

// readCounters reads the kernel counters of n's devices on its hosts (one
// call per host, the hosts at once): before it runs (before nil), and after
// it, when the deltas become samples of its outcome and what could not be
// read becomes its counter notes. A read is bounded, and made even when
// the run was interrupted: the counters are part of what happened.
func (r *runner) readCounters(ctx context.Context, n *workloadNode, before []steps.CounterReading) []steps.CounterReading {
	sides := steps.CounterSides(r.env, n.spec)
	if len(sides) == 0 {
		return nil
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), counterTimeout)
	defer cancel()
	got := steps.ReadCounters(cctx, r.env, sides)
	if before == nil {
		return got
	}
	ss, notes := steps.CounterSamples(n.spec, before, got)
	o := n.op.(steps.Outcomer).Outcome()
	o.Samples = append(o.Samples, ss...)
	n.mu.Lock()
	n.counterNotes = notes
	n.mu.Unlock()
	return got
}

// counterTimeout bounds one reading of a workload's counters.
const counterTimeout = time.Minute
