package run

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc"
	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/engine/plan"
	"github.com/rlab-dev/rlab/engine/remote"
	"github.com/rlab-dev/rlab/engine/rundir"
	"github.com/rlab-dev/rlab/engine/runstate"
	"github.com/rlab-dev/rlab/engine/sshx"
)

// SSHConnector reaches hosts over SSH (engine/sshx), installs the agent when
// its cache lacks it and starts it (engine/remote). One SSH connection per
// host for the whole run.
type SSHConnector struct {
	// Options of the dialers: KnownHosts are the user's files (the only
	// ones accept-new writes to); a host's own known_hosts file is added
	// per host: a lab's `known_hosts` as LabKnownHosts (trusted only for
	// hosts the user's files have no entry for), a local VM's generated one
	// as the only file that host is checked against.
	SSH    sshx.Options
	Agents *remote.Agents
	// Identities are tried for hosts that name no identity file.
	Identities []string
	// Pull are the options of every artifact pull: the per-host byte cap
	// (0: remote.DefaultMaxPullBytes) and a progress callback.
	Pull remote.PullOptions
	// Keep asks, on connections through the mux daemon (--persist), for
	// the agents it keeps between commands (remote.StartOptions.Keep),
	// leased for this run: the run's cleanup undoes what it created, and
	// the daemon's release stops whatever is left once the run lets go of
	// the agent (Ctrl-C included). rlab down leaves it off.
	Keep bool

	mu      sync.Mutex
	dialers map[dialerKey]*sshx.Dialer
}

// dialerKey names the Dialer a host needs: by its own known_hosts file,
// and whether that file is a VM's (rlab's own) or a lab's.
type dialerKey struct {
	knownHosts string
	vm         bool
}

func (s *SSHConnector) dialer(k dialerKey) (*sshx.Dialer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d := s.dialers[k]; d != nil {
		return d, nil
	}
	o := hostSSHOptions(s.SSH, k.knownHosts, k.vm)
	d, err := sshx.NewDialer(o)
	if err != nil {
		return nil, err
	}
	if s.dialers == nil {
		s.dialers = map[dialerKey]*sshx.Dialer{}
	}
	s.dialers[k] = d
	return d, nil
}

// hostSSHOptions are the SSH options for a host whose own known_hosts file
// is knownHosts ("" none). A lab's file only adds trust where the user's
// files (o.KnownHosts) have no entry for the host, and is never written
// (o.LabKnownHosts). A local VM's file holds the key rlab generated for it
// before boot: the VM is checked against that file alone, and nothing is
// ever recorded for it.
func hostSSHOptions(o sshx.Options, knownHosts string, vm bool) sshx.Options {
	o.KnownHosts = append([]string(nil), o.KnownHosts...)
	o.LabKnownHosts = append([]string(nil), o.LabKnownHosts...)
	switch {
	case knownHosts == "":
	case vm:
		o.KnownHosts, o.LabKnownHosts, o.AcceptNewHostKeys = []string{knownHosts}, nil, false
	default:
		o.LabKnownHosts = append([]string{sshx.ExpandHome(knownHosts)}, o.LabKnownHosts...)
	}
	return o
}

// Close closes the dialers (and the bastion connections they share).
func (s *SSHConnector) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range s.dialers {
		d.Close()
	}
	s.dialers = nil
	return nil
}

// HostTarget is how a lab host is reached over SSH: its address, port,
// user and identity file (identities when it names none), and its jump:
// another lab host (logged into with that host's own user, key and jump)
// or a "user@host:port,..." string whose bastions are logged into with the
// host's user and keys unless ~/.ssh/config says otherwise. Every command
// that reaches lab hosts without a plan (down, facts, check) goes through
// here; a run reaches the hosts its plan resolved (planTarget).
func HostTarget(h *lab.Host, identities []string) sshx.Target {
	hp, _ := plan.HostOf(h) // the lab loader checked its jump
	return planTarget(hp, identities, 0)
}

