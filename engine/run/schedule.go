package run

import (
	"context"
	"fmt"

	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/engine/plan"
	"github.com/rlab-dev/rlab/engine/provision/needs"
	"github.com/rlab-dev/rlab/engine/remote"
	"github.com/rlab-dev/rlab/steps"
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
// nothing itself), makes the run's steps from it and wires its workloads
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
	r.factsReq = remote.FactsParams(false, needs.PackageNames(r.lab))
	// The run's steps, one per thing the plan walks: the hosts it opens
	// agents on, and the rxe devices, workloads, captures and impairments
	// of Plan.Selected, in file order; each holds the plan's own value.
	r.hosts = p.Agents()
	for _, x := range p.Selected.Devices {
		r.rxes = append(r.rxes, &steps.Device{Name: x.Name, Type: x.Block, Host: x.Host.Name, Device: x.Device, Netdev: x.Netdev, Port: x.Port, Keep: x.Keep})
	}
	nodes := map[*lab.Workload]*workloadNode{}
	for _, wp := range p.Workloads {
		sw := stepWorkload(wp)
		st, err := steps.NewWorkload(sw)
		if err != nil {
			return err
		}
		n := &workloadNode{WorkloadPlan: wp, spec: sw, op: st, done: make(chan struct{})}
		nodes[wp.Workload] = n
		r.workloads = append(r.workloads, n)
	}
	of := func(ws []*lab.Workload) []*workloadNode {
		var out []*workloadNode
		for _, w := range ws {
			out = append(out, nodes[w])
		}
		return out
	}
	for _, n := range r.workloads {
		n.deps = of(n.After)
	}
	// A scoped window starts before the first workload its stop waits for
	// and stops after the last; its name keeps its `during` order.
	for _, wp := range p.Captures {
		c := wp.Capture
		w := &captureWindow{WindowPlan: wp, during: of(wp.During), op: &steps.Capture{Name: c.Name, Slug: c.Slug, Host: c.Host.Name,
			Netdev: c.Netdev, Filter: c.Filter, Snaplen: c.Snaplen, MaxBytes: c.MaxBytes, Window: wp.Window}}
		w.remaining = len(w.during)
		for _, n := range w.during {
			n.captures = append(n.captures, w) // started in the lab's order of captures
		}
		r.captures = append(r.captures, w)
	}
	for _, wp := range p.Impairs {
		im := wp.Impair
		w := &impairWindow{WindowPlan: wp, during: of(wp.During), inForce: of(wp.Covers), op: &steps.Impair{
			Name: im.Name, Host: im.Host.Name, Netdev: im.Netdev, Text: im.Netem.String(), Params: impairParams(im.Netem)}}
		w.remaining = len(w.during)
		for _, n := range w.during {
			n.impairs = append(n.impairs, w)
		}
		r.impairs = append(r.impairs, w)
	}
	return nil
}
