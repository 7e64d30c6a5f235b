package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/rlab-dev/rlab/agent/dist"
	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/engine/plan"
	"github.com/rlab-dev/rlab/engine/remote"
	"github.com/rlab-dev/rlab/engine/results"
	runengine "github.com/rlab-dev/rlab/engine/run"
	"github.com/rlab-dev/rlab/engine/termsafe"
	"github.com/rlab-dev/rlab/engine/toolout"
)

type runFlags struct {
	hf   hostFlags // -var, --var-file, --accept-new-host-keys, --parallel, --known-hosts, -i, -v
	out  string
	only []string
	keep bool
	// allowEmpty: --allow-empty (run, check --validate): a lab or --only
	// selection with no workload is not an error.
	allowEmpty bool
	// maxPull caps the bytes pulled from each host ("" = the default,
	// remote.DefaultMaxPullBytes; "0" = no cap).
	maxPull string
	// provision: --provision and its bounds (rlab run only).
	provision bool
	pf        provisionFlags
	// watchdog: --agent-watchdog (0: off).
	watchdog time.Duration
}

func newRunCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run [-var NAME=VALUE]... [--out DIR] [--only W|KEY,...] [--keep] [--provision] PATH",
		Short: "Run a lab: prepare hosts, run workloads, collect results, tear down",
		Long: `run connects to every host of the lab (booting its local VMs first), ships the
agent, checks the hosts, creates the rxe devices, starts the captures, runs the
workloads (those sharing a host one after another in file order, the others at
the same time), pulls pcaps and logs, evaluates the expect blocks and tears
down what it created. Everything lands in a new run directory,
runs/<lab>/<UTC timestamp>/ unless --out says otherwise; the last line printed
names it.

Class labs (hosts keyed per student with for_each) end with a
per-student table (ready, or failed with the first reason), also written to
students.json and summary.md, and each student gets a folder to hand back,
students/<key>/ (their hosts' files, their results, a summary). One
student's unreachable host, failed rxe device, capture or preflight problem
skips that student's workloads only (exit 2).

--only takes workload names (every instance of a for_each workload),
instance addresses (write_bw["ana"]) and student keys (ana): only the hosts
the selected workloads, rxe devices and captures use are connected and
prepared. A value that is both a workload name and a key must be written
workload:NAME or key:KEY.

Exit status: 0 all workloads ran and every expect held; 1 a workload failed or
an expect did not hold (or the lab is invalid); 2 infrastructure (host
unreachable, agent lost, preflight); 130 interrupted. The first Ctrl-C tears
down gracefully (at most 30 s); a second one stops at once. ` + "`rlab down RUN_DIR`" + `
finishes a teardown later.`,
		DisableFlagParsing: true, // parseLabFlags: -var and --var alike
		RunE: func(cmd *cobra.Command, args []string) error {
			rest, done, err := parseLabFlags(cmd, args)
			if done || err != nil {
				return err
			}
			if len(rest) != 1 {
				return withCode(exitFail, fmt.Errorf("run: want one lab file or folder, got %d arguments (see rlab run --help)", len(rest)))
			}
			return runLab(cmd, rest[0], &f)
		},
	}
	fl := cmd.Flags()
	f.hf.register(fl)
	fl.StringVar(&f.out, "out", "", "run directory (default runs/<lab>/<UTC timestamp>)")
	onlyFlag(fl, &f.only, "run only these workloads, instances or students (comma-separated names, addresses or for_each keys)")
	fl.BoolVar(&f.keep, "keep", false, "leave the rxe devices in place after the run, and the hosts' work dirs (removed once pulled otherwise)")
	allowEmptyFlag(fl, &f.allowEmpty)
	fl.StringVar(&f.maxPull, "max-pull", "", "cap on the artifact bytes pulled from each host, e.g. 5GiB; 0 = no cap (default 20GiB)")
	fl.BoolVar(&f.provision, "provision", false, "first install what the lab needs on every host with its package manager, as rlab provision does (a host's provision = true does it for that host alone)")
	f.pf.register(fl, "provision-")
	fl.DurationVar(&f.watchdog, "agent-watchdog", runengine.DefaultAgentWatchdog, "a host's agent that hears nothing from rlab this long (its network gone) undoes what the run made there and exits; rlab pings it meanwhile; 0 = off")
	return cmd
}

// agentWatchdog maps --agent-watchdog (0 = off) to Options.AgentWatchdog
// (0 = the default, < 0 = off).
func agentWatchdog(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}

