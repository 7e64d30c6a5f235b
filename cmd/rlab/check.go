package main

import (
	"errors"
	"fmt"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/engine/preflight"
	runengine "github.com/rlab-dev/rlab/engine/run"
	"github.com/rlab-dev/rlab/engine/termsafe"
	"github.com/spf13/cobra"
)

func newCheckCmd() *cobra.Command {
	rf := runFlags{watchdog: runengine.DefaultAgentWatchdog}
	f := &rf.hf
	var asJSON, validate bool
	cmd := &cobra.Command{
		Use:   "check [-json] [-var NAME=VALUE]... [--validate [--only KEY,...] [--out DIR]] PATH",
		Short: "Check that every host can run the lab (preflight), without changing anything",
		Long: `check connects to every host of the lab, gathers its facts (shipping the agent
when needed) and lists every problem that would stop the lab: a kernel without
rdma_rxe, missing perftest/rping/tcpdump, a netdev that does not exist or has
no IPv4 address, RLIMIT_MEMLOCK too low, too little disk, root needed but not
available. Each problem names the host and the fix.

Local VM hosts are listed as not checked: they exist only while rlab run
runs, which boots them from rlab's own image.

Exit status: 0 every SSH host is ready; 1 problems found; 2 some host could not
be reached (its error is printed; the others are still checked).

With --validate, check is a student check, as netlab's validate is for
network labs: on hosts already prepared (say by rlab run --keep) it runs the
lab's workloads that have expect blocks (all workloads when none has one),
evaluates the expects and prints per student (for_each key) pass or fail
with each failing expect: what it wanted and what it got. It is a run of the
lab with these differences: no captures, no report.html, an rxe device of
the right name and netdev that exists is used as it is and left in place
(only devices this check created are removed), and its directory is
runs/<lab>/check-<UTC timestamp>/ (results.json, students.json, logs).
--only KEY,... checks those students only (workload names and instance
addresses work too, as in rlab run --only), connecting only their hosts.
Exit status with --validate: 0 every selected student passes; 1 one fails;
2 a host could not be reached.`,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			rest, done, err := parseLabFlags(cmd, args)
			if done || err != nil {
				return err
			}
			if len(rest) != 1 {
				return withCode(exitFail, fmt.Errorf("check: want one lab file or folder, got %d arguments (see rlab check --help)", len(rest)))
			}
			if validate {
				return execLab(cmd, rest[0], &rf, true, asJSON)
			}
			if len(rf.only) > 0 || rf.out != "" {
				return withCode(exitFail, errors.New("check: --only and --out need --validate (a preflight checks every host)"))
			}
			l, err := loadForHosts(cmd, rest[0], f)
			if err != nil {
				return err
			}
			res, _, err := f.gather(cmd.Context(), l, cmd.ErrOrStderr())
			if err != nil {
				return withCode(exitInfra, err)
			}
			facts := map[string]*proto.Facts{}
			var unreach, vms []string
			for _, r := range res {
				var vm *localVMError
				if errors.As(r.Err, &vm) {
					vms = append(vms, vm.host)
					continue
				}
				if r.Err != nil {
					unreach = append(unreach, r.Err.Error())
					continue
				}
				facts[r.Name] = r.Facts
			}
			problems := checkProblems(l, facts)
			w := cmd.OutOrStdout()
			if asJSON {
				if unreach == nil {
					unreach = []string{}
				}
				if problems == nil {
					problems = []preflight.Problem{}
				}
				if vms == nil {
					vms = []string{}
				}
				if err := writeJSON(w, map[string]any{"problems": problems, "unreachable": unreach, "local_vms": vms}); err != nil {
					return err
				}
			} else {
				for _, p := range problems {
					fmt.Fprintln(w, termsafe.Line(p.String())) // holds host facts
				}
				for _, u := range unreach {
					fmt.Fprintln(w, firstLineOf(u))
				}
				for _, v := range vms {
					fmt.Fprintf(w, "host %q: a local VM, not checked: it exists only while `rlab run` runs, which boots it from rlab's image (every tool a lab needs, rdma_rxe and siw)\n", v)
				}
			}
			ssh := len(res) - len(vms)
			switch {
			case len(unreach) > 0:
				return withCode(exitInfra, fmt.Errorf("%d of %d SSH hosts could not be reached; %d problems on the others", len(unreach), ssh, len(problems)))
			case len(problems) > 0:
				return withCode(exitFail, fmt.Errorf("%d problems: the lab cannot run on these hosts as they are", len(problems)))
			}
			if !asJSON {
				switch {
				case ssh == 0:
					fmt.Fprintf(w, "no SSH host to check: the lab's %d hosts are local VMs\n", len(vms))
				case len(vms) > 0:
					fmt.Fprintf(w, "all %d SSH hosts ready (%d local VMs not checked)\n", ssh, len(vms))
				default:
					fmt.Fprintf(w, "all %d hosts ready\n", ssh)
				}
			}
			return nil
		},
	}
	f.register(cmd.Flags())
	f.registerRefresh(cmd.Flags())
	cmd.Flags().BoolVar(&asJSON, "json", false, "print problems and unreachable hosts as JSON (with --validate: the students)")
	cmd.Flags().BoolVar(&validate, "validate", false, "run the lab's expect workloads on the prepared hosts and say which students pass")
	onlyFlag(cmd.Flags(), &rf.only, "with --validate: check only these students (for_each keys), workloads or instances")
	cmd.Flags().StringVar(&rf.out, "out", "", "with --validate: the check's run directory (default runs/<lab>/check-<UTC timestamp>)")
	allowEmptyFlag(cmd.Flags(), &rf.allowEmpty)
	return cmd
}

// checkProblems is what preflight finds on the hosts, as check prints it,
// with the lab's sensitive values redacted: a finding quotes the lab (an
// rxe's name) and the host's facts (its login user, its work dir), and
// with user = var.login check printed the value (attack round 14); rlab
// run's error holds the same findings redacted.
func checkProblems(l *lab.Lab, facts map[string]*proto.Facts) []preflight.Problem {
	problems := preflight.Check(l, facts)
	red := lab.Redact(l)
	for i := range problems {
		p := &problems[i]
		p.Host, p.What, p.Fix = red(p.Host), red(p.What), red(p.Fix)
	}
	return problems
}
