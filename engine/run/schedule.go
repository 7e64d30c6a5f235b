package run

import (
	"context"
	"fmt"

	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/engine/plan"
)

// The run executes engine/plan's DAG; it keeps no ordering of its own.
// The plan's phases (plan.Phases, written once there and checked against
// the DAG when the plan is made) say in which order the set-up and
// tear-down run; here each set-up phase gets the function that runs its
// steps on every host at once. The workload phase follows what the plan
// walks (Plan.Workloads, Captures, Impairs) edge by edge.

// setupPhase is what runs one set-up phase of the plan.
type setupPhase struct {
	run func(*runner, context.Context) error
	// ids: the phase's events name its plan steps (its function emits no
	// events of its own per step).
	ids bool
	// when, if set, says whether this run has the phase at all.
	when func(*runner) bool
}

// setup runs each of plan.SetupPhases. A capture or impairment scoped with
// `during` is started in the workload phase, before its workloads.
var setup = map[plan.Phase]setupPhase{
	plan.PhaseConnect:   {run: (*runner).connectAll},
	plan.PhaseProvision: {run: (*runner).provisionHosts, ids: true, when: func(r *runner) bool { return len(r.plan.IDs("", "", plan.Provision)) > 0 }}, // provision.go: where the plan provisions
	plan.PhasePreflight: {run: (*runner).preflight, ids: true},
	plan.PhaseDevice:    {run: (*runner).createDevices},
	plan.PhaseCapture:   {run: func(r *runner, ctx context.Context) error { return startWhole(ctx, r, r.captures) }},
	plan.PhaseImpair:    {run: func(r *runner, ctx context.Context) error { return startWhole(ctx, r, r.impairs) }}, // impair.go
}

// schedule takes the plan this run executes (Options.Plan: the run plans
// nothing itself), builds the run's steps from it and wires its workloads
// and its capture and impairment windows to the plan's DAG.
func (r *runner) schedule() error {
	p := r.opts.Plan
	if p == nil || p.Selected == nil {
		return fmt.Errorf("run lab %q: no plan to execute (Options.Plan: engine/plan.NewWith of the lab)", r.lab.Name)
	}
	if p.Lab != r.lab.Name {
		return fmt.Errorf("run lab %q: the plan given is of lab %q", r.lab.Name, p.Lab)
	}
	for _, ph := range plan.SetupPhases() {
		if _, ok := setup[ph]; !ok {
			return fmt.Errorf("plan lab %q: the run cannot execute set-up phase %s", r.lab.Name, ph)
		}
	}
	r.plan = p
	if err := r.build(); err != nil {
		return err
	}
	nodes := map[*lab.Workload]*workloadNode{}
	for _, n := range r.workloads {
		nodes[n.lab] = n
	}
	of := func(ws []*lab.Workload) []*workloadNode {
		var out []*workloadNode
		for _, w := range ws {
			out = append(out, nodes[w])
		}
		return out
	}
	for i, wp := range p.Workloads {
		r.workloads[i].deps = of(wp.After)
	}
	// A scoped window starts before the first workload its stop waits for
	// and stops after the last; its name keeps its `during` order.
	for i, wp := range p.Captures {
		c := r.captures[i]
		if c.during = of(wp.During); len(c.during) > 0 {
			c.remaining = len(c.during)
		}
		for _, n := range c.during {
			n.captures = append(n.captures, c) // started in the lab's order of captures
		}
	}
	for i, wp := range p.Impairs {
		w := r.impairs[i]
		w.during, w.inForce = of(wp.During), of(wp.Covers)
		w.remaining = len(w.during)
		for _, n := range w.during {
			n.impairs = append(n.impairs, w)
		}
	}
	return nil
}
