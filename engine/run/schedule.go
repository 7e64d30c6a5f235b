package run

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/engine/plan"
)

// The run executes engine/plan's DAG; it keeps no ordering of its own.
//
// Set-up and tear-down run in phases, each a set of plan steps on every host
// at once: after booting local VMs, the set-up phases below in their order,
// then the workloads, capture stops, fetch and teardown. setup is the one
// place that order is written: execute runs it and phaseOf reads it, and a
// plan edge the phases would not follow (back to an earlier phase, or
// between steps one phase runs at once) is refused by checkPhases
// (TestPhasesFollowThePlan runs it on every example lab), so running the
// phases one after another is a topological order of the DAG. Within the
// workload phase the DAG is followed edge by edge: a workload starts once
// the workloads its plan steps depend on are done, and a capture scoped with
// `during` starts before the first workload that depends on its start and
// stops after the last one its stop depends on. A new dependency (a future
// `depends_on`) is written in engine/plan only.

// setupPhase is one phase of the set-up: the plan steps of its kinds, run
// on every host at once by run.
type setupPhase struct {
	name  string
	kinds []plan.Kind
	run   func(*runner, context.Context) error
	// ids: the phase's events name its plan steps (its function emits no
	// events of its own per step).
	ids bool
	// when, if set, says whether this run has the phase at all.
	when func(*runner) bool
}

// setup is the run's set-up, in order. A capture or impairment scoped with
// `during` is started in the workload phase, before its workloads.
var setup = []setupPhase{
	{name: "connect", kinds: []plan.Kind{plan.Connect, plan.ShipAgent}, run: (*runner).connectAll},
	{name: "provision", kinds: []plan.Kind{plan.Provision}, run: (*runner).provisionHosts, ids: true, when: func(r *runner) bool { return len(r.plan.IDs("", "", plan.Provision)) > 0 }}, // provision.go: where the plan provisions
	{name: "preflight", kinds: []plan.Kind{plan.Preflight}, run: (*runner).preflight, ids: true},
	{name: "rxe", kinds: []plan.Kind{plan.CreateRXE}, run: (*runner).createRXE},
	{name: "capture", kinds: []plan.Kind{plan.StartCapture}, run: func(r *runner, ctx context.Context) error { return startWhole(ctx, r, r.captures) }},
	{name: "impair", kinds: []plan.Kind{plan.StartImpair}, run: func(r *runner, ctx context.Context) error { return startWhole(ctx, r, r.impairs) }}, // impair.go
}

// After the set-up: the workload phase (runWorkloads; a whole-run capture
// or impairment stops after every workload), then fetch and teardown.
var afterSetup = []struct {
	name  string
	kinds []plan.Kind
}{
	{"workloads", []plan.Kind{plan.WorkloadServer, plan.WorkloadClient, plan.WorkloadRun, plan.StopCapture, plan.StopImpair}},
	{"fetch", []plan.Kind{plan.Fetch}},
	{"teardown", []plan.Kind{plan.Teardown}},
}

// phaseOf is the place in the run's order of the phase that executes plan
// steps of kind k, and the phase's name; ok is false for a kind the run
// cannot execute.
func phaseOf(k plan.Kind) (i int, name string, ok bool) {
	for i, ph := range setup {
		if slices.Contains(ph.kinds, k) {
			return i, ph.name, true
		}
	}
	for j, ph := range afterSetup {
		if slices.Contains(ph.kinds, k) {
			return len(setup) + j, ph.name, true
		}
	}
	return 0, "", false
}

// workloadPhase is the phase the run follows edge by edge.
var workloadPhase, _, _ = phaseOf(plan.WorkloadRun)

// schedule plans what this run runs (the plan.json it writes, the same as
// `rlab plan --only`), builds the run's steps from it and wires its
// workloads and its capture and impairment windows to the plan's DAG.
func (r *runner) schedule() error {
	p := r.opts.Plan
	if p == nil {
		var err error
		p, err = plan.NewWith(r.lab, PlanOptions(r.opts))
		var se *plan.SelectionError
		if errors.As(err, &se) {
			return err // it names --only and the lab
		}
		if err != nil {
			return fmt.Errorf("plan lab %q: %w", r.lab.Name, err)
		}
	}
	if err := checkPhases(p); err != nil {
		return err
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
			c.step.Window = windowName(c.during)
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

// PlanOptions are the engine/plan options that plan what Run runs with o:
// the CLI plans with them once (its progress bar counts the plan's
// workloads) and hands the plan to Run as Options.Plan.
func PlanOptions(o Options) plan.Options {
	return plan.Options{Only: o.Only, Check: o.Validate, Provision: o.Provision, NoProvision: o.Validate}
}

// checkPhases refuses a plan whose DAG the phases cannot follow: an edge
// from a step of a later phase to one of an earlier phase, or between two
// steps of one phase that the run does not order (it runs a phase's steps at
// once, except a host's connect after its jump host's and the workload
// phase, which it follows edge by edge), or a workload that needs a scoped
// capture started but is not one whose end the capture's stop waits for.
func checkPhases(p *plan.Plan) error {
	workload := func(k plan.Kind) bool {
		return k == plan.WorkloadServer || k == plan.WorkloadClient || k == plan.WorkloadRun
	}
	for _, s := range p.Steps {
		ps, psName, ok := phaseOf(s.Kind)
		if !ok {
			return fmt.Errorf("plan: step %s is of kind %q, which the run cannot execute", s.ID, s.Kind)
		}
		for _, d := range s.DependsOn {
			ds := p.Step(d)
			pd, pdName, _ := phaseOf(ds.Kind)
			switch {
			case pd > ps:
				return fmt.Errorf("plan: step %s (run phase %s) depends on %s (run phase %s): the run executes its phases in order and cannot run that", s.ID, psName, d, pdName)
			case pd == ps && ds.Kind != plan.Connect && !(ps == workloadPhase && workload(ds.Kind)):
				// The connect phase connects a host after its jump host and ships
				// the agent after connecting; the workload phase follows edges.
				return fmt.Errorf("plan: step %s depends on %s: the run executes the steps of phase %s at once and cannot order them", s.ID, d, psName)
			case workload(s.Kind) && ds.Kind == plan.StartCapture && len(ds.Capture.During) > 0:
				stop := p.Step(plan.StepID(ds.Capture.Host.Slug, plan.StopCapture, ds.Capture.Slug))
				if stop == nil || !slices.ContainsFunc(stop.DependsOn, func(id string) bool { return p.Step(id).Workload == s.Workload }) {
					return fmt.Errorf("plan: step %s needs capture %q started, but the capture's stop does not wait for it: the run starts a scoped capture for the workloads its stop waits for", s.ID, ds.Capture.Name)
				}
			}
		}
	}
	return nil
}

// windowName names a scoped capture's window after its workloads: part of
// the agent handle and the file name, both [A-Za-z0-9._-] only
// ("write_bw-read_bw", not "write_bw+read_bw").
func windowName(during []*workloadNode) string {
	var names []string
	for _, n := range during {
		names = append(names, n.lab.Slug)
	}
	window := strings.Join(names, "-")
	if len(window) > 64 {
		window = fmt.Sprintf("%s-and-%d-more", during[0].lab.Slug, len(during)-1)
	}
	return window
}
