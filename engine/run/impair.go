package run

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/engine/plan"
	"github.com/rlab-dev/rlab/engine/results"
	"github.com/rlab-dev/rlab/steps"
)

// Link impairments in the run. An impairment is a window, as a capture is:
// whole-run ones are applied in their own phase after the captures start
// and removed at teardown; one scoped with `during` is applied just before
// the first workload the plan makes wait for it and removed after the last
// one its remove step waits for. A workload whose impairment could not be
// applied is skipped, never run unimpaired: its numbers would be read as
// the impaired ones. Every window is removed again at teardown (also on
// Ctrl-C), and the agent removes what it set when its controller goes.

// impairWindow is an impairment and the workloads it covers (none: the
// whole run).
type impairWindow struct {
	*plan.WindowPlan // the plan's impairment as it is
	op               *steps.Impair
	during           []*workloadNode // the plan's During
	// inForce are the workloads it is in force during (the plan's
	// Covers): during, or for a whole-run one those on its host.
	inForce []*workloadNode

	mu        sync.Mutex
	started   bool
	err       error
	reported  bool // err is among the run's errors
	remaining int
}

// impairParams turns the lab's netem into the agent's parameters.
func impairParams(n lab.Netem) proto.ImpairParams {
	return proto.ImpairParams{
		DelayUs: uint32(n.Delay / time.Microsecond), JitterUs: uint32(n.Jitter / time.Microsecond),
		Loss: n.Loss, Duplicate: n.Duplicate, Reorder: n.Reorder, Corrupt: n.Corrupt, RateBytes: n.RateBytes,
		PerPacket: n.PerPacket,
	}
}

func (w *impairWindow) onHost() string { return w.op.Host }
func (w *impairWindow) whole() bool    { return len(w.during) == 0 }

func (w *impairWindow) start(ctx context.Context, r *runner) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started {
		return w.err
	}
	w.started = true
	w.err = r.apply(ctx, w.op, w.op.Host, "", w.Start...)
	return w.err
}

// applyImpairs applies the scoped impairments of workload n before it runs.
func (r *runner) applyImpairs(ctx context.Context, n *workloadNode) error {
	for _, w := range n.impairs {
		if err := w.start(ctx, r); err != nil {
			w.mu.Lock()
			first := !w.reported
			w.reported = true
			w.mu.Unlock()
			if first {
				r.addErr(&infraError{err})
			}
			return err
		}
	}
	return nil
}

// finishImpairs is called after workload n (run or skipped); the last
// workload of a window removes its impairment.
func (r *runner) finishImpairs(ctx context.Context, n *workloadNode) {
	for _, w := range n.impairs {
		w.mu.Lock()
		w.remaining--
		last := w.remaining == 0
		w.mu.Unlock()
		if last {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.opts.StopTimeout)
			w.stop(cctx, r)
			cancel()
		}
	}
}

func (w *impairWindow) stop(ctx context.Context, r *runner) {
	w.mu.Lock()
	started := w.started
	w.mu.Unlock()
	if !started {
		return
	}
	start := time.Now()
	err := w.op.Undo(ctx, r.env) // idempotent
	ev := Event{Type: "step.end", Step: "remove " + w.op.Describe(), Host: w.op.Host, Status: "ok", Seconds: time.Since(start).Seconds(), IDs: w.Stop}
	if err != nil {
		ev.Status, ev.Error = "failed", err.Error()
		r.addErr(&infraError{err})
	}
	r.emit(ev)
}

// skipUnimpaired records that workload n did not run because its
// impairment could not be applied.
func (r *runner) skipUnimpaired(ctx context.Context, n *workloadNode, err error) {
	reason := fmt.Sprintf("not run: its impairment is not in force: %v", err)
	n.mu.Lock()
	n.skipped = reason
	n.mu.Unlock()
	r.emit(Event{Type: "step.end", Step: n.op.Describe(), Workload: n.Workload.Name, Status: steps.StatusSkipped, Error: reason})
}

// tagImpairs marks the samples of workload n with the impairments that were
// in force while it ran (metadata extra "impair" with netdev and host, and
// impair_loss in percent for the loss sweep chart), as the agent confirmed them.
func (r *runner) tagImpairs(n *workloadNode, o *steps.Outcome) {
	var texts []string
	loss := -1.0
	for _, w := range r.impairs {
		if !w.covers(n) || w.op.Applied() == nil {
			continue
		}
		texts = append(texts, w.Impair.Name+": "+w.op.Text+" on "+w.op.Netdev+" of "+w.op.Host)
		loss = max(loss, w.Impair.Netem.Loss)
	}
	if len(texts) == 0 {
		return
	}
	for i := range o.Samples {
		m := &o.Samples[i].Meta
		if m.Extra == nil {
			m.Extra = map[string]string{}
		}
		m.Extra[results.ImpairExtra] = strings.Join(texts, "; ")
		l := loss
		m.ImpairLoss = &l
	}
}

// covers reports whether the window was in force during n, as the plan
// says.
func (w *impairWindow) covers(n *workloadNode) bool { return slices.Contains(w.inForce, n) }
