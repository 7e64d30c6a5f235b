package exec

import (
	"context"
	"fmt"
	"strings"

	"github.com/rlab-dev/rlab/engine/results"
	"github.com/rlab-dev/rlab/kinds"
	"github.com/rlab-dev/rlab/steps"
)

// exec runs any argv on a host (never through a shell); its exit code and
// output are kept. A non-zero exit fails the workload.

type execWorkload struct {
	w     *steps.Workload
	out   steps.Outcome
	procs steps.Procs
}

func newOp(w *steps.Workload) (steps.Op, error) {
	if len(w.Command) == 0 {
		return nil, fmt.Errorf("workload %q (exec): empty command", w.Name)
	}
	if w.Host == "" {
		return nil, fmt.Errorf("workload %q (exec): no host", w.Name)
	}
	return &execWorkload{w: w}, nil
}

// Argv is exec's argv hook (kinds.Argver): the command as the lab gives
// it, on one host, so no server.
func (Kind) Argv(in kinds.ArgvIn) (server, client []string) {
	return nil, append(append([]string{}, in.W.Command...), in.W.Args...)
}

func (s *execWorkload) Describe() string {
	return fmt.Sprintf("exec %s on host %s: %s", s.w.Name, s.w.Host, strings.Join(s.w.Command, " "))
}

func (s *execWorkload) Outcome() *steps.Outcome { return &s.out }

func (s *execWorkload) Undo(ctx context.Context, env *steps.Env) error {
	return s.procs.StopAll(ctx, env)
}

func (s *execWorkload) Apply(ctx context.Context, env *steps.Env) error {
	return steps.RunPlanned(ctx, env, &s.out, s.w, func(ctx context.Context, u kinds.Planned) error {
		return s.run(ctx, env, u)
	})
}

// run runs one trial: the plan's command (Workload.Trials), which has no
// placeholders, filled anyway so that one never reaches the host.
func (s *execWorkload) run(ctx context.Context, env *steps.Env, u kinds.Planned) error {
	w, rep := s.w, u.Repeat
	argv, err := kinds.Fill(w.Name, u.Client, nil)
	if err != nil {
		return err
	}
	spec := steps.ProcSpec{Host: w.Host, Handle: steps.Handle(w, "exec", 0, rep), Argv: argv, Role: "command"}
	if _, err := steps.StartProc(ctx, env, &s.procs, "exec", spec); err != nil {
		return err
	}
	r, err := steps.WaitProc(ctx, env, &s.procs, w.Host, spec.Handle, steps.Remaining(ctx))
	if err != nil {
		return fmt.Errorf("wait for exec on host %q: %s: %w", w.Host, strings.Join(spec.Argv, " "), err)
	}
	pr := steps.Ref(w.Host, r)
	s.out.Runs = append(s.out.Runs, steps.RunRecord{Repeat: rep, Client: pr})
	ss := steps.CommonSamples(r.ExitCode, pr.Seconds)
	var merr error
	failed := r.ExitCode != 0 || r.TimedOut || r.Signal != ""
	if !failed {
		var ms []results.Sample
		ms, merr = steps.OutputSamples(w.Metrics, r) // the lab's metric blocks
		ss = append(ss, ms...)
	}
	steps.FillMeta(ss, results.Meta{Workload: w.Name, Tool: w.Tool, Repeat: rep, Hosts: []string{w.Host}})
	s.out.Samples = append(s.out.Samples, ss...)
	if failed {
		return steps.ProcError("exec", "command", w.Host, r)
	}
	return merr
}
