package plan

import (
	"fmt"
	"slices"
)

// The run's phases. A run executes a plan in phases, each the steps of its
// kinds on every host at once: after booting local VMs, the set-up phases
// in their order, then the workloads, capture stops, fetch and teardown.
// Phases is the one place that order is written, and NewWith refuses a
// plan whose DAG it would not follow (checkPhases: an edge back to an
// earlier phase, or between steps one phase runs at once), so running the
// phases one after another is a topological order of the DAG. Within the
// workload phase the run follows the DAG edge by edge (walk.go): a
// workload starts once the workloads it waits for are done, and a capture
// scoped with `during` starts before the first workload that depends on
// its start and stops after the last one its stop depends on.

// Phase is one phase of a run.
type Phase string

// The phases, in the order Phases runs them.
const (
	PhaseConnect   Phase = "connect"
	PhaseProvision Phase = "provision"
	PhasePreflight Phase = "preflight"
	PhaseDevice    Phase = "rxe"
	PhaseCapture   Phase = "capture"
	PhaseImpair    Phase = "impair"
	PhaseWorkloads Phase = "workloads"
	PhaseFetch     Phase = "fetch"
	PhaseTeardown  Phase = "teardown"
)

// Phases are a run's phases in order, each with the actions it
// executes. Those before PhaseWorkloads are the set-up (SetupPhases); a
// capture or impairment scoped with `during` is started in the workload
// phase, before its workloads, and a whole-run one stops there after every
// workload.
var Phases = []struct {
	Phase   Phase
	Actions []Action
}{
	{PhaseConnect, []Action{Connect, ShipAgent}},
	{PhaseProvision, []Action{Provision}},
	{PhasePreflight, []Action{Preflight}},
	{PhaseDevice, []Action{CreateDevice}},
	{PhaseCapture, []Action{StartCapture}},
	{PhaseImpair, []Action{StartImpair}},
	{PhaseWorkloads, []Action{WorkloadServer, WorkloadClient, WorkloadRun, StopCapture, StopImpair}},
	{PhaseFetch, []Action{Fetch}},
	{PhaseTeardown, []Action{Teardown}},
}

// SetupPhases are the phases before the workloads, in order.
func SetupPhases() []Phase {
	var out []Phase
	for _, ph := range Phases {
		if ph.Phase == PhaseWorkloads {
			break
		}
		out = append(out, ph.Phase)
	}
	return out
}

// ActionsOf are the actions of the steps phase ph executes.
func ActionsOf(ph Phase) []Action {
	for _, p := range Phases {
		if p.Phase == ph {
			return p.Actions
		}
	}
	return nil
}

// phaseOf is the place in Phases of the phase that executes steps of kind
// k, and the phase; ok is false for a kind no phase executes.
func phaseOf(k Action) (i int, ph Phase, ok bool) {
	for i, p := range Phases {
		if slices.Contains(p.Actions, k) {
			return i, p.Phase, true
		}
	}
	return 0, "", false
}

// workloadPhase is the phase the run follows edge by edge.
var workloadPhase, _, _ = phaseOf(WorkloadRun)

// checkPhases refuses a plan whose DAG the phases cannot follow: an edge
// from a step of a later phase to one of an earlier phase, or between two
// steps of one phase that the run does not order (it runs a phase's steps at
// once, except a host's connect after its jump host's and the workload
// phase, which it follows edge by edge), or a workload that needs a scoped
// capture started but is not one whose end the capture's stop waits for.
func (p *Plan) checkPhases() error {
	workload := func(k Action) bool {
		return k == WorkloadServer || k == WorkloadClient || k == WorkloadRun
	}
	for _, s := range p.Steps {
		ps, psName, ok := phaseOf(s.Action)
		if !ok {
			return fmt.Errorf("plan: step %s is of kind %q, which the run cannot execute", s.ID, s.Action)
		}
		for _, d := range s.DependsOn {
			ds := p.Step(d)
			pd, pdName, _ := phaseOf(ds.Action)
			switch {
			case pd > ps:
				return fmt.Errorf("plan: step %s (run phase %s) depends on %s (run phase %s): the run executes its phases in order and cannot run that", s.ID, psName, d, pdName)
			case pd == ps && ds.Action != Connect && !(ps == workloadPhase && workload(ds.Action)):
				// The connect phase connects a host after its jump host and ships
				// the agent after connecting; the workload phase follows edges.
				return fmt.Errorf("plan: step %s depends on %s: the run executes the steps of phase %s at once and cannot order them", s.ID, d, psName)
			case workload(s.Action) && ds.Action == StartCapture && len(ds.Capture.During) > 0:
				stop := p.Step(StepID(ds.Capture.Host.Slug, StopCapture, ds.Capture.Slug))
				if stop == nil || !slices.ContainsFunc(stop.DependsOn, func(id string) bool { return p.Step(id).Workload == s.Workload }) {
					return fmt.Errorf("plan: step %s needs capture %q started, but the capture's stop does not wait for it: the run starts a scoped capture for the workloads its stop waits for", s.ID, ds.Capture.Name)
				}
			}
		}
	}
	return nil
}
