package main

import (
	"bufio"
	"errors"
	"fmt"

	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/engine/plan"
	"github.com/rlab-dev/rlab/engine/vm"
	"github.com/spf13/cobra"
)

func newPlanCmd() *cobra.Command {
	var vf varFlags
	var asJSON bool
	var only []string
	var prov, allowEmpty bool
	cmd := &cobra.Command{
		Use:   "plan [-json] [-var NAME=VALUE]... [--only W,...] [--provision] PATH",
		Short: "Show the steps a run would take, per host, and what runs at the same time",
		Long: `plan loads and validates a lab, then prints what rlab run would do, without
touching any host: for every host, in order, connect, ship the agent,
preflight, create rxe devices, start captures, each workload's server and
client side, stop captures, fetch artifacts and tear down; and the workload
waves: workloads that share a host run one after another in file order,
workloads on disjoint hosts run at the same time.

-json prints the plan DAG (hosts, steps with IDs and depends_on, waves); its
fields are documented in the engine/plan package. Values of sensitive
variables are shown as (sensitive).

--only plans what rlab run --only would run: workload names, instances
(write_bw["ana"]) or student keys (ana), with only the hosts, rxe devices and
captures those need.

--provision plans what rlab run --provision would do: a provision step on
every host, between ship-agent and preflight (without it, only on hosts whose
lab says provision = true). It names every package the lab needs there: which
are missing only the host's facts say, at run time.

The plan ends with an estimate of the run's time: the boot of local VMs
(32.5 s per VM under TCG, 10 s with KVM), connect, rxe, fetch and teardown
(as measured on the demo), and each workload from its sizes, repeats and
duration, bytes or iterations at its tool family's pace (Soft-RoCE between
TCG VMs, so real hardware and KVM finish sooner); workloads that share a
host add up, the others overlap. rlab run prints the same estimate in one
line at its start.

A lab with local VMs (vm {}) gets a line of what they cost, the VMs and
their guests' memory and vCPUs summed, against what this machine has
(MemAvailable, CPUs); rlab run refuses VMs whose memory does not fit,
before it makes anything, saying which memory or --only would.`,
		Example: `  rlab plan labs/quickstart.hcl
  rlab plan -json labs/class.hcl | jq '.waves'
  rlab plan --only ana labs/class.hcl`,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			paths, done, err := parseLabFlags(cmd, args)
			if done || err != nil {
				return err
			}
			if len(paths) != 1 {
				return withCode(exitFail, fmt.Errorf("plan takes one lab: a file or a folder (see rlab plan --help)"))
			}
			opts, err := vf.options()
			if err != nil {
				return err
			}
			guard := guardEval(cmd.ErrOrStderr(), paths[0]) // load and plan (evalguard.go)
			defer guard.stop()
			l, diags := lab.LoadOne(paths[0], opts)
			if !diags.HasErrors() {
				diags = append(diags, emptyLab(l, allowEmpty)...)
			}
			maskOutput(cmd, l)
			writeDiags(cmd.ErrOrStderr(), l, diags)
			if diags.HasErrors() {
				return withCode(exitFail, nil)
			}
			p, err := plan.NewWith(l, plan.Options{Provision: prov, Only: only, Emulated: predictEmulated(l)})
			guard.stop()
			var se *plan.SelectionError
			if errors.As(err, &se) {
				return withCode(exitFail, fmt.Errorf("--only: %w", err))
			}
			if err == nil && len(only) > 0 {
				if err := emptySelection(l, only, len(p.Selected.Workloads), allowEmpty); err != nil {
					return withCode(exitFail, err)
				}
			}
			if err != nil {
				return withCode(exitFail, fmt.Errorf("plan lab %q: %w", l.Name, err))
			}
			if p.VMCost != nil {
				// What the VMs cost against what this machine has: the
				// check rlab run makes before it boots them.
				if mem, cpus, err := vm.ReadMachine(); err == nil {
					p.Machine = &plan.Machine{MemAvailableBytes: mem, CPUs: cpus}
				}
			}
			if asJSON {
				// Streamed a step and a trial at a time, each piece made
				// terminal-safe on its own (plan.WriteJSON writes whole
				// values): the plan at the trial bound is 80 MiB of JSON.
				out := bufio.NewWriterSize(cmd.OutOrStdout(), 64<<10)
				if err := p.WriteJSON(termsafeJSONWriter{out}); err != nil {
					return err
				}
				return out.Flush()
			}
			if err := p.WriteText(cmd.OutOrStdout()); err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout())
			return p.Estimate(assumedAccel(), restoredVM).WriteText(cmd.OutOrStdout())
		},
	}
	vf.register(cmd.Flags())
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the plan as JSON on stdout")
	cmd.Flags().BoolVar(&prov, "provision", false, "plan a provision step on every host, as rlab run --provision does")
	onlyFlag(cmd.Flags(), &only, "plan only these workloads, instances or student keys (comma-separated), as rlab run --only")
	allowEmptyFlag(cmd.Flags(), &allowEmpty)
	return cmd
}

// predictEmulated names the lab's local VM hosts that will boot under TCG
// here (vm.PredictEmulated): plan.Options.Emulated for rlab plan and run.
func predictEmulated(l *lab.Lab) map[string]string {
	var names []string
	for _, h := range l.Hosts {
		if h.VM != nil {
			names = append(names, h.Name)
		}
	}
	return vm.PredictEmulated(names)
}