// planTarget is how a run reaches a host: as its plan resolved it (the
// jump string's hops parsed at plan time or the planned lab host it jumps
// through), parsing nothing again. The address and user are the lab
// host's: the plan's own copies show a sensitive value as "(sensitive)".
func planTarget(hp *plan.HostPlan, identities []string, depth int) sshx.Target {
	h := hp.Ref
	t := sshx.Target{Name: hp.Name, Address: h.Address, Port: h.Port, User: h.User}
	t.IdentityFiles = identityFiles(hp.Ref.IdentityFile, identities)
	if hp.Via != nil && depth < maxJumpDepth {
		j := planTarget(hp.Via, identities, depth+1)
		t.Jump = &j
		return t
	}
	t.Jump = hopChain(hp.Hops, t)
	return t
}

// stateTarget is how a host read back from a run's state.json (or a VM
// host, whose endpoint the VM engine gave) is reached.
func stateTarget(h runstate.Host, identities []string) (sshx.Target, error) {
	return stateTargetDepth(h, identities, 0)
}

// maxJumpDepth bounds a chain of lab hosts as bastions (the lab loader
// refuses a cycle; this bounds what a state.json from elsewhere holds).
const maxJumpDepth = runstate.MaxJumpDepth

func stateTargetDepth(h runstate.Host, identities []string, depth int) (sshx.Target, error) {
	t := sshx.Target{Name: h.Name, Address: h.Address, Port: h.Port, User: h.User}
	t.IdentityFiles = identityFiles(h.IdentityFile, identities)
	if h.VM {
		t.NoJump = true // a local VM is reached directly, whatever ~/.ssh/config says
		return t, nil
	}
	if h.JumpHost != nil {
		if depth >= maxJumpDepth {
			return t, fmt.Errorf("host %q: more than %d bastions in a row in the run's state", h.Name, maxJumpDepth)
		}
		j, err := stateTargetDepth(*h.JumpHost, identities, depth+1)
		if err != nil {
			return t, err
		}
		t.Jump = &j
		return t, nil
	}
	hops := h.Hops
	if hops == nil && h.Jump != "" {
		// A state.json from before hops were recorded: its jump string.
		var err error
		if hops, err = plan.ParseJump(h.Jump); err != nil {
			return t, fmt.Errorf("host %q: %w", h.Name, err)
		}
	}
	t.Jump = hopChain(hops, t)
	return t, nil
}

func identityFiles(file string, identities []string) []string {
	if file != "" {
		return []string{sshx.ExpandHome(file)}
	}
	return identities
}

// hopChain is the chain of bastions to host t through hops (the first
// dialled first), the last the closest to t: logged into with t's user
// (unless a hop names one) and keys unless ~/.ssh/config says otherwise.
func hopChain(hops []plan.Hop, t sshx.Target) *sshx.Target {
	var prev *sshx.Target
	for _, h := range hops {
		j := &sshx.Target{Name: "bastion " + h.Address, Address: h.Address, Port: h.Port, User: h.User,
			IdentityFiles: t.IdentityFiles, Jump: prev, NoJump: prev == nil}
		if j.User == "" {
			j.User = t.User
		}
		prev = j
	}
	return prev
}

// Connect implements Connector.
func (s *SSHConnector) Connect(ctx context.Context, t Target, runID string) (Host, error) {
	d, err := s.dialer(dialerKey{knownHosts: t.KnownHosts, vm: t.VM})
	if err != nil {
		return nil, err
	}
	var st sshx.Target
	switch {
	case t.Plan != nil && !t.Plan.VM:
		st = planTarget(t.Plan, s.Identities, 0)
	default:
		// A local VM (its endpoint is what the VM engine gave), or a
		// host read back from state.json.
		if st, err = stateTarget(t.Host, s.Identities); err != nil {
			return nil, err
		}
	}
	c, err := d.Dial(ctx, st)
	if err != nil {
		return nil, err
	}
	// A local VM has the agent on its agent disk (LocalVMs.Agent).
	so := remote.StartOptions{Host: t.Name, RunID: runID, Become: t.Become, Keep: s.Keep, AgentDisk: t.VM, Mask: lab.ErrorMask(t.Sensitive)}
	var logf *redactingWriter
	if t.LogDir != "" {
		if f, ferr := rundir.Create(filepath.Join(t.LogDir, "agent.log"), rundir.Append); ferr == nil {
			logf = &redactingWriter{w: f, c: f, r: newRedactor(t.Sensitive)}
			so.Stderr = logf
		}
	}
	// Open starts a cached agent in one session, else installs it (0 bytes
	// when the host has this build) and starts it.
	a, inst, err := s.Agents.Open(ctx, c, so)
	if err != nil {
		c.Close()
		if logf != nil {
			logf.Close()
		}
		return nil, err
	}
	pull := s.Pull
	pull.Filter, pull.Name = pullMask(t.Sensitive), pullName(t.Sensitive)
	return &sshHost{a: a, c: c, log: logf, pull: pull, inst: inst}, nil
}

