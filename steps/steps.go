// Package steps holds the ops that carry out the plan's steps on hosts:
// RDMA devices, captures and the artifact fetch, and the library every
// workload op is built from (Workload, Outcome, the trial prologue
// RunTrials, process tracking Procs/StartProc/WaitProc, the two-sided
// runner NewRDMAPair). The workload ops themselves live in their tool
// kind's package (kinds/perftest, kinds/pingpong, kinds/rping, kinds/tcp,
// kinds/exec, kinds/program), whose registered value implements OpMaker;
// NewWorkload finds a tool's through the kinds registry. Each op is a type
// behind one small interface (Op: Describe, Apply, Undo); optional
// abilities are extra one-method interfaces. Ops talk to hosts only
// through the agent protocol's typed calls (agent/rpc's Method values) via
// the Host interface defined here.
//
// Words, one meaning each in rlab's Go code:
//   - a step is one node of the plan (engine/plan.Step: one action on one
//     host, an id such as "server/workload-server/bw"; plan.json's steps);
//   - an op (Op) is the work that carries out one or more steps and undoes
//     it: a workload's server and client steps are one op, a capture's start
//     and stop steps one;
//   - a trial is one run of a workload's tool, one size × one repeat
//     (kinds.Trial);
//   - a unit is a unit of measurement (Gb/s, usec);
//   - a kind is a tool kind, what package kinds registers (kinds.Kind, one
//     package kinds/<name> each). A lab's blocks have a block type (host,
//     rxe, siw, rdma, …), a plan step an action, an artifact a type, an
//     RDMA device a driver. (Wire and file names keep their spelling:
//     plan.json's "kind" of a step, results.json's "kind" of an artifact,
//     the "unit" run event.)
//
// steps imports agent/proto, agent/rpc (the typed calls; a leaf over
// agent/proto and the standard library), kinds (the descriptors, not the
// families), engine/results and engine/rundir (the run directory's one
// writer, a standard-library leaf) only; it must not import the
// lab model, the SSH layer or the engine, so every op is testable against
// an in-process agent.
package steps

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc"
	"github.com/rlab-dev/rlab/engine/results"
	"github.com/rlab-dev/rlab/kinds"
)

// Op is one piece of work the engine applies on hosts, carrying out one or
// more of the plan's steps. Undo reverses what Apply did and is idempotent:
// calling it twice, or after a failed or never-run Apply, is harmless.
type Op interface {
	// Describe is the one-line text shown in plans, progress and events.
	Describe() string
	Apply(ctx context.Context, env *Env) error
	Undo(ctx context.Context, env *Env) error
}

// Outcomer is an op that measured something (a workload).
type Outcomer interface {
	Outcome() *Outcome
}

// Host is one host's agent as the steps see it. Calls go through it only
// typed (rpc.Invoke with one of agent/rpc's Method values): there is no
// method by name, so a wrong params type does not compile
// (TestWrongParamsDoNotCompile). Agent errors are returned as (wrapped)
// *proto.Error.
type Host interface {
	Name() string
	rpc.Caller
}

// Effect is one side effect on a host, journaled before it happens (Pending)
// and again once it is known (or undone), so `rlab down` can undo it later.
type Effect struct {
	Host    string   `json:"host"`
	Type    string   `json:"kind"` // "rxe", "proc", "capture", "tcp", "impair"
	ID      string   `json:"id"`   // rxe device name or agent handle
	Netdev  string   `json:"netdev,omitempty"`
	Argv    []string `json:"argv,omitempty"`
	PID     int      `json:"pid,omitempty"`
	Created bool     `json:"created,omitempty"` // rxe: made by us (false: found, not ours)
	Keep    bool     `json:"keep,omitempty"`
	Pending bool     `json:"pending,omitempty"` // about to happen
	Undone  bool     `json:"undone,omitempty"`  // reversed or ended
	Detail  string   `json:"detail,omitempty"`  // impair: the netem asked for, then the root qdisc read back
	// impair: the netdev's own gso_max_segs as the agent found it before
	// it set 1 (proto.ImpairResult.GSOOwn), which `rlab down` gives back
	// when the run's agent was killed; 0: not known.
	GSOOwn uint32 `json:"gso_own,omitempty"`

	// proc, capture: the process's start time and boot (empty from an older
	// agent or state.json); `rlab down` signals PID only while it is them.
	proto.ProcIdentity
}

// Journal records side effects. Note upserts by (Host, Kind, ID) and must
// persist before it returns.
type Journal interface {
	Note(e Effect) error
}

