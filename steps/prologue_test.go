package steps

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/rlab-dev/rlab/kinds"
)

// TestRunUnits drives the one workload prologue: the timeout bounds each
// size × repeat (a fresh deadline per unit), the first failure stops the
// units after it, a timed-out unit is named at once through Env.Notify, and
// the outcome's status and error say what happened.
func TestRunUnits(t *testing.T) {
	const timeout = 20 * time.Millisecond
	hang := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	tests := []struct {
		name    string
		sizes   []int64
		repeat  int
		fail    map[int]func(ctx context.Context) error // by unit N
		ran     []string
		status  string
		errHas  string
		notices []string
	}{
		{
			name: "all ok", sizes: []int64{4096, 1 << 20}, repeat: 2,
			ran:    []string{"size 4KiB, repeat 1", "size 4KiB, repeat 2", "size 1MiB, repeat 1", "size 1MiB, repeat 2"},
			status: StatusOK,
		},
		{
			name: "a hung size times out alone and stops the rest", sizes: []int64{4096, 1 << 20, 4 << 20}, repeat: 1,
			fail:    map[int]func(context.Context) error{1: hang},
			ran:     []string{"size 4KiB, repeat 1", "size 1MiB, repeat 1"},
			status:  StatusTimedOut,
			errHas:  `workload "w" (ib_write_bw): size 1MiB, repeat 1: timed out after 20ms`,
			notices: []string{"w|workload w: size 1MiB, repeat 1 timed out after 20ms"},
		},
		{
			name: "an agent timeout counts as the unit's", repeat: 3,
			fail: map[int]func(context.Context) error{2: func(context.Context) error {
				return fmt.Errorf("%w: proc.wait: no exit", ErrTimedOut)
			}},
			ran:     []string{"repeat 1", "repeat 2", "repeat 3"},
			status:  StatusTimedOut,
			errHas:  "repeat 3: timed out: proc.wait: no exit",
			notices: []string{"w|workload w: repeat 3 timed out after 20ms"},
		},
		{
			name: "one unit: no unit named", repeat: 1,
			fail:    map[int]func(context.Context) error{0: hang},
			ran:     []string{"repeat 1"},
			status:  StatusTimedOut,
			errHas:  `workload "w" (ib_write_bw): timed out after 20ms: context deadline exceeded`,
			notices: []string{"w|workload w: timed out after 20ms"},
		},
		{
			name: "a failure is not a timeout", repeat: 2,
			fail:   map[int]func(context.Context) error{0: func(context.Context) error { return errors.New("exit 1") }},
			ran:    []string{"repeat 1"},
			status: StatusFailed,
			errHas: `workload "w" (ib_write_bw): exit 1`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var notices, started []string
			env := &Env{Notify: func(w, msg string) { notices = append(notices, w+"|"+msg) },
				TrialStart: func(w, u string) { started = append(started, u) }}
			w := &Workload{Workload: kinds.Workload{Name: "w", Tool: "ib_write_bw", Options: kinds.Options{Timeout: timeout, Repeat: tt.repeat}}}
			var out Outcome
			var ran []string
			var prevDL time.Time
			err := RunTrials(context.Background(), env, &out, w, kinds.Trials(&w.Workload, tt.sizes), func(ctx context.Context, u Trial) error {
				ran = append(ran, u.String())
				dl, ok := ctx.Deadline()
				if !ok {
					t.Fatalf("%s: no deadline", u)
				}
				// Each unit's deadline is its own, set when it starts: a
				// deadline for the whole workload would be the same for all.
				if !prevDL.IsZero() && !dl.After(prevDL) {
					t.Errorf("%s: deadline %v not after the previous unit's (%v): one deadline for the whole workload", u, dl, prevDL)
				}
				prevDL = dl
				if f := tt.fail[u.N]; f != nil {
					return f(ctx)
				}
				return nil
			})
			if diff := cmp.Diff(tt.ran, ran); diff != "" {
				t.Errorf("units run (-want +got):\n%s", diff)
			}
			if out.Status != tt.status {
				t.Errorf("status %q, want %q", out.Status, tt.status)
			}
			if tt.errHas == "" && err != nil || tt.errHas != "" && (err == nil || !strings.Contains(err.Error(), tt.errHas)) {
				t.Errorf("err = %v, want it to hold %q", err, tt.errHas)
			}
			if err != nil && out.Error != err.Error() {
				t.Errorf("outcome error %q, returned %q", out.Error, err)
			}
			if tt.status == StatusTimedOut && !errors.Is(err, ErrTimedOut) {
				t.Errorf("err %v does not wrap ErrTimedOut", err)
			}
			// Each unit is announced as it starts, with its place among all.
			var want []string
			for i, r := range tt.ran {
				want = append(want, fmt.Sprintf("%s (%d/%d)", r, i+1, len(kinds.Trials(&w.Workload, tt.sizes))))
			}
			if diff := cmp.Diff(want, started); diff != "" {
				t.Errorf("units announced (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.notices, notices); diff != "" {
				t.Errorf("notices (-want +got):\n%s", diff)
			}
			if out.Start.IsZero() || out.End.Before(out.Start) || out.Workload != "w" {
				t.Errorf("outcome %+v", out)
			}
		})
	}
}

// TestRunUnitsStoppedRun: a run stopped from outside (Ctrl-C) is not a
// unit's timeout: no notice, and the error is the run's.
func TestRunUnitsStoppedRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var notices int
	env := &Env{Notify: func(string, string) { notices++ }}
	w := &Workload{Workload: kinds.Workload{Name: "w", Tool: "exec", Options: kinds.Options{Timeout: time.Hour}}}
	var out Outcome
	err := RunTrials(ctx, env, &out, w, kinds.Trials(&w.Workload, nil), func(ctx context.Context, u Trial) error {
		cancel()
		<-ctx.Done()
		return ctx.Err()
	})
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrTimedOut) || notices != 0 || out.Status != StatusFailed {
		t.Errorf("err %v, notices %d, status %q", err, notices, out.Status)
	}
}
