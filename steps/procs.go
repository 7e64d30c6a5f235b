package steps

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc"
	"github.com/rlab-dev/rlab/engine/results"
	"github.com/rlab-dev/rlab/kinds"
)

// serverGrace is how long a server side may take to exit after its client
// finished before it is stopped.
const serverGrace = 30 * time.Second

// Procs tracks the processes an op started so Undo can stop the ones still
// running.
type Procs struct {
	mu      sync.Mutex
	running map[[2]string]bool // host, handle
	// argv is what each process was started with, by host and handle:
	// its result's argv is this, not what the host says it ran (SECURITY
	// 131: a host's argv of megabytes was journaled and kept with every
	// process).
	argv map[[2]string][]string
}

// started records h as running with argv.
func (p *Procs) started(host, h string, argv []string) {
	p.Add(host, h)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.argv == nil {
		p.argv = map[[2]string][]string{}
	}
	p.argv[[2]string{host, h}] = argv
}

// ran is the argv h was started with, nil when this Procs did not start
// it (not ours to know, and not the host's word either).
func (p *Procs) ran(host, h string) []string {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.argv[[2]string{host, h}]
}

func (p *Procs) Add(host, h string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running == nil {
		p.running = map[[2]string]bool{}
	}
	p.running[[2]string{host, h}] = true
}

func (p *Procs) Done(host, h string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.running, [2]string{host, h})
}

// Running lists the processes started and not yet done, as host and handle.
func (p *Procs) Running() [][2]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var left [][2]string
	for k := range p.running {
		left = append(left, k)
	}
	return left
}

// StopAll stops every process still running; idempotent.
func (p *Procs) StopAll(ctx context.Context, env *Env) error {
	var errs []error
	for _, k := range p.Running() {
		if _, err := stopProc(ctx, env, p, k[0], k[1]); err != nil {
			errs = append(errs, err)
			continue
		}
		p.Done(k[0], k[1])
	}
	return errors.Join(errs...)
}

// ProcSpec is one process to start on a host.
type ProcSpec struct {
	Host   string
	Handle string
	Argv   []string
	Ready  *proto.Ready
	Role   string // "server", "client", "command": for error messages
	// Root keeps root for this process when the agent runs as root for a
	// user (become); everything else runs as the login user.
	Root bool
	// Harmless, when set, says why a non-zero exit of this (client)
	// process is a known quirk of its tool after a complete run, not a
	// failure ("" when it is a failure): rping's own teardown race.
	Harmless func(*proto.ProcResult) string
	// Dir is the working directory, a folder of the agent's work dir (a
	// built program's); "" is the work dir.
	Dir string
}

func StartProc(ctx context.Context, env *Env, p *Procs, tool string, s ProcSpec) (*proto.ProcStarted, error) {
	h, err := env.Host(s.Host)
	if err != nil {
		return nil, err
	}
	if err := env.Note(Effect{Host: s.Host, Type: "proc", ID: s.Handle, Argv: s.Argv, Pending: true}); err != nil {
		return nil, err
	}
	p.started(s.Host, s.Handle, s.Argv)
	params := proto.ProcStartParams{Handle: s.Handle, Argv: s.Argv, Ready: s.Ready, Become: s.Root, TimeoutMs: Millis(Remaining(ctx)), Dir: s.Dir}
	started, err := rpc.Invoke(ctx, h, rpc.ProcStart, params)
	if err != nil {
		return nil, fmt.Errorf("start %s %s on host %q: %s: %w", tool, s.Role, s.Host, strings.Join(s.Argv, " "), err)
	}
	if err := env.Note(Effect{Host: s.Host, Type: "proc", ID: s.Handle, Argv: s.Argv, PID: started.PID, ProcIdentity: started.ProcIdentity}); err != nil {
		return nil, err
	}
	return &started, nil
}