// ParseFunc turns a tool's output into samples, and says what else the
// parser has to say about it (the lines it did not read, its notes, a
// bidirectional sum). json says out is perftest's --out_json file rather
// than its text report; stderr is the same process's stderr (warnings,
// rping's errors).
type ParseFunc func(tool string, out, stderr []byte, json bool) ([]results.Sample, results.ParseNote, error)

// Env is what steps share during one run.
type Env struct {
	Hosts   map[string]Host         // by lab host name
	Facts   map[string]*proto.Facts // by host name (may be missing: then defaults apply)
	Journal Journal
	Parse   ParseFunc
	Log     *slog.Logger
	// Keep leaves rxe devices in place on Undo (rlab run --keep).
	Keep bool
	// Notify, when set, is told at once what a person watching the run
	// should see before the workload ends (a size that timed out).
	Notify func(workload, message string)
	// TrialStart, when set, is told as each trial of a workload (one size ×
	// repeat) starts, e.g. "size 1MiB, repeat 2 (4/6)": the live progress.
	TrialStart func(workload, trial string)
	// Mask, when set, may wrap the writer a pulled file's bytes go to (nil:
	// as they are): the run masks its sensitive values in what workloads
	// printed before it reaches the run directory.
	Mask func(path string, w io.Writer) io.WriteCloser
	// Emulation names the hosts known to be emulated (TCG) guests before
	// their facts say so, with why: the local VMs the run booted under
	// TCG (qptimeout.go). Set before the workloads, then only read.
	Emulation map[string]string
	// MaskName, when set, is the name a pulled file gets from its path on
	// the host (sensitive values masked); the Puller is given the same.
	MaskName func(path string) string
	// MaskCut, when set, masks the sensitive values in a text a host cut
	// before it (start: a process's output tail) or after it (end: a
	// file's first bytes), the end of a value at its start and the start
	// of one at its end too (SECURITY 195).
	MaskCut func(s string, start, end bool) string

	mu      sync.Mutex
	devices map[string]*proto.DeviceInfo // by device reference name, set by the device ops (SetDevice)
	// made is what the steps made in the hosts' work dirs, by host and
	// path: its artifact type (Made).
	made map[string]map[string]string

	memoMu sync.Mutex
	memo   map[string]*memoEntry
}

type memoEntry struct {
	once sync.Once
	val  string
	err  error
}

// Once runs f once per key for the whole run, however many steps ask at
// the same time, and gives every caller its answer: a program's source is
// shipped to and built on a host once, whichever of its workloads runs
// first.
func (e *Env) Once(key string, f func() (string, error)) (string, error) {
	e.memoMu.Lock()
	if e.memo == nil {
		e.memo = map[string]*memoEntry{}
	}
	m := e.memo[key]
	if m == nil {
		m = &memoEntry{}
		e.memo[key] = m
	}
	e.memoMu.Unlock()
	m.once.Do(func() { m.val, m.err = f() })
	return m.val, m.err
}

// Host returns the named host or an error naming it.
func (e *Env) Host(name string) (Host, error) {
	h, ok := e.Hosts[name]
	if !ok || h == nil {
		return nil, fmt.Errorf("host %q is not connected", name)
	}
	return h, nil
}

// SetDevice records what rxe.ensure reported for an rxe block.
func (e *Env) SetDevice(name string, info *proto.DeviceInfo) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.devices == nil {
		e.devices = map[string]*proto.DeviceInfo{}
	}
	e.devices[name] = info
}

// Made records that an op made the file at path in host's work dir, of
// type (results.ArtifactCapture or results.ArtifactLog): the fetch files
// and masks it by what made it, not by its name (a workload's own x.pcap
// is a log; a capture is one whatever it is named).
func (e *Env) Made(host, path, typ string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.made == nil {
		e.made = map[string]map[string]string{}
	}
	if e.made[host] == nil {
		e.made[host] = map[string]string{}
	}
	e.made[host][path] = typ
}

// MadeOn is what the ops recorded as made on host (Made): path → type.
func (e *Env) MadeOn(host string) map[string]string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return maps.Clone(e.made[host])
}

// Device returns what the device op reported for a device block (rxe,
// siw or rdma: rxe.ensure or rdma.use).
func (e *Env) Device(name string) (*proto.DeviceInfo, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	info, ok := e.devices[name]
	if !ok {
		return nil, fmt.Errorf("rxe %q is not ready (its rxe step did not run or failed)", name)
	}
	return info, nil
}

func (e *Env) Note(ef Effect) error {
	if e.Journal == nil {
		return nil
	}
	if err := e.Journal.Note(ef); err != nil {
		return fmt.Errorf("journal %s %q on host %q: %w", ef.Type, ef.ID, ef.Host, err)
	}
	return nil
}

func (e *Env) notify(workload, message string) {
	if e.Notify != nil {
		e.Notify(workload, message)
	}
}

