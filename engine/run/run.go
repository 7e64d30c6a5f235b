// Package run is the engine behind `rlab run`: it executes
// engine/plan's plan of a lab (Options.Plan: it plans nothing itself): it
// boots the local VMs, connects to the agent of every host
// the plan gives one (Plan.Agents), checks them, creates rxe devices,
// starts captures, runs the workloads along the plan's DAG, pulls
// artifacts, evaluates `expect` blocks, writes the run directory and tears
// down what it created, journaling each side effect first in state.json
// (engine/runstate owns its format and signing; engine/down, `rlab down`,
// reads it back, connecting through DownConnector). It selects, orders
// and groups nothing itself: --only is the plan's (Plan.Selected), the phases and their order are
// the plan's (plan.Phases), which workload waits for which and what each
// capture and impairment covers are the plan's (Plan.Workloads, Captures,
// Impairs), and so are a class lab's students (Plan.Students); schedule.go
// wires its workers to them.
//
// A run directory's last files are written after the teardown, in this
// order: report.html (its timeline shows the teardown ended, with its
// outcome; its file list names manifest.json and complete.json as written
// after it), manifest.json (the sha256 of every other file, report.html's
// included: it cannot hash itself or complete.json), complete.json (the
// manifest's sha256), last.
//
// The engine reaches hosts only through the Host interface defined here
// (satisfied by the SSH agent client and, in tests, by an in-process agent);
// it must not import the CLI.
package run

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc"
	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/engine/plan"
	"github.com/rlab-dev/rlab/engine/preflight"
	"github.com/rlab-dev/rlab/engine/provision"
	"github.com/rlab-dev/rlab/engine/report"
	"github.com/rlab-dev/rlab/engine/results"
	"github.com/rlab-dev/rlab/engine/rundir"
	"github.com/rlab-dev/rlab/engine/runevent"
	"github.com/rlab-dev/rlab/engine/runstate"
	"github.com/rlab-dev/rlab/engine/termsafe"
	"github.com/rlab-dev/rlab/engine/toolout"
	"github.com/rlab-dev/rlab/steps"
)

// Exit codes of a run.
const (
	ExitOK          = 0
	ExitFailed      = 1   // a workload failed or an expect did not hold
	ExitInfra       = 2   // host unreachable, agent lost, preflight, rxe/capture set-up
	ExitInterrupted = 130 // cancelled (SIGINT)
)

// Host is one host's agent as the engine uses it.
type Host interface {
	Name() string
	// Send carries one typed call (rpc.Invoke): no method by name.
	rpc.Caller
	// Pull copies files of the agent's work dir into dstDir (verified,
	// confined to dstDir).
	Pull(ctx context.Context, files []proto.FileInfo, dstDir string) error
	// Close ends the agent session; the agent then stops what it started.
	Close() error
}

// Target is how to reach one host: from the lab, or from state.json.
type Target struct {
	runstate.Host
	// Plan is how the run's plan resolved the host (address, user, port,
	// jump, as structure): a run connects through it; nil for a host read
	// back from state.json (rlab down).
	Plan *plan.HostPlan `json:"-"`
	// LogDir, when set, is where the agent's own log (its stderr) goes.
	LogDir string `json:"-"`
	// Sensitive values are redacted from the agent's log as it is written
	// (the agent logs the argv it starts).
	Sensitive []string `json:"-"`
}

// Connector opens one host's agent for a run (SSH: dial, install, start).
type Connector interface {
	Connect(ctx context.Context, t Target, runID string) (Host, error)
}

// ConnectFunc adapts a function to Connector.
type ConnectFunc func(ctx context.Context, t Target, runID string) (Host, error)

func (f ConnectFunc) Connect(ctx context.Context, t Target, runID string) (Host, error) {
	return f(ctx, t, runID)
}

// VMBooter starts a lab's local VM hosts.
type VMBooter interface {
	Boot(ctx context.Context, hosts []*lab.Host, runDir string) (VMSet, error)
}

// vmFitter is a VMBooter that can say, before anything is made, that the
// VMs a plan boots do not fit (LocalVMs: this machine's memory).
type vmFitter interface {
	Fit(c *plan.VMCost) error
}

