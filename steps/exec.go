package steps

import (
	"context"
	"fmt"
	"strings"

	"github.com/rlab-dev/rlab/engine/results"
)

// exec runs any argv on a host (never through a shell); its exit code and
// output are kept. A non-zero exit fails the workload.

type execWorkload struct {
	w     *Workload
	out   Outcome
	procs procs
}

func NewExec(w *Workload) (Step, error) {
	if len(w.Command) == 0 {
		return nil, fmt.Errorf("workload %q (exec): empty command", w.Name)
	}
	if w.Host == "" {
		return nil, fmt.Errorf("workload %q (exec): no host", w.Name)
	}
	return &execWorkload{w: w}, nil
}

func (s *execWorkload) Describe() string {
	return fmt.Sprintf("exec %s on host %s: %s", s.w.Name, s.w.Host, strings.Join(s.w.Command, " "))
}

func (s *execWorkload) Outcome() *Outcome { return &s.out }

func (s *execWorkload) Undo(ctx context.Context, env *Env) error { return s.procs.stopAll(ctx, env) }

func (s *execWorkload) Apply(ctx context.Context, env *Env) error {
	return runUnits(ctx, env, &s.out, s.w, units(s.w, nil), func(ctx context.Context, u unit) error {
		return s.run(ctx, env, u.Repeat)
	})
}

func (s *execWorkload) run(ctx context.Context, env *Env, rep int) error {
	w := s.w
	spec := procSpec{Host: w.Host, Handle: handle(w, "exec", 0, rep), Argv: append(append([]string{}, w.Command...), w.Args...), Role: "command"}
	if _, err := startProc(ctx, env, &s.procs, "exec", spec); err != nil {
		return err
	}
	r, err := waitProc(ctx, env, &s.procs, w.Host, spec.Handle, remaining(ctx))
	if err != nil {
		return fmt.Errorf("wait for exec on host %q: %s: %w", w.Host, strings.Join(spec.Argv, " "), err)
	}
	pr := ref(w.Host, r)
	s.out.Runs = append(s.out.Runs, RunRecord{Repeat: rep, Client: pr})
	ss := commonSamples(r.ExitCode, pr.Seconds)
	fillMeta(ss, results.Meta{Workload: w.Name, Tool: w.Tool, Repeat: rep, Hosts: []string{w.Host}})
	s.out.Samples = append(s.out.Samples, ss...)
	if r.ExitCode != 0 || r.TimedOut || r.Signal != "" {
		return procError("exec", "command", w.Host, r)
	}
	return nil
}