func runLab(cmd *cobra.Command, path string, f *runFlags) error {
	return execLab(cmd, path, f, false, false)
}

// execLab runs a lab, or checks it (validate: `rlab check --validate`), and
// prints what happened; asJSON (validate only) prints the students as JSON.
func execLab(cmd *cobra.Command, path string, f *runFlags, validate, asJSON bool) error {
	stderr := cmd.ErrOrStderr()
	lo, err := f.hf.vf.options()
	if err != nil {
		return err
	}
	// Load and plan under the evaluation guard (evalguard.go); it ends
	// before anything connects.
	guard := guardEval(stderr, path)
	defer guard.stop()
	l, diags := lab.LoadOne(path, lo)
	if !diags.HasErrors() {
		diags = append(diags, emptyLab(l, f.allowEmpty)...)
	}
	maskOutput(cmd, l)
	stderr = cmd.ErrOrStderr()
	writeDiags(stderr, l, diags)
	if diags.HasErrors() || l == nil {
		return withCode(exitFail, fmt.Errorf("lab %s is not valid", path))
	}
	opts := runengine.Options{
		Out: f.out, Keep: f.keep, Parallel: f.hf.parallel,
		ProvisionOptions: f.pf.options(),
		Parse:            toolout.ParseOutput,
		NoReport:         validate,
	}
	// The run executes this plan and plans nothing itself: --only is read
	// once, here, and the progress bar counts the plan's workloads. A
	// check runs only the workloads with expect blocks, no captures, and
	// changes no packages.
	po := plan.Options{Only: f.only, Check: validate, Provision: f.provision && !validate, NoProvision: validate}
	po.Emulated = predictEmulated(l) // local VMs under TCG: plan.json says which QP timeouts are raised
	if opts.Plan, err = plan.NewWith(l, po); err != nil {
		var se *plan.SelectionError
		if errors.As(err, &se) {
			return withCode(exitFail, err)
		}
		return withCode(exitFail, fmt.Errorf("plan lab %q: %w", l.Name, err))
	}
	if err := emptySelection(l, f.only, len(opts.Plan.Selected.Workloads), f.allowEmpty); err != nil {
		return withCode(exitFail, err)
	}
	guard.stop()
	// A run over hundreds of hosts: a soft memory limit from the host
	// count (memlimit.go), unless the user set GOMEMLIMIT.
	setMemoryLimit(len(opts.Plan.Hosts), os.Getenv("GOMEMLIMIT"))
	pullOpts, err := f.pullOptions()
	if err != nil {
		return err
	}
	log := f.hf.logger(stderr)
	if !validate {
		est := opts.Plan.Estimate(assumedAccel(), restoredVM)
		fmt.Fprintln(stderr, est.Line())
		for _, w := range est.Warnings {
			fmt.Fprintln(stderr, "WARNING: "+w)
		}
	}
	prog := newProgress(stderr, len(opts.Plan.Selected.Workloads))
	pullOpts.Progress = prog.pull
	conn := &runengine.SSHConnector{
		Pull:       pullOpts,
		SSH:        f.hf.sshOptions(log), // --persist too
		Agents:     remote.NewPackedAgents(dist.Packed).WithLogger(log),
		Identities: f.hf.identities,
		Keep:       true, // only through the mux (--persist): its kept agents
	}
	defer conn.Close()

	ctx, cancel := context.WithCancelCause(cmd.Context())
	defer cancel(nil)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go onInterrupt(sigs, stderr, teardownBound, func(s os.Signal) { cancel(fmt.Errorf("%s", s)) }, os.Exit)

	opts.Connector = conn
	opts.VMs = &runengine.LocalVMs{Log: log, Progress: prog.vm, BootWave: f.hf.parallel,
		Agent: func() ([]byte, error) { return conn.Agents.Binary("amd64") }} // qemu-system-x86_64
	opts.Log, opts.OnEvent = log, prog.event
	opts.AgentWatchdog = agentWatchdog(f.watchdog)
	// Inside onInterrupt's bound: what is left (results, report) is
	// written before it.
	opts.TeardownTimeout = teardownBound - 5*time.Second
	res := runengine.Run(ctx, l, opts)
	prog.finish()
	w := cmd.OutOrStdout()
	printErrors(stderr, "", res.Err) // one per line
	if asJSON {
		if err := printCheckJSON(w, res); err != nil {
			return err
		}
	} else {
		printOutcomes(w, res, validate)
	}
	if res.Code != exitOK {
		return withCode(res.Code, nil)
	}
	return nil
}