// sshHost is a started agent over its SSH connection.
type sshHost struct {
	a    *remote.Agent
	c    *sshx.Client
	log  *redactingWriter
	pull remote.PullOptions
	inst *remote.Installed
}

// AgentArrival says how the agent got to the host for this run: taken from
// a local VM's agent disk, uploaded (and, for a VM, why the disk did not
// give it), or already there. The connect step's end event carries it.
func (h *sshHost) AgentArrival() string {
	return agentArrival(h.inst)
}

func agentArrival(inst *remote.Installed) string {
	switch {
	case inst == nil:
		return ""
	case inst.Disk == remote.DiskOK:
		return "agent from the VM's agent disk (no upload)"
	case inst.Disk != "":
		return fmt.Sprintf("agent uploaded (%d bytes): the VM's agent disk did not give it (%s)", inst.Sent, inst.Disk)
	case inst.Sent > 0:
		return fmt.Sprintf("agent uploaded (%d bytes)", inst.Sent)
	}
	return "agent already on the host"
}

func (h *sshHost) Name() string { return h.a.Host }

// Hello is the agent's hello; a kept agent's carries no pid: the state
// records the pid for rlab down to end the run's agent, and a kept agent
// is the mux daemon's, perhaps serving another command by then (the
// daemon's release already stopped what this run left).
func (h *sshHost) Hello() proto.Hello {
	hello := h.a.Hello
	if h.a.Kept() {
		hello.PID = 0
	}
	return hello
}

// Lost is closed when the agent's session has ended (steps.Lossy).
func (h *sshHost) Lost() <-chan struct{} { return h.a.Lost() }

// LostErr is why the agent was lost, once Lost is closed.
func (h *sshHost) LostErr() error { return h.a.RPC().Err() }

func (h *sshHost) Send(ctx context.Context, req *rpc.Request) error {
	return h.a.RPC().Send(ctx, req)
}

// Watchdog arms the agent's watchdog and pings it for the rest of the run
// (rpc.Client.Watchdog).
func (h *sshHost) Watchdog(ctx context.Context, limit time.Duration) error {
	return h.a.RPC().Watchdog(ctx, limit)
}

func (h *sshHost) Pull(ctx context.Context, files []proto.FileInfo, dst string) error {
	_, err := h.a.PullWith(ctx, files, dst, h.pull)
	return err
}

// PullRaw pulls files as they are (steps.RawPuller): captures.
func (h *sshHost) PullRaw(ctx context.Context, files []proto.FileInfo, dst string) error {
	o := h.pull
	o.Filter = nil
	_, err := h.a.PullWith(ctx, files, dst, o)
	return err
}

// HashesWhilePulling: engine/remote checks a file listed without a sha256
// against the sum the host computes while sending it.
func (h *sshHost) HashesWhilePulling() bool { return true }

// Abandon ends the session at once, without waiting for the agent to undo
// what the run made on the host: for a local VM about to be stopped and
// thrown away (teardown), whose changes go with its overlay.
func (h *sshHost) Abandon() error {
	h.a.RPC().Abort(errAbandoned)
	err := h.c.Close()
	if h.log != nil {
		h.log.Close()
	}
	return err
}

// errAbandoned is why an abandoned session's calls fail.
var errAbandoned = errors.New("session ended without cleanup: the host is a local VM being discarded")

