package steps

import (
	"context"
	"errors"
	"fmt"
	"github.com/rlab-dev/rlab/kinds"
	"time"
)

// The one workload prologue: every workload kind runs its trials (one per
// size × repeat) through runTrials, which gives each trial its own timeout,
// stops at the first failure, says at once when a trial timed out, and sets
// the outcome's status. exec, tcp and the two-sided kinds each had a copy.

// Trial is one run of a workload's tool (kinds.Trial): one size × one
// repeat.
type Trial = kinds.Trial

// RunPlanned runs the plan's trials of w (Workload.Trials) through
// RunTrials; a workload without them fails, naming it: an op runs what
// the plan resolved, never argv of its own.
func RunPlanned(ctx context.Context, env *Env, out *Outcome, w *Workload, run func(ctx context.Context, u kinds.Planned) error) error {
	ps := w.Trials
	if ps == nil {
		return finish(out, w, errors.New("no planned trials (engine/plan resolves them: WorkloadPlan.Trials)"))
	}
	us := make([]Trial, len(ps))
	for i, p := range ps {
		us[i] = p.Trial
	}
	// Each trial runs its own plan, by position: a trial's N numbers its
	// port and handles, not its place in ps.
	return runTrials(ctx, env, out, w, us, func(ctx context.Context, i int, _ Trial) error {
		return run(ctx, ps[i])
	})
}

// RunTrials is the prologue every workload kind shares. out is reset and
// filled with the start, end and status; run appends its records and
// samples to it.
func RunTrials(ctx context.Context, env *Env, out *Outcome, w *Workload, us []Trial, run func(ctx context.Context, u Trial) error) error {
	return runTrials(ctx, env, out, w, us, func(ctx context.Context, _ int, u Trial) error { return run(ctx, u) })
}

// runTrials is RunTrials, which tells run each trial's position in us.
func runTrials(ctx context.Context, env *Env, out *Outcome, w *Workload, us []Trial, run func(ctx context.Context, i int, u Trial) error) error {
	*out = Outcome{Workload: w.Name, Tool: w.Tool, Start: time.Now()}
	var err error
	for i, u := range us {
		if env.TrialStart != nil {
			env.TrialStart(w.Name, fmt.Sprintf("%s (%d/%d)", u, i+1, len(us)))
		}
		if err = runTrial(ctx, env, w, u, len(us) > 1, func(ctx context.Context, u Trial) error { return run(ctx, i, u) }); err != nil {
			break
		}
	}
	if cause := context.Cause(ctx); err != nil && cause != nil && cause != ctx.Err() {
		// Stopped from outside for a reason (the engine found the data
		// link down): that reason comes first.
		err = fmt.Errorf("%w: %w", cause, err)
	}
	out.End = time.Now()
	return finish(out, w, err)
}

// runTrial runs one trial under the workload's timeout: the timeout bounds
// each size and repeat, not the whole workload. named: the workload has
// several trials, so messages say which one.
func runTrial(ctx context.Context, env *Env, w *Workload, u Trial, named bool, run func(ctx context.Context, u Trial) error) error {
	uctx := ctx
	if w.Timeout > 0 {
		var cancel context.CancelFunc
		uctx, cancel = context.WithTimeout(ctx, w.Timeout)
		defer cancel()
	}
	err := run(uctx, u)
	if err == nil || ctx.Err() != nil {
		return err // done, or the whole run was stopped: not this trial's timeout
	}
	if !errors.Is(err, ErrTimedOut) && !errors.Is(uctx.Err(), context.DeadlineExceeded) {
		return err
	}
	if !errors.Is(err, ErrTimedOut) {
		err = fmt.Errorf("%w after %s: %w", ErrTimedOut, w.Timeout, err)
	}
	if !named {
		env.notify(w.Name, fmt.Sprintf("workload %s: timed out after %s", w.Name, w.Timeout))
		return err
	}
	env.notify(w.Name, fmt.Sprintf("workload %s: %s timed out after %s", w.Name, u, w.Timeout))
	return fmt.Errorf("%s: %w", u, err)
}

// finish sets a workload outcome's status from the error its trials ended
// with.
func finish(out *Outcome, w *Workload, err error) error {
	switch {
	case err == nil:
		out.Status = StatusOK
		return nil
	case errors.Is(err, ErrTimedOut):
		out.Status = StatusTimedOut
	default:
		out.Status = StatusFailed
	}
	err = fmt.Errorf("workload %q (%s): %w", w.Name, w.Tool, err)
	out.Error = err.Error()
	return err
}