func WaitProc(ctx context.Context, env *Env, p *Procs, host, hd string, timeout time.Duration) (*proto.ProcResult, error) {
	h, err := env.Host(host)
	if err != nil {
		return nil, err
	}
	res, err := rpc.Invoke(ctx, h, rpc.ProcWait, proto.ProcWaitParams{Handle: hd, TimeoutMs: Millis(timeout)})
	if err != nil {
		var pe *proto.Error
		if errors.As(err, &pe) && pe.Code == proto.CodeTimeout {
			return nil, fmt.Errorf("%w: %w", ErrTimedOut, err)
		}
		return nil, err
	}
	// The argv and handle are the controller's own: the host's answer
	// of them is not taken, since a trial's record keeps them for the
	// run (a 7 MiB handle a trial held 280 MiB after 40 repeats).
	res.Argv, res.Handle = p.ran(host, hd), hd
	p.Done(host, hd)
	_ = env.Note(Effect{Host: host, Type: "proc", ID: hd, Undone: true}) // the argv journaled at its start stays
	madeLogs(env, host, &res)
	maskOutputs(env, &res)
	return &res, nil
}

// maskOutputs masks the sensitive values in a process's output tails as its
// pulled files are masked (Env.Mask), before anything cuts them: an error
// quotes the last 2,000 bytes of stderr (ProcError), a build error each
// line up to 512 bytes, and a value the cut fell inside kept its other
// part, which the run's redactor, given the cut text later, did not match.
//
// The agent keeps each output's last bytes (proto.OutputLimit, halved until
// the result fits a line): a truncated result's tails may start with the
// end of a value, which only MaskCut masks (SECURITY 195).
func maskOutputs(env *Env, r *proto.ProcResult) {
	if r.Truncated && env.MaskCut != nil {
		r.Stdout, r.Stderr = env.MaskCut(r.Stdout, true, false), env.MaskCut(r.Stderr, true, false)
		return
	}
	if env.Mask == nil {
		return
	}
	for _, s := range []*string{&r.Stdout, &r.Stderr} {
		*s = MaskText(env, *s)
	}
}

// MaskText is s with the run's sensitive values masked as a pulled file's
// are (Env.Mask): for output read from a host whole, before anything cuts
// it.
func MaskText(env *Env, s string) string {
	if env.Mask == nil || s == "" {
		return s
	}
	var b strings.Builder
	w := env.Mask("", &b)
	if w == nil {
		return s
	}
	io.WriteString(w, s)
	w.Close()
	return b.String()
}

// madeLogs records a process's output files, as its result names them,
// as logs (Env.Made).
func madeLogs(env *Env, host string, r *proto.ProcResult) {
	for _, f := range []string{r.StdoutFile, r.StderrFile} {
		// The agent names them <handle>.stdout and .stderr: a file name.
		// A longer one is the host's invention, and was kept for the
		// run with every process (SECURITY 126).
		if f != "" && len(f) <= 255 {
			env.Made(host, f, results.ArtifactLog)
		}
	}
}

func stopProc(ctx context.Context, env *Env, p *Procs, host, hd string) (*proto.ProcResult, error) {
	return stopProcWith(ctx, env, p, host, hd, proto.ProcStopParams{Handle: hd, GraceMs: 2000})
}

// InterruptProc stops a process still running as a person at its terminal
// would: SIGINT, then SIGKILL after grace (a tutorial server that waits
// for Enter or serves forever once its client is done). It is done in p.
func InterruptProc(ctx context.Context, env *Env, p *Procs, host, hd string, grace time.Duration) (*proto.ProcResult, error) {
	r, err := stopProcWith(ctx, env, p, host, hd, proto.ProcStopParams{Handle: hd, GraceMs: Millis(grace), Interrupt: true})
	if err == nil {
		p.Done(host, hd)
	}
	return r, err
}

func stopProcWith(ctx context.Context, env *Env, p *Procs, host, hd string, params proto.ProcStopParams) (*proto.ProcResult, error) {
	h, err := env.Host(host)
	if err != nil {
		return nil, err
	}
	res, err := rpc.Invoke(ctx, h, rpc.ProcStop, params)
	var pe *proto.Error
	if err != nil && !(errors.As(err, &pe) && pe.Code == proto.CodeNotFound) {
		return nil, fmt.Errorf("stop process %q on host %q: %w", hd, host, err)
	}
	res.Argv = p.ran(host, hd)
	if err == nil {
		res.Handle = hd // the controller's own (WaitProc); "" when the host had no such process
	}
	_ = env.Note(Effect{Host: host, Type: "proc", ID: hd, Undone: true})
	madeLogs(env, host, &res)
	maskOutputs(env, &res)
	return &res, nil
}

// ErrTimedOut marks a workload that ran past its timeout.
var ErrTimedOut = errors.New("timed out")