// VMSet is booted VMs: their SSH endpoints, their record for state.json, and
// their shutdown.
type VMSet interface {
	// Endpoint returns how to reach the VM of the named host.
	Endpoint(host string) (runstate.Host, bool)
	State() ([]byte, error)
	Shutdown(ctx context.Context) error
}

// Options configure a run.
type Options struct {
	// Out is the run directory; "" means RunsDir/<lab>/<UTC timestamp>.
	Out     string
	RunsDir string // default "runs"
	// Plan is the plan to execute, engine/plan's of this lab (required):
	// what it selects (--only), the hosts it connects, its phases and the
	// edges between its steps are the run's. A student check
	// (`rlab check --validate`) is the plan of one (plan.Options.Check):
	// its run's directory is RunsDir/<lab>/check-<UTC timestamp> and its
	// exit code is 0 when every student passes, 1 when one fails, 2 when
	// a host cannot be reached.
	Plan *plan.Plan
	// Keep leaves rxe devices in place.
	Keep bool
	// ProvisionOptions bound the plan's provision steps (rlab run
	// --provision, a host's provision = true).
	ProvisionOptions provision.Options
	// Parallel bounds hosts connected and workloads run at once (default 64).
	Parallel  int
	Connector Connector
	VMs       VMBooter // needed only when the lab has VM hosts
	// Preflight returns the problems that stop the run (exit 2), each
	// naming its host and fix; default engine/preflight.Check.
	Preflight func(l *lab.Lab, facts map[string]*proto.Facts) []preflight.Problem
	// Parse turns tool outputs into samples; default
	// engine/toolout.ParseOutput (a run always records its samples).
	Parse steps.ParseFunc
	// WriteResults writes results.json, summary.md and junit.xml into dir
	// (default results.WriteRun).
	WriteResults func(dir string, r *results.Run) error
	Log          *slog.Logger
	// OnEvent sees every event (progress display).
	OnEvent func(Event)
	// TeardownTimeout bounds the teardown after a cancel (default 30s).
	TeardownTimeout time.Duration
	// StopTimeout bounds each clean-up of a workload, a capture or an
	// impairment once it has ended (stopping its processes; default
	// 2*steps.UndoTimeout), and the reading of a timed-out workload's
	// dmesg (30s when longer): a host that keeps its session up and never
	// answers is given up on past it. Tests of such hosts shorten it.
	StopTimeout time.Duration
	// Hard, when closed (a second Ctrl-C), stops the teardown at once.
	Hard <-chan struct{}
	// NoReport skips report.html (engine/report).
	NoReport bool
	Now      func() time.Time
	// AgentWatchdog arms each host's agent watchdog (a Host with a
	// Watchdog method: SSH hosts): an agent that hears nothing from this
	// rlab for that long (its network gone) undoes what the run made there
	// and exits, and rlab pings it meanwhile. 0 means
	// DefaultAgentWatchdog, < 0 off.
	AgentWatchdog time.Duration
}

// DefaultAgentWatchdog is Options.AgentWatchdog's default (rlab run
// --agent-watchdog).
const DefaultAgentWatchdog = 60 * time.Second

// watchdogHost is a Host whose agent has a watchdog (sshHost).
type watchdogHost interface {
	Watchdog(ctx context.Context, limit time.Duration) error
}

// Result is what a run ended with.
type Result struct {
	Dir      string
	Code     int
	Err      error // what went wrong, joined; nil when Code is 0
	Outcomes []*steps.Outcome
	Expects  []ExpectResult
	// Students is the per-student status of a class lab (nil otherwise).
	Students []results.Student
	// Unreachable names the hosts that could not be connected to or whose
	// agent was lost, with the error.
	Unreachable []string
}

// infraError marks a failure of the infrastructure (exit 2) rather than of a
// workload (exit 1).
type infraError struct{ err error }

func (e *infraError) Error() string { return e.err.Error() }
func (e *infraError) Unwrap() error { return e.err }