func printOutcomes(w io.Writer, res *runengine.Result, validate bool) {
	if !validate && len(res.Students) == 0 && printHeadline(w, res.Dir) {
		res = &runengine.Result{Dir: res.Dir, Expects: res.Expects} // outcomes are in the table
	}
	for _, o := range res.Outcomes {
		line := fmt.Sprintf("  %-10s %s (%s)", o.Status, o.Workload, o.Tool)
		if o.Status != "ok" && o.Error != "" {
			line += ": " + firstLine(o.Error)
		}
		fmt.Fprintln(w, line)
	}
	for _, e := range res.Expects {
		if validate && len(res.Students) > 0 {
			break // listed under the students table
		}
		if !e.Held && !e.Skipped {
			at := ""
			if e.Size > 0 {
				at = " at size " + results.HumanSize(e.Size)
			}
			// One line each, under the end table's rows as its FAILED lines.
			line := termText(fmt.Sprintf("NOT HELD %s: expect %s did not hold%s: %s", e.Workload, e.Condition, at, e.Message))
			if e.Got != "" {
				line += " (got " + e.Got + ")"
			}
			fmt.Fprintln(w, line)
		}
	}
	if len(res.Students) > 0 {
		// A check's answer is per student: each failing expect with what it
		// wanted and got.
		results.WriteStudentsTable(w, res.Students, validate, false)
	} else if validate {
		if res.Code == exitOK {
			fmt.Fprintln(w, "check: pass")
		} else {
			fmt.Fprintln(w, "check: FAIL")
		}
	}
	if res.Dir != "" {
		fmt.Fprintf(w, "run directory: %s\n", res.Dir)
	}
}

func printCheckJSON(w io.Writer, res *runengine.Result) error {
	students := res.Students
	if students == nil {
		students = []results.Student{}
	}
	unreach := res.Unreachable
	if unreach == nil {
		unreach = []string{}
	}
	return writeJSON(w, map[string]any{"pass": res.Code == exitOK, "students": students, "unreachable": unreach, "run_dir": res.Dir})
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return termsafe.Line(s) // host text: no terminal escapes
}

// pullOptions reads --max-pull.
func (f *runFlags) pullOptions() (remote.PullOptions, error) {
	var o remote.PullOptions
	switch f.maxPull {
	case "":
	case "0":
		o.MaxBytes = -1
	default:
		n, err := lab.ParseSize(f.maxPull)
		if err != nil || n <= 0 {
			return o, withCode(exitFail, fmt.Errorf("--max-pull %q: want a size such as 5GiB, or 0 for no cap", f.maxPull))
		}
		o.MaxBytes = n
	}
	return o, nil
}

// teardownBound is what the first Ctrl-C promises: rlab has exited this
// long after it, whatever is blocked on a host.
const teardownBound = 30 * time.Second

// onInterrupt handles SIGINT and SIGTERM: the first starts the teardown
// (stop, which cancels the run) and a timer that exits 130 after bound,
// should anything still wait then (the engine bounds every
// wait on a host, the timer makes the promise hold regardless); the second
// exits 130 at once. What the run made is in its state.json, journaled as
// it went: `rlab down` undoes what is left, and each host's agent undoes
// what it made when its connection ends.
func onInterrupt(sigs <-chan os.Signal, stderr io.Writer, bound time.Duration, stop func(os.Signal), exit func(int)) {
	first := true
	for s := range sigs {
		if !first {
			fmt.Fprintf(stderr, "\n%s again: stopping at once (each host's agent undoes what it made when its connection ends; rlab down RUN_DIR undoes what is left)\n", s)
			exit(exitInterrupted)
			return
		}
		first = false
		fmt.Fprintf(stderr, "\n%s: tearing down (at most %s; press Ctrl-C again to stop at once)\n", s, spoken(bound))
		stop(s)
		time.AfterFunc(bound, func() {
			fmt.Fprintf(stderr, "teardown did not end within %s: stopping (rlab down RUN_DIR undoes what is left)\n", spoken(bound))
			exit(exitInterrupted)
		})
	}
}

// spoken writes whole seconds as "30 s", as the help text does.
func spoken(d time.Duration) string {
	if d >= time.Second && d%time.Second == 0 {
		return fmt.Sprintf("%d s", d/time.Second)
	}
	return d.String()
}
