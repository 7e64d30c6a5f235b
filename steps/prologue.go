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

// Trial is one run of a workload: one size × repeat.
type Trial struct {
	Size   int64 // 0: the tool's default size, or a kind without sizes
	Repeat int
	N      int // 0-based position over all trials, for ports and handles
}

// String names the trial for messages: "size 1MiB, repeat 2".
func (u Trial) String() string {
	if u.Size == 0 {
		return fmt.Sprintf("repeat %d", u.Repeat+1)
	}
	return fmt.Sprintf("size %s, repeat %d", kinds.SizeText(u.Size), u.Repeat+1)
}

// Trials lists w's runs in order: each size (sizes nil: one unsized run) ×
// each repeat.
func Trials(w *Workload, sizes []int64) []Trial {
	if len(sizes) == 0 {
		sizes = []int64{0}
	}
	var us []Trial
	for _, size := range sizes {
		for rep := 0; rep < repeats(w); rep++ {
			us = append(us, Trial{Size: size, Repeat: rep, N: len(us)})
		}
	}
	return us
}

// RunTrials is the prologue every workload kind shares. out is reset and
// filled with the start, end and status; run appends its records and
// samples to it.
func RunTrials(ctx context.Context, env *Env, out *Outcome, w *Workload, us []Trial, run func(ctx context.Context, u Trial) error) error {
	*out = Outcome{Workload: w.Name, Tool: w.Tool, Start: time.Now()}
	var err error
	for i, u := range us {
		if env.TrialStart != nil {
			env.TrialStart(w.Name, fmt.Sprintf("%s (%d/%d)", u, i+1, len(us)))
		}
		if err = runTrial(ctx, env, w, u, len(us) > 1, run); err != nil {
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