// EndInput closes the agent's input: it undoes what the run made and exits
// (Close waits for that).
func (h *sshHost) EndInput() { h.a.EndInput() }

func (h *sshHost) Close() error {
	err := h.a.Close()
	if cerr := h.c.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close ssh connection to %s: %w", h.a.Host, cerr)
	}
	if h.log != nil {
		h.log.Close()
	}
	return err
}

// pullMask masks the sensitive values in every file pulled through Pull:
// what a workload printed (its argv echoed, a token it was given) never
// reaches the run directory as it was printed. The fetch pulls captures
// (whose binary records a rewrite would break) through PullRaw instead,
// and tells them by the step that made them, not by their names
// (steps.Fetch). Nil without sensitive values.
func pullMask(secrets []string) func(path string, w io.Writer) io.WriteCloser {
	if len(secrets) == 0 {
		return nil
	}
	return func(_ string, w io.Writer) io.WriteCloser {
		return lab.MaskWriter(secrets, w)
	}
}

// pullName masks the sensitive values in a pulled file's name (a workload
// that named its output after a token): the run directory's file names,
// manifest.json and report.html list them. Nil without sensitive values.
func pullName(secrets []string) func(path string) string {
	if len(secrets) == 0 {
		return nil
	}
	return lab.Redactor(secrets).Replace
}

// agentLogMax bounds a host's agent.log in the run directory: the agent's
// slog log is small in normal runs; a host that floods its stderr must not
// fill the controller's disk.
const agentLogMax = 32 << 20

// redactingWriter writes the agent's log line by line with every sensitive
// value replaced (a value never spans lines of the agent's log), up to max
// bytes (agentLogMax when 0), then one line saying the rest was dropped.
type redactingWriter struct {
	mu      sync.Mutex
	w       io.Writer
	c       io.Closer
	r       *lab.Replacer
	buf     []byte
	kept    int // what the last cut of a long line left in buf
	max     int64
	written int64
	dropped int64
}

func (rw *redactingWriter) out(s string) error {
	max := rw.max
	if max == 0 {
		max = agentLogMax
	}
	if rw.dropped > 0 || rw.written+int64(len(s)) > max {
		if rw.dropped == 0 {
			io.WriteString(rw.w, fmt.Sprintf("[rlab: agent.log reached %d bytes; the rest of the agent's stderr is dropped]\n", max))
		}
		rw.dropped += int64(len(s))
		return nil
	}
	n, err := io.WriteString(rw.w, s)
	rw.written += int64(n)
	return err
}

func (rw *redactingWriter) Write(p []byte) (int, error) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	// Only the new bytes are looked at for a newline: a host writing its
	// stderr a byte at a time had the whole held line searched each time.
	from := len(rw.buf)
	rw.buf = append(rw.buf, p...)
	for {
		i := bytes.IndexByte(rw.buf[from:], '\n')
		if i < 0 {
			break
		}
		i += from
		if err := rw.out(rw.r.Replace(string(rw.buf[:i+1]))); err != nil {
			return len(p), err
		}
		rw.buf, rw.kept, from = rw.buf[i+1:], 0, 0
	}
	// A line this long is written in pieces, redacted, as lab.MaskWriter
	// writes a stream: all but what a sensitive value cut at the end may
	// still need, and never through a value. Written up to its end, a
	// value cut there went out as its two halves, whole in the file.
	// A piece is cut only when 64 KiB more than was kept has come, so
	// that each cut, which reads the buffer, has that much new to read.
	if keep := max(0, rw.r.Longest()-1); len(rw.buf) > max(64<<10+keep, rw.kept+64<<10) {
		cut := rw.r.SafeCut(string(rw.buf), len(rw.buf)-keep)
		err := rw.out(rw.r.Replace(string(rw.buf[:cut])))
		rw.buf = append(rw.buf[:0], rw.buf[cut:]...)
		rw.kept = len(rw.buf)
		return len(p), err
	}
	return len(p), nil
}

func (rw *redactingWriter) Close() error {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if len(rw.buf) > 0 {
		rw.out(rw.r.Replace(string(rw.buf)))
		rw.buf = nil
	}
	return rw.c.Close()
}