// runner is one run in progress.
type runner struct {
	opts    Options
	lab     *lab.Lab
	dir     string
	runID   string
	log     *slog.Logger
	journal *runstate.Journal
	ev      *events
	env     *steps.Env

	hosts     []*plan.HostPlan // hosts this run opens an agent on (plan.Agents)
	rxes      []*steps.Device
	captures  []*captureWindow
	impairs   []*impairWindow // impair.go
	workloads []*workloadNode
	plan      *plan.Plan // of this run: what it executes and plan.json
	vms       VMSet
	// discard names the hosts that are local VMs of this run (bootVMs):
	// stopped and thrown away at teardown, so what the run made inside
	// them is not undone one by one (discard.go).
	discard map[string]bool

	mu      sync.Mutex
	conns   map[string]Host
	lost    map[string]error // hosts whose agent was lost
	broken  map[string]error // class labs: hosts whose rxe or preflight failed (their workloads are skipped)
	infra   []error
	failed  []error
	started time.Time

	downLinks map[string]error // data links found down, by host pair (link.go)
	// pulled is where each file the fetch steps pulled landed: host name →
	// path in its work dir → path from the run directory (steps.Fetch
	// decides; read once fetchAll has returned). A workload's outputs and
	// a capture's files are looked up by the names their steps gave them.
	pulled map[string]map[string]string
	// artifacts are the fetch steps' artifacts (steps.Fetch.Artifacts),
	// paths from the run directory: results.json's artifacts.
	artifacts []results.Artifact

	dirLock *os.File // holds dir while the run writes it (makeRunDir)
	unmask  func()   // ends rundir's masking of dir (rundir.Mask)
}