// ProcError describes a process that did not exit 0.
func ProcError(tool, role, host string, r *proto.ProcResult) error {
	msg := fmt.Sprintf("%s %s on host %q: %s", tool, role, host, strings.Join(r.Argv, " "))
	switch {
	case r.TimedOut:
		return fmt.Errorf("%s: %w (killed)", msg, ErrTimedOut)
	case r.Signal != "":
		msg += fmt.Sprintf(": killed by %s", r.Signal)
	default:
		msg += fmt.Sprintf(": exit %d", r.ExitCode)
	}
	if s := tail(r.Stderr, 2000); s != "" {
		msg += ": " + s
	} else if s := tail(r.Stdout, 500); s != "" {
		msg += ": " + s
	}
	if h := wcStatusHint(r.Stderr + "\n" + r.Stdout); h != "" {
		msg += "\n(" + h + ")"
	}
	return errors.New(msg)
}

func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		s = "…" + s[len(s)-n:]
	}
	return s
}

func Ref(host string, r *proto.ProcResult) *ProcRef {
	return &ProcRef{
		Host: host, Handle: r.Handle, Argv: r.Argv, ExitCode: r.ExitCode, TimedOut: r.TimedOut,
		Seconds: float64(r.EndUnixNano-r.StartUnixNano) / 1e9,
	}
}

// runPair runs one server/client pair: the server is started and ready (the
// agent waits for its readiness, never a sleep), then the client runs to its
// end, then the server is waited for (and stopped if it lingers).
func runPair(ctx context.Context, env *Env, p *Procs, tool string, srv, cli ProcSpec) (sr, cr *proto.ProcResult, err error) {
	if _, err := StartProc(ctx, env, p, tool, srv); err != nil {
		return nil, nil, err
	}
	if _, err := StartProc(ctx, env, p, tool, cli); err != nil {
		uctx, cancel := undoContext(ctx)
		p.StopAll(uctx, env)
		cancel()
		return nil, nil, err
	}
	cr, err = WaitClient(ctx, env, p, srv.Host, cli.Host, cli.Handle)
	if err != nil {
		uctx, cancel := undoContext(ctx)
		p.StopAll(uctx, env)
		cancel()
		return nil, nil, &clientWaitError{fmt.Errorf("wait for %s client on host %q: %w", tool, cli.Host, err)}
	}
	grace := serverGrace
	if r := Remaining(ctx); r > 0 && r < grace {
		grace = r
	}
	if cr.ExitCode != 0 || cr.TimedOut {
		grace = time.Second // the server waits for a client that is gone
	}
	wctx, cancel := context.WithTimeout(ctx, grace+5*time.Second)
	sr, werr := WaitProc(wctx, env, p, srv.Host, srv.Handle, grace)
	cancel()
	if werr != nil || (sr != nil && sr.TimedOut) {
		uctx, ucancel := undoContext(ctx)
		sr, _ = stopProc(uctx, env, p, srv.Host, srv.Handle)
		ucancel()
		p.Done(srv.Host, srv.Handle)
	}
	if cr.ExitCode != 0 && !cr.TimedOut && cli.Harmless != nil {
		if why := cli.Harmless(cr); why != "" {
			env.logger().Warn("a non-zero exit taken as a clean end", "tool", tool, "host", cli.Host, "handle", cli.Handle, "exit", cr.ExitCode, "why", why)
			return sr, cr, nil
		}
	}
	if cr.ExitCode != 0 || cr.TimedOut {
		return sr, cr, ProcError(tool, "client", cli.Host, cr)
	}
	if sr != nil && sr.ExitCode != 0 && !sr.Stopped && sr.Handle != "" {
		return sr, cr, ProcError(tool, "server", srv.Host, sr)
	}
	return sr, cr, nil
}

// WaitClient waits for a pair's client (handle hd on clientHost) as
// WaitProc does, for the rest of ctx, and ends the wait at once when the
// server's host is lost: the server's host gone under the client (a
// guest's kernel panicked) is then the error, not the client's timeout
// minutes later (CI's failed stop 36 waited out 5 minutes).
func WaitClient(ctx context.Context, env *Env, p *Procs, serverHost, clientHost, hd string) (*proto.ProcResult, error) {
	wctx, stop := watchPeer(ctx, env, serverHost, clientHost)
	r, err := WaitProc(wctx, env, p, clientHost, hd, Remaining(ctx))
	stop()
	if lost := context.Cause(wctx); err != nil && ctx.Err() == nil && errors.Is(lost, errPeerLost) {
		err = lost
	}
	return r, err
}