func (e *Env) logger() *slog.Logger {
	if e.Log == nil {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return e.Log
}

func (e *Env) HostFacts(host string) *proto.Facts {
	if f := e.Facts[host]; f != nil {
		return f
	}
	return &proto.Facts{}
}

// Workload is what a workload op needs, resolved from the lab model by the
// engine (host and rxe references become names).
type Workload struct {
	// Workload is its names, tool and option values as the lab model holds
	// them (the same type, embedded there too).
	kinds.Workload

	ServerHost, ClientHost     string // host names (2-sided tools)
	ServerDevice, ClientDevice string // rxe names (RDMA tools)
	ServerAddr                 string // tcp: the address the client dials (default: the server host's name)
	DialDevice                 string // tcp: else the IPv4 of this rxe's netdev (lab.ServerDial)
	DialWhy                    string // tcp: where the dialed address comes from, for the plan and results
	Host                       string // exec

	// Trials are what its op runs: the plan's trials
	// (plan.WorkloadPlan.Trials), each with both sides' argv whose
	// placeholders the op fills from what the run found (kinds.Fill). nil
	// (an op's own test): the op plans each trial itself the same way.
	Trials []kinds.Planned
}

// Outcome is what one workload did.
type Outcome struct {
	Workload string           `json:"workload"`
	Tool     string           `json:"tool"`
	Status   string           `json:"status"` // ok, failed, timed_out, skipped
	Error    string           `json:"error,omitempty"`
	Runs     []RunRecord      `json:"runs"`
	Samples  []results.Sample `json:"-"`
	Start    time.Time        `json:"start"`
	End      time.Time        `json:"end"`
}

// Outcome statuses.
const (
	StatusOK       = "ok"
	StatusFailed   = "failed"
	StatusTimedOut = "timed_out"
	StatusSkipped  = "skipped"
)

// RunRecord is one run of a tool (one size × repeat): its commands and exits.
type RunRecord struct {
	Size   int64    `json:"size,omitempty"`
	Repeat int      `json:"repeat"`
	Server *ProcRef `json:"server,omitempty"`
	Client *ProcRef `json:"client,omitempty"`
	Source string   `json:"source,omitempty"` // "json" or "text": what the samples were parsed from
	// Parse is what the output parser said besides the samples, when it
	// said anything (results.Workload.Parse in results.json).
	Parse *results.ParseNote `json:"parse,omitempty"`
}

// ProcRef is one process a run started.
type ProcRef struct {
	Host     string   `json:"host"`
	Handle   string   `json:"handle"`
	Argv     []string `json:"argv"`
	ExitCode int      `json:"exit_code"`
	TimedOut bool     `json:"timed_out,omitempty"`
	Seconds  float64  `json:"seconds"`
}

// OpMaker is what steps asks of a tool kind (a kinds.Kind): the op that
// runs one workload of its tools.
type OpMaker interface {
	NewOp(w *Workload) (Op, error)
}

// KindOf returns the op maker of a tool's kind, if the tool is registered
// (kinds.Register) and its kind makes ops.
func KindOf(tool string) (OpMaker, bool) {
	k, ok := kinds.KindOf(tool)
	if !ok {
		return nil, false
	}
	s, ok := k.(OpMaker)
	return s, ok
}

// KindNames lists the valid tools, sorted.
func KindNames() []string {
	var names []string
	for _, n := range kinds.Names() {
		if _, ok := KindOf(n); ok {
			names = append(names, n)
		}
	}
	return names
}

// NewWorkload returns the op for w's tool, or an error listing the valid
// tools.
func NewWorkload(w *Workload) (Op, error) {
	k, ok := KindOf(w.Tool)
	if !ok {
		return nil, fmt.Errorf("workload %q: unknown tool %q (valid: %s)", w.Name, w.Tool, strings.Join(KindNames(), ", "))
	}
	return k.NewOp(w)
}

// Handle makes an agent Handle for a workload's run, unique per agent.
func Handle(w *Workload, side string, size int64, repeat int) string {
	h := "wl." + w.Slug + "." + side
	if size > 0 {
		h += fmt.Sprintf(".s%d", size)
	}
	return h + fmt.Sprintf(".r%d", repeat)
}

func Millis(d time.Duration) int {
	if d <= 0 {
		return 0
	}
	return int(d / time.Millisecond)
}

// Remaining is the time left before ctx's deadline (0: none).
func Remaining(ctx context.Context) time.Duration {
	dl, ok := ctx.Deadline()
	if !ok {
		return 0
	}
	r := time.Until(dl)
	if r < time.Millisecond {
		r = time.Millisecond
	}
	return r
}