// Run executes a lab and returns the run's result; it never panics on host
// failures and always tears down what it created.
func Run(ctx context.Context, l *lab.Lab, opts Options) *Result {
	if opts.Parallel <= 0 {
		opts.Parallel = 64
	}
	if opts.TeardownTimeout <= 0 {
		opts.TeardownTimeout = 30 * time.Second
	}
	if opts.StopTimeout <= 0 {
		opts.StopTimeout = 2 * steps.UndoTimeout
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Parse == nil {
		opts.Parse = toolout.ParseOutput
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	r := &runner{opts: opts, lab: l, log: opts.Log, conns: map[string]Host{}, lost: map[string]error{}, pulled: map[string]map[string]string{}, started: opts.Now()}
	res := &Result{}
	defer r.unlockDir()
	if err := r.prepare(); err != nil {
		res.Dir, res.Code, res.Err = r.dir, ExitFailed, err
		return res
	}
	res.Dir = r.dir
	r.execute(ctx, res)
	return res
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

func slugify(s string) string {
	s = strings.Trim(unsafeChars.ReplaceAllString(s, "-"), "-.")
	if s == "" {
		s = "lab"
	}
	return s
}

// prepare selects what runs, creates the run directory and writes the lab
// files, plan.json, state.json and events.jsonl.
func (r *runner) prepare() error {
	if r.opts.Connector == nil {
		return errors.New("run: no connector")
	}
	if err := r.schedule(); err != nil {
		return err
	}
	if f, ok := r.opts.VMs.(vmFitter); ok && r.plan.VMCost != nil {
		if err := f.Fit(r.plan.VMCost); err != nil {
			return fmt.Errorf("boot local VM hosts: %w", err)
		}
	}
	now := r.opts.Now().UTC()
	stamp := now.Format("20060102T150405Z")
	dir := r.opts.Out
	if dir == "" {
		root := r.opts.RunsDir
		if root == "" {
			root = "runs"
		}
		name := stamp
		if r.plan.Check {
			name = "check-" + stamp
		}
		dir = filepath.Join(root, slugify(r.lab.Name), name)
	}
	made, lock, err := makeRunDir(dir, r.opts.Out != "")
	if err != nil {
		return err
	}
	r.dir, r.dirLock = made, lock
	// Every file written into the run directory from here on is masked
	// by rundir's one writer (SECURITY 209), whichever package writes it.
	if len(r.lab.Sensitive) > 0 {
		r.unmask = rundir.Mask(r.dir, newRedactor(r.lab.Sensitive))
	}
	var rnd [3]byte
	rand.Read(rnd[:])
	r.runID = slugify(r.lab.Name) + "-" + stamp + "-" + hex.EncodeToString(rnd[:])
	if err := writeLabFiles(r.dir, r.lab); err != nil {
		return err
	}
	if err := writeJSON(filepath.Join(r.dir, "plan.json"), r.plan); err != nil {
		return err
	}
	st := runstate.State{Lab: r.lab.Name, RunID: r.runID, Started: now}
	for _, h := range r.hosts {
		st.Hosts = append(st.Hosts, stateHostOf(h, 0))
	}
	if r.journal, err = runstate.Create(r.dir, st); err != nil {
		return err
	}
	r.journal.SetRedactor(newRedactor(r.lab.Sensitive))
	f, err := rundir.Create(filepath.Join(r.dir, EventsFile), rundir.New)
	if err != nil {
		return fmt.Errorf("create event log: %w", err)
	}
	r.ev = &events{f: f, redact: newRedactor(r.lab.Sensitive), notify: r.opts.OnEvent}
	r.env = &steps.Env{
		Hosts:   map[string]steps.Host{},
		Facts:   map[string]*proto.Facts{},
		Journal: r.journal,
		Parse:   r.opts.Parse,
		Log:     r.log,
		Keep:    r.opts.Keep,
		Notify:  func(w, msg string) { r.emit(Event{Type: EventNotice, Workload: w, Message: msg}) },
		// The trial (size × repeat) under way, for the live progress.
		TrialStart: func(w, u string) { r.emit(Event{Type: EventTrial, Workload: w, Message: u}) },
		Mask:       pullMask(r.lab.Sensitive),
		MaskName:   pullName(r.lab.Sensitive),
		MaskCut:    lab.CutMask(r.lab.Sensitive),
	}
	return nil
}

// EventTrial is the start of one trial of a workload (one size × repeat).
const EventTrial = runevent.Trial

// makeRunDir creates dir, never reusing an existing one: a second run in the
// same second gets a -2, -3... suffix; an explicit --out (exact) that exists
// and is not empty is refused, as is one another run holds. The directory
// is held (flock on it, released when the run ends or its process dies)
// from before anything is written into it, so of two runs that find the
// same empty directory at once, one takes it and the other refuses it
// (exact) or takes the next suffix.
func makeRunDir(dir string, exact bool) (string, *os.File, error) {
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return "", nil, fmt.Errorf("create run directory: %w", err)
	}
	for i := 1; i < 100; i++ {
		d := dir
		if i > 1 {
			d = fmt.Sprintf("%s-%d", dir, i)
		}
		err := os.Mkdir(d, 0o700)
		if err != nil && !errors.Is(err, os.ErrExist) {
			return "", nil, fmt.Errorf("create run directory: %w", err)
		}
		lock, lerr := lockDir(d)
		if lerr != nil && !errors.Is(lerr, errDirHeld) {
			return "", nil, fmt.Errorf("create run directory: %w", lerr)
		}
		if lerr == nil {
			if ents, rerr := os.ReadDir(d); rerr == nil && len(ents) == 0 {
				return d, lock, nil
			}
			lock.Close()
		}
		if exact {
			if lerr != nil {
				return "", nil, fmt.Errorf("run directory %s is being written by another rlab run: choose another --out", d)
			}
			return "", nil, fmt.Errorf("run directory %s exists and is not empty: a run never overwrites another; choose another --out", d)
		}
	}
	return "", nil, fmt.Errorf("create run directory %s: it and its numbered variants exist", dir)
}

// errDirHeld: another run holds the directory.
var errDirHeld = errors.New("run directory held by another run")

// lockDir takes an exclusive flock on directory d, without waiting.
func lockDir(d string) (*os.File, error) {
	f, err := os.OpenFile(d, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, errDirHeld
		}
		return nil, fmt.Errorf("lock %s: %w", d, err)
	}
	return f, nil
}

// unlockDir lets go of the run directory (makeRunDir).
func (r *runner) unlockDir() {
	if r.unmask != nil {
		r.unmask()
		r.unmask = nil
	}
	if r.dirLock != nil {
		r.dirLock.Close()
		r.dirLock = nil
	}
}

func writeLabFiles(dir string, l *lab.Lab) error {
	ld := filepath.Join(dir, "lab")
	if err := os.MkdirAll(ld, 0o700); err != nil {
		return fmt.Errorf("save lab files: %w", err)
	}
	names := make([]string, 0, len(l.Files))
	for n := range l.Files {
		names = append(names, n)
	}
	sort.Strings(names)
	// "The lab files as run (sensitive values redacted)": a sensitive
	// default is the lab's own text, and the report shows these files.
	red := newRedactor(l.Sensitive)
	for _, n := range names {
		rel := filepath.Base(n)
		if l.Dir != "" {
			if r, err := filepath.Rel(l.Dir, n); err == nil && filepath.IsLocal(r) {
				rel = r
			}
		}
		p := filepath.Join(ld, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return fmt.Errorf("save lab file %s: %w", n, err)
		}
		if err := rundir.WriteFile(p, []byte(red.Replace(string(l.Source(n))))); err != nil {
			return fmt.Errorf("save lab file %s: %w", n, err)
		}
	}
	return nil
}

// stateHostOf is how state.json records a planned host: how to reach it
// as the plan resolved it, a lab host as bastion recorded whole (JumpHost,
// its own user, key and jump), a jump string as its hops (Hops), so down
// reaches it as the run did and parses nothing. The address, user and
// files are the lab host's own (the plan's copies are redacted for show).
func stateHostOf(hp *plan.HostPlan, depth int) runstate.Host {
	h := hp.Ref
	st := runstate.Host{
		Name: h.Name, Slug: h.Slug, Address: h.Address, Port: h.Port, User: h.User,
		IdentityFile: h.IdentityFile, KnownHosts: h.KnownHosts, Become: h.Become, VM: h.VM != nil,
		Hops: hp.Hops,
	}
	if hp.Via != nil && depth < maxJumpDepth {
		j := stateHostOf(hp.Via, depth+1)
		st.JumpHost = &j
	}
	return st
}

func (r *runner) emit(ev Event) { r.ev.emit(ev) }

// hostDir is the run directory's folder of the host with this slug.
func (r *runner) hostDir(slug string) string { return filepath.Join(r.dir, "hosts", slug) }

// addErr records an error as infrastructure (exit 2) or workload (exit 1).
func (r *runner) addErr(err error) {
	if err == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var ie *infraError
	if errors.As(err, &ie) {
		r.infra = append(r.infra, err)
	} else {
		r.failed = append(r.failed, err)
	}
	r.emit(Event{Type: "error", Error: err.Error()})
}

// execute runs the phases; teardown always runs.
func (r *runner) execute(ctx context.Context, res *Result) {
	r.emit(Event{Type: "run.start", Message: fmt.Sprintf("lab %s, run %s, %d hosts, %d workloads", r.lab.Name, r.runID, len(r.hosts), len(r.workloads))})
	ok := r.phase(ctx, "boot", r.bootVMs)
	for _, name := range plan.SetupPhases() { // the plan's order; schedule.go runs each
		if !ok {
			break
		}
		ph := setup[name]
		if ph.when != nil && !ph.when(r) {
			continue
		}
		var ids []string
		if ph.ids {
			ids = r.plan.IDs("", "", plan.ActionsOf(name)...)
		}
		ok = r.phase(ctx, string(name), func(ctx context.Context) error { return ph.run(r, ctx) }, ids...)
	}
	if ok {
		r.runWorkloads(ctx)
	}
	// From here on, a cancelled run still stops captures, pulls what exists
	// and tears down, bounded by TeardownTimeout and the second Ctrl-C.
	tctx, cancel := r.teardownContext(ctx)
	defer cancel()
	stopAll(tctx, r, undoable(r, r.impairs)) // captures stop everywhere: their files are pulled
	stopAll(tctx, r, r.captures)
	fctx, fcancel := r.fetchContext(ctx, tctx)
	r.fetchAll(fctx)
	fcancel()
	r.explainLostVMs() // vms.go
	res.Outcomes = r.outcomes()
	res.Expects = r.evalExpects()
	for _, e := range res.Expects {
		// An expect of a workload that did not complete was not evaluated:
		// the workload's own failure (or skip) is the error, not the expect.
		if !e.Held && !e.Skipped {
			r.addErr(fmt.Errorf("workload %q: expect %s did not hold: %s", e.Workload, e.Condition, e.Message))
		}
	}
	res.Students = r.studentResults(res)
	infraBefore := append([]error(nil), r.infra...)
	code := ExitOK
	switch {
	case ctx.Err() != nil:
		code = ExitInterrupted
		r.addErr(&infraError{fmt.Errorf("interrupted: %w", context.Cause(ctx))})
	case len(r.infra) > 0:
		code = ExitInfra
	case len(r.failed) > 0:
		code = ExitFailed
	}
	r.mu.Lock()
	for _, h := range r.hosts {
		if err := r.lost[h.Name]; err != nil {
			res.Unreachable = append(res.Unreachable, firstLineOf(err.Error()))
		}
	}
	r.mu.Unlock()
	if r.plan.Check && code == ExitInfra && len(res.Unreachable) == 0 {
		// A check's question is whether each student's pair works: what
		// failed on a reachable host (its rxe device, its preflight) is the
		// student's failure, exit 1; only unreachable hosts are exit 2.
		code = ExitFailed
	}
	res.Code = code
	res.Err = errors.Join(append(append([]error{}, r.infra...), r.failed...)...)
	// A run directory is complete only when every file is written and
	// synced: what failed to be written is kept here, and only without any
	// is complete.json written, last.
	var unwritten []error
	if err := r.writeResults(res); err != nil {
		unwritten = append(unwritten, err)
		r.addErr(&infraError{err})
		if res.Code == ExitOK {
			res.Code = ExitInfra
		}
		res.Err = errors.Join(res.Err, err)
	}
	r.teardown(tctx)
	if len(r.infra) > len(infraBefore) && res.Code == ExitOK {
		// The teardown failed (an rxe device could not be deleted): the
		// results say so too.
		res.Code = ExitInfra
		res.Err = errors.Join(r.infra[len(infraBefore):]...)
		if err := r.writeResults(res); err != nil {
			unwritten = append(unwritten, err)
		}
	}
	fin := r.opts.Now().UTC()
	if err := r.journal.Update(func(st *runstate.State) { st.Finished = &fin }); err != nil {
		unwritten = append(unwritten, err)
	}
	r.emit(Event{Type: "run.end", Status: statusText(res.Code), Seconds: fin.Sub(r.started).Seconds()})
	if err := r.ev.close(); err != nil {
		unwritten = append(unwritten, fmt.Errorf("write %s: %w", EventsFile, err))
	}
	// The files of a finished run, in this order (see finalFiles):
	// report.html, drawn once every other file is final (the teardown's
	// end in the timeline, the results as the teardown left them) and
	// naming the two files after it; manifest.json, hashing every file
	// but itself and complete.json; complete.json, naming the manifest's
	// sha256. The report is a view: a failure to draw it is reported, not
	// a failure of the run, but the directory is then incomplete.
	if !r.opts.NoReport {
		if err := report.RenderWith(r.dir, report.Options{Lab: r.lab, After: finalFiles}); err != nil {
			r.log.Warn("render report.html", "dir", r.dir, "err", err)
			r.emit(Event{Type: "warning", Step: "report", Error: err.Error()})
			unwritten = append(unwritten, fmt.Errorf("render report.html: %w", err))
		}
	}
	if len(unwritten) == 0 {
		if err := writeManifest(r.dir); err != nil {
			unwritten = append(unwritten, err)
		} else if err := results.MarkComplete(r.dir); err != nil {
			unwritten = append(unwritten, err)
		}
	}
	if len(unwritten) > 0 {
		// Whatever the workloads did, a run whose files are not all there
		// is an infrastructure failure: `rlab runs` and `show` say so too.
		res.Code = ExitInfra
		res.Err = errors.Join(res.Err, fmt.Errorf("run directory %s is incomplete (no %s): %w", r.dir, results.CompleteFile, errors.Join(unwritten...)))
	}
	r.forDisplay(res)
}

// finalFiles are written after report.html, in this order: the manifest
// hashes every other file (report.html included, so its sha256 is the
// page's as written; it cannot hash itself or the marker that names it),
// then complete.json names the manifest's sha256, last. Drawing the report
// after the teardown rather than beside it adds its render time to the run:
// 0.22-0.29 s for a demo run directory (two TCG VMs, 22 MiB of RoCE
// capture), measured as `rlab report`'s wall time, process start included,
// on a busy 2-core machine.
var finalFiles = []string{ManifestFile, results.CompleteFile}

// forDisplay makes what the caller prints of res (the CLI's error, status
// lines and expects) redacted like the run's files and safe for a terminal:
// the run's files are written by now, so this changes only the caller's copy.
func (r *runner) forDisplay(res *Result) {
	red := newRedactor(r.lab.Sensitive)
	clean := func(s string) string { return termsafe.Block(red.Replace(s)) }
	if res.Err != nil {
		if c := clean(res.Err.Error()); c != res.Err.Error() {
			res.Err = errors.New(c)
		}
	}
	for i, o := range res.Outcomes {
		if o == nil {
			continue
		}
		c := *o
		c.Error = clean(o.Error)
		res.Outcomes[i] = &c
	}
	for i := range res.Expects {
		e := &res.Expects[i]
		e.Message, e.Error, e.Got = clean(e.Message), clean(e.Error), clean(e.Got)
	}
	for i, u := range res.Unreachable {
		res.Unreachable[i] = clean(u)
	}
}

func statusText(code int) string {
	switch code {
	case ExitOK:
		return "ok"
	case ExitFailed:
		return "failed"
	case ExitInfra:
		return "error"
	default:
		return "interrupted"
	}
}

// phase runs one set-up phase; false stops the run before the workloads.
func (r *runner) phase(ctx context.Context, name string, f func(context.Context) error, ids ...string) bool {
	if ctx.Err() != nil {
		return false
	}
	start := time.Now()
	r.emit(Event{Type: "step.start", Step: name, IDs: ids})
	err := f(ctx)
	ev := Event{Type: "step.end", Step: name, Status: "ok", Seconds: time.Since(start).Seconds(), IDs: ids}
	if err != nil {
		ev.Status, ev.Error = "failed", err.Error()
	}
	r.emit(ev)
	if err != nil {
		if ctx.Err() == nil && !errors.Is(err, errAllUnreachable) {
			r.addErr(&infraError{err})
		}
		return false
	}
	return true
}

// teardownContext is the context of the teardown: not cancelled by the first
// Ctrl-C, but bounded by TeardownTimeout once it was, and ended at once by
// the second.
func (r *runner) teardownContext(ctx context.Context) (context.Context, context.CancelFunc) {
	base := context.WithoutCancel(ctx)
	var tctx context.Context
	var cancel context.CancelFunc
	if ctx.Err() != nil {
		tctx, cancel = context.WithTimeout(base, r.opts.TeardownTimeout)
	} else {
		tctx, cancel = context.WithCancel(base)
		// A Ctrl-C during the teardown itself starts the bound then.
		stop := context.AfterFunc(ctx, func() {
			t := time.AfterFunc(r.opts.TeardownTimeout, cancel)
			context.AfterFunc(tctx, func() { t.Stop() })
		})
		prev := cancel
		cancel = func() { stop(); prev() }
	}
	if r.opts.Hard != nil {
		hard := r.opts.Hard
		go func() {
			select {
			case <-hard:
				cancel()
			case <-tctx.Done():
			}
		}()
	}
	return tctx, cancel
}

// fetchContext is the pulls' context within the teardown's: once ctx
// ends (Ctrl-C, before or during the pulls) they have half the teardown's
// bound, so that a host whose pull stalls (sshd keeps a stalled command's
// channel; its watch closes the connection CancelGrace after the context)
// leaves the rest of the bound to write the results and undo what the run
// made. Before, such a pull took the whole bound and the run ended with no
// results.json (issue 24, attack round 5).
func (r *runner) fetchContext(ctx, tctx context.Context) (context.Context, context.CancelFunc) {
	fctx, cancel := context.WithCancel(tctx)
	stop := context.AfterFunc(ctx, func() {
		t := time.AfterFunc(r.opts.TeardownTimeout/2, cancel)
		context.AfterFunc(fctx, func() { t.Stop() })
	})
	return fctx, func() { stop(); cancel() }
}

func (r *runner) outcomes() []*steps.Outcome {
	var out []*steps.Outcome
	for _, n := range r.workloads {
		o := n.outcome()
		r.tagImpairs(n, o) // impair.go
		out = append(out, o)
	}
	return out
}
