package program

import (
	"context"
	"fmt"
	"strings"

	"github.com/rlab-dev/rlab/kinds"
	"github.com/rlab-dev/rlab/steps"
)

type programWorkload struct {
	w     *steps.Workload
	out   steps.Outcome
	procs steps.Procs
}

func newStep(w *steps.Workload) (steps.Step, error) {
	if w.Program == nil {
		return nil, fmt.Errorf("workload %q (program): no program block", w.Name)
	}
	if w.Host == "" && (len(w.ServerCommand) == 0 || len(w.ClientCommand) == 0 || w.ServerHost == "" || w.ClientHost == "") {
		return nil, fmt.Errorf("workload %q (program): needs host and command, or server, client and their commands", w.Name)
	}
	if w.Host != "" && len(w.Command) == 0 {
		return nil, fmt.Errorf("workload %q (program): empty command", w.Name)
	}
	return &programWorkload{w: w}, nil
}

func (s *programWorkload) Describe() string {
	w := s.w
	if w.Host != "" {
		return fmt.Sprintf("program %s (%s) on host %s: %s", w.Name, w.Program.Name, w.Host, kinds.ShowSelf(w.Command))
	}
	return fmt.Sprintf("program %s (%s): host %s (server) %s, then host %s (client) %s", w.Name, w.Program.Name,
		w.ServerHost, kinds.ShowSelf(w.ServerCommand), w.ClientHost, kinds.ShowSelf(w.ClientCommand))
}

func (s *programWorkload) Outcome() *steps.Outcome { return &s.out }

func (s *programWorkload) Undo(ctx context.Context, env *steps.Env) error {
	return s.procs.StopAll(ctx, env)
}

func (s *programWorkload) Apply(ctx context.Context, env *steps.Env) error {
	return fmt.Errorf("workload %q (program): %s", s.w.Name, strings.TrimSpace("running programs is not built yet"))
}