// Lossy is a host whose agent session can end under a call (an SSH host's
// agent, engine/run's conn): Lost is closed when it has, and LostErr says
// why. runPair watches the server's while it waits for the client.
type Lossy interface {
	Lost() <-chan struct{}
	LostErr() error
}

// errPeerLost marks a client wait ended because the other end's host was
// lost.
var errPeerLost = errors.New("the other end's host was lost")

// watchPeer returns a context that ends when ctx does, or when the agent of
// host peer (not self's, whose loss ends the wait by itself) is lost, with
// a cause that wraps errPeerLost and the agent's own error.
func watchPeer(ctx context.Context, env *Env, peer, self string) (context.Context, context.CancelFunc) {
	h, err := env.Host(peer)
	l, ok := h.(Lossy)
	if err != nil || !ok || peer == self {
		return ctx, func() {}
	}
	wctx, cancel := context.WithCancelCause(ctx)
	stop := make(chan struct{})
	go func() {
		select {
		case <-l.Lost():
			why := l.LostErr()
			if why == nil {
				why = errors.New("its agent session ended")
			}
			cancel(fmt.Errorf("%w: host %q: %w", errPeerLost, peer, why))
		case <-stop:
		case <-wctx.Done():
		}
	}()
	return wctx, func() { close(stop); cancel(nil) }
}

// clientWaitError is runPair's error when both ends started and the wait
// for the client ended without its result (its timeout, the run's end): a
// PairRun.Stall is named only for that, never for a server that was not
// ready or a client that did not start.
type clientWaitError struct{ err error }

func (e *clientWaitError) Error() string { return e.err.Error() }
func (e *clientWaitError) Unwrap() error { return e.err }

// FillMeta sets the metadata every sample of a run carries.
func FillMeta(ss []results.Sample, m results.Meta) {
	for i := range ss {
		s := &ss[i]
		s.Meta.Workload = m.Workload
		s.Meta.Tool = m.Tool
		s.Meta.Repeat = m.Repeat
		if m.Size != 0 {
			s.Meta.Size = m.Size
		}
		if m.Iterations != 0 && s.Meta.Iterations == 0 {
			s.Meta.Iterations = m.Iterations
		}
		s.Meta.Hosts = m.Hosts
		if len(m.Devices) > 0 {
			s.Meta.Devices = m.Devices
		}
		if m.GIDIndex != nil {
			s.Meta.GIDIndex = m.GIDIndex
		}
		if m.MTU != 0 {
			s.Meta.MTU = m.MTU
		}
		if m.Transport != "" {
			s.Meta.Transport = m.Transport
		}
		if m.QPs != 0 {
			s.Meta.QPs = m.QPs
		}
		if m.ToolVersion != "" {
			s.Meta.ToolVersion = m.ToolVersion
		}
		if m.Interval != 0 {
			s.Meta.Interval = m.Interval
		}
		if m.Bytes != 0 {
			s.Meta.Bytes = m.Bytes
		}
		if m.ServerBytes != 0 {
			s.Meta.ServerBytes = m.ServerBytes
		}
		if m.ImpairLoss != nil {
			s.Meta.ImpairLoss = m.ImpairLoss
		}
		for k, v := range m.Extra {
			if s.Meta.Extra == nil {
				s.Meta.Extra = map[string]string{}
			}
			s.Meta.Extra[k] = v
		}
	}
}

// common samples every workload run records: exit code and wall time.
func CommonSamples(exit int, seconds float64) []results.Sample {
	return []results.Sample{
		{Metric: kinds.ExitCode, Value: float64(exit), Unit: "code"},
		{Metric: kinds.Duration, Value: seconds, Unit: "s"},
	}
}

// UndoTimeout bounds one clean-up call on a host (stopping a process): it
// runs even after the workload's context ended, but a host that keeps its
// session up and never answers must not hang the run.
const UndoTimeout = 20 * time.Second

// undoContext is ctx without its cancellation, bounded by UndoTimeout.
func undoContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), UndoTimeout)
}
