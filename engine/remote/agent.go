package remote

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pkg/sftp"
	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc"
	"github.com/rlab-dev/rlab/engine/agentdisk"
	"github.com/rlab-dev/rlab/engine/sshx"
)

// Where the guest looks for the agent disk (tests point them elsewhere).
var (
	agentDiskSys = "/sys/block"
	agentDiskDev = "/dev"
)

// DiskOK is Installed.Disk when the agent came from the agent disk.
const DiskOK = "ok"

// StartOptions say how to start the agent on one host.
type StartOptions struct {
	Host   string // the host's name, for errors
	RunID  string // [A-Za-z0-9._-]{1,128}
	Become bool   // run it as root with sudo -n when the user isn't root
	// WorkDir on the host; "" means <home>/.cache/rlab/runs/<RunID>/<SafeName(Host)>.
	WorkDir string
	// OnEvent receives every event the agent streams (log, progress, ready).
	OnEvent func(proto.Event)
	// Stderr, when set, also receives the agent's stderr (its slog log) as
	// it comes, e.g. the run's hosts/<name>/logs/agent.log.
	Stderr io.Writer
	// Mask, when set, masks the sensitive values in the errors the agent
	// answers with before they are cut (rpc.Options.Mask).
	Mask func(s string, cut bool) string
	// HelloTimeout bounds the wait for the hello; default the call
	// timeout ($RLAB_AGENT_TIMEOUT) when set, else 60s.
	HelloTimeout time.Duration
	// CallTimeout, when > 0, replaces every call's own deadline
	// (rpc.Method.Base: 1 to 10 minutes by method), the heartbeat's, and
	// the limit of every SSH wait on the host (wait.go); default
	// $RLAB_AGENT_TIMEOUT (a Go duration), else each method's and wait's.
	CallTimeout time.Duration
	// Heartbeat is how often the client pings an agent while a call waits
	// (rpc.Options.Heartbeat); 0 means 15s, < 0 none.
	Heartbeat time.Duration
	// Keep asks, on a connection through the mux daemon (--persist), for
	// an agent the daemon keeps running between commands (KeptAgents):
	// the warm start then costs no process on the host. Every kept agent
	// starts with run id keptRunID and is leased for RunID (its work dir
	// moves to RunID's) before Open returns; it is released (everything it
	// started stopped) before the next command gets it. facts, check and
	// run (--persist) use it; rlab down does not.
	Keep bool
	// AgentDisk: the host is a local VM with the agent disk attached
	// (engine/agentdisk). When the agent is not cached, the warm start's
	// shell takes it from that disk (sha256-checked) and execs it in the
	// same session; a disk that is missing or holds another build is said
	// (Installed.Disk, a warning in the log) and the agent uploaded.
	AgentDisk bool
}

// keptRunID is the run id every kept agent starts with, whoever asks for it
// first, so facts, check and run find the same agent (the daemon keys its
// pool by the start command). Each caller then leases it for its own run
// id (proto.MethodLease), which moves its work dir to that run's.
const keptRunID = "kept"

// Limits on what a host can make us hold.
const (
	maxJunkBytes = 64 << 10 // login-script output before the hello
	stderrTail   = 64 << 10 // agent stderr kept for errors and logs
)

// Agent is a running agent on one host and the client that speaks to it.
type Agent struct {
	Host      string
	Hello     proto.Hello
	Installed *Installed
	client    *sshx.Client
	sess      agentSession
	cmd       string // the command it was started with
	stdin     io.WriteCloser
	opts      StartOptions
	stderr    *tailBuffer
	rpc       *rpc.Client

	sftpOnce sync.Once
	sftp     *sftp.Client
	sftpErr  error
	pulled   atomic.Int64
}

// CallError is an error the agent answered a call with.
type CallError = rpc.CallError

// ErrAgentLost is wrapped by every error of an agent whose session ended
// or that did not answer in time (rpc.StuckError).
var ErrAgentLost = rpc.ErrLost

// AgentTimeoutEnv names the environment variable that sets
// StartOptions.CallTimeout when it is 0.
const AgentTimeoutEnv = "RLAB_AGENT_TIMEOUT"

// callTimeout is o's call timeout, or $RLAB_AGENT_TIMEOUT's.
func callTimeout(o StartOptions) (time.Duration, error) {
	if o.CallTimeout != 0 {
		return o.CallTimeout, nil
	}
	v := os.Getenv(AgentTimeoutEnv)
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s=%q: want a positive duration such as 90s or 10m", AgentTimeoutEnv, v)
	}
	return d, nil
}

// Start launches `rlab-agent serve` as one long-lived session and reads its
// hello. The session ends when the Agent is closed or the link drops; the
// agent then stops everything it started.
func Start(ctx context.Context, c *sshx.Client, inst *Installed, o StartOptions) (*Agent, error) {
	if err := validRunID(o.RunID); err != nil {
		return nil, err
	}
	if o.WorkDir == "" {
		// Per host under the run: hosts sharing a home directory (NFS)
		// must not share a work dir.
		o.WorkDir = path.Join(inst.Home, ".cache", "rlab", "runs", o.RunID, SafeName(o.Host))
	}
	args := " serve --run-id " + o.RunID + " --work-dir " + shellQuote(o.WorkDir)
	cmd := "exec " + shellQuote(inst.Path) + args
	if o.Become && inst.UID != 0 {
		cmd = becomeScript(shellQuote(proto.SystemAgentPath(inst.Hash)), shellQuote(inst.Path), args, fmt.Sprintf("%d:%d", inst.UID, inst.GID))
	}
	a, _, err := startCmd(ctx, c, inst, o, cmd, map[string]bool{inst.Hash: true})
	return a, err
}

// becomeScript is the shell that starts the agent as root for a login user
// that is not root (become): sys is the root-owned copy of the build
// (proto.SystemAgentPath, quoted or a shell expression), cache the user's
// copy, args the serve arguments (with a leading space), owner the user's
// UID:GID (or a shell expression giving it).
//
// The sudoers rule names the root-owned copy (SECURITY 176): the user's
// own copy is theirs to rewrite between sudo's digest check and its exec,
// and a root agent working for a user refuses to run from it. When the
// root-owned copy is not there and sudo lets the user install it (cloud
// images' default users have NOPASSWD: ALL, root already), it is installed
// from the user's copy first, through a temp name of its own ($$: hosts
// sharing a filesystem start at once, and with one shared temp name one
// starter renamed another's half-written copy into place, which then
// stayed) and a rename, so a partial copy never has the name; a user sudo
// refuses that (a rule for
// the agent alone) goes on to start the user's copy, whose refusal (sudo's
// or the agent's) is the error, naming the fix. Each sudo is -n: never a
// password prompt.
func becomeScript(sys, cache, args, owner string) string {
	return `s=` + sys + `; ` +
		`[ -f "$s" ] || { p="$s.part.$$"; sudo -n -- install -d -o root -g root -m 0755 "${s%/*}" && ` +
		`{ sudo -n -- install -o root -g root -m 0755 ` + cache + ` "$p" && ` +
		`sudo -n -- mv -f "$p" "$s" || sudo -n -- rm -f "$p"; }; } </dev/null >/dev/null 2>&1; ` +
		`if [ -f "$s" ]; then exec sudo -n -- "$s"` + args + ` --owner ` + owner + `; fi; ` +
		`exec sudo -n -- ` + cache + args + ` --owner ` + owner
}

// startCmd runs cmd as the agent's session and reads its hello, which must
// carry one of the hashes. What the session printed before the hello (or,
// when it ended without one, at all), bounded, is returned too.
func startCmd(ctx context.Context, c *sshx.Client, inst *Installed, o StartOptions, cmd string, hashes map[string]bool) (*Agent, []byte, error) {
	return startOn(ctx, c, inst, o, cmd, hashes, false)
}

// agentSession is the SSH session an agent runs in: an ordinary one, or a
// kept agent's channel from the mux daemon.
type agentSession interface {
	Close() error
	Wait() error
}

// startOn is startCmd; keep asks the mux daemon for a kept agent started by
// the same command (KeptAgents), falling back to an ordinary session when
// the daemon does not keep agents.
func startOn(ctx context.Context, c *sshx.Client, inst *Installed, o StartOptions, cmd string, hashes map[string]bool, keep bool) (*Agent, []byte, error) {
	ct, err := callTimeout(o)
	if err != nil {
		return nil, nil, err
	}
	o.CallTimeout = ct
	if o.HelloTimeout == 0 {
		// $RLAB_AGENT_TIMEOUT (or the call timeout) replaces the hello's
		// limit as it replaces every other wait's (SECURITY 53): rlab down
		// and check waited the default minute with it set.
		o.HelloTimeout = 60 * time.Second
		if ct != 0 {
			o.HelloTimeout = ct
		}
	}
	if o.Heartbeat == 0 {
		o.Heartbeat = 15 * time.Second
	}
	a := &Agent{
		Host: o.Host, Installed: inst, client: c, opts: o, cmd: cmd,
		stderr: &tailBuffer{max: stderrTail, also: o.Stderr},
	}
	var stdout io.Reader
	limit := limitOr(o.CallTimeout, sshx.DefaultOpenTimeout)
	if keep && c.Muxed {
		k, err := openKept(ctx, c, cmd, a.stderr, limit)
		if err != nil {
			return nil, nil, fmt.Errorf("start agent: %w", err)
		}
		if k != nil {
			a.sess, a.stdin, stdout = k, k.stdin(), k.ch
		}
	}
	if a.sess == nil {
		sess, err := c.OpenSession(ctx, limit)
		if err != nil {
			return nil, nil, fmt.Errorf("start agent: %w", err)
		}
		a.sess = sess
		sess.Stderr = a.stderr
		if stdout, err = sess.StdoutPipe(); err != nil {
			sess.Close()
			return nil, nil, fmt.Errorf("start agent: %w", err)
		}
		if a.stdin, err = sess.StdinPipe(); err != nil {
			sess.Close()
			return nil, nil, fmt.Errorf("start agent: %w", err)
		}
		if err := c.Start(ctx, sess, cmd, limit); err != nil {
			sess.Close()
			return nil, nil, fmt.Errorf("start agent: %w", err)
		}
	}
	sess := a.sess
	// The default 4 KiB, not 64: a class holds one per host for the whole
	// run (64 MiB at 1,000 hosts); rpc.ReadLine joins longer lines.
	r := bufio.NewReader(stdout)
	type helloResult struct {
		h    proto.Hello
		junk []byte
		err  error
	}
	hc := make(chan helloResult, 1)
	go func() {
		h, junk, err := rpc.ReadHello(r, maxJunkBytes)
		hc <- helloResult{h, junk, err}
	}()
	var hr helloResult
	select {
	case hr = <-hc:
	case <-ctx.Done():
		// Closing the session would not end the read with OpenSSH (sshd
		// keeps the channel while the agent lives): close the connection.
		c.Abort()
		return nil, nil, fmt.Errorf("start agent: waiting for its hello: %w", ctx.Err())
	case <-time.After(o.HelloTimeout):
		c.Abort()
		return nil, nil, fmt.Errorf("start agent: no hello within %s%s", o.HelloTimeout, a.stderrNote())
	}
	if hr.err != nil {
		// Let the session end so stderr is complete.
		waitDone := make(chan struct{})
		go func() { sess.Wait(); close(waitDone) }()
		select {
		case <-waitDone:
		case <-time.After(2 * time.Second):
		}
		sess.Close()
		err := fmt.Errorf("start agent: %w%s", a.explainStart(hr.err), a.stderrNote())
		if !a.explained() {
			// Perhaps a corrupt cached copy that cannot even run.
			return nil, hr.junk, &staleError{err}
		}
		return nil, hr.junk, err
	}
	h := hr.h
	if h.Proto != proto.Version {
		sess.Close()
		return nil, nil, fmt.Errorf("start agent: it speaks protocol %d, this rlab speaks %d", h.Proto, proto.Version)
	}
	if !hashes[h.Hash] {
		sess.Close()
		where := "the cached copy at " + inst.Path
		if o.Become {
			// It may have run from the root-owned copy (becomeScript).
			where += " or the root-owned one under " + proto.SystemAgentDir
		}
		return nil, nil, &staleError{fmt.Errorf("start agent: it reports build hash %q, but we installed %s (%s is not what we shipped)", truncate(h.Hash, 64), inst.Hash, where)}
	}
	if err := h.ProcIdentity.Check(); err != nil {
		sess.Close()
		return nil, nil, fmt.Errorf("start agent: its hello: %w", err)
	}
	a.Hello = h
	a.rpc = rpc.New(r, a.stdin, rpc.Options{
		Host:      o.Host,
		OnEvent:   o.OnEvent,
		Note:      a.stderrNote,
		Timeout:   o.CallTimeout,
		Heartbeat: max(o.Heartbeat, 0),
		Mask:      o.Mask,
		// A broken stream is not recoverable: end the session, and let
		// it end (bounded) so the agent's stderr is complete for the
		// error.
		Close: func() {
			sess.Close()
			done := make(chan struct{})
			go func() { sess.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				// sshd keeps the channel while the agent lives: only
				// closing the connection ends the reader on it.
				c.Abort()
			}
		},
	})
	return a, hr.junk, nil
}

func (a *Agent) explainStart(err error) error {
	st := a.stderr.String()
	switch {
	case strings.Contains(st, "a password is required"), strings.Contains(st, "a terminal is required"), strings.Contains(st, "is not allowed to execute"):
		return fmt.Errorf("sudo -n refused to run the agent as root without a password (become = true): install the root-owned agent (`rlab agent export` prints how: install -D -o root -g root -m 0755 FILE %s/<sha256>/rlab-agent) and allow that path, never the user's ~/.cache copy, with NOPASSWD in sudoers (SECURITY.md, \"Running as non-root: sudoers\"); or log in as root, or set become = false: %w", proto.SystemAgentDir, err)
	case strings.Contains(st, unsafeExecutable):
		return fmt.Errorf("the agent refused to run as root for the login user (become = true) from a file or folder someone other than root can write: install the root-owned agent (`rlab agent export` prints how) and name it in sudoers instead (SECURITY.md, \"Running as non-root: sudoers\"): %w", err)
	case strings.Contains(st, "No space left"), strings.Contains(st, "no space left"):
		return fmt.Errorf("the host's disk is full: %w", err)
	}
	return err
}

// unsafeExecutable is what a root agent working for a user says when it
// refuses to run from a file the user can change (agent/server
// ErrUnsafeExecutable; SECURITY 176).
const unsafeExecutable = "unsafe executable for a root agent"

// explained reports whether stderr shows a cause that reinstalling the
// agent cannot fix (sudo, disk, an agent refusing its own install).
func (a *Agent) explained() bool {
	st := a.stderr.String()
	for _, s := range []string{"a password is required", "a terminal is required", "No space left", "no space left", "sudo:", unsafeExecutable} {
		if strings.Contains(st, s) {
			return true
		}
	}
	return false
}

// staleError: the cached agent did not start as the build we meant to run;
// Open replaces it and tries once more.
type staleError struct{ err error }

func (e *staleError) Error() string { return e.err.Error() }
func (e *staleError) Unwrap() error { return e.err }

// Open starts the agent on a host, installing it first when needed. The
// warm path is one session: a small shell command checks the cached agent
// is there and execs it; when it is missing, the same session prints the probe
// instead, the agent is installed and started. When a cached copy turns out
// not to be the build we meant (its hello reports another hash, or it
// cannot start at all) it is uploaded again and started once more
// ("not installed, install, retry"). Installed.Sent counts bytes shipped.
func (ag *Agents) Open(ctx context.Context, c *sshx.Client, o StartOptions) (*Agent, *Installed, error) {
	if err := validRunID(o.RunID); err != nil {
		return nil, nil, err
	}
	var probed *probe // what the warm start's shell printed when nothing was cached
	if o.WorkDir == "" {
		a, inst, p, ok, err := ag.fastStart(ctx, c, o)
		if ok {
			return a, inst, err
		}
		probed = p
	}
	inst, err := ag.installProbed(ctx, c, probed, false, o.CallTimeout)
	if inst != nil && probed != nil && probed.disk != "" {
		inst.Disk = probed.disk
	}
	if err != nil {
		return nil, inst, err
	}
	if inst.Disk != "" {
		ag.log.Warn("the agent disk did not give this build of the agent; uploaded it instead", "host", o.Host, "why", inst.Disk, "bytes_shipped", inst.Sent)
	}
	return ag.startInstalled(ctx, c, inst, o)
}

// startInstalled starts the agent just installed; one that is not the build
// we meant is uploaded again and started once more.
func (ag *Agents) startInstalled(ctx context.Context, c *sshx.Client, inst *Installed, o StartOptions) (*Agent, *Installed, error) {
	a, err := Start(ctx, c, inst, o)
	var se *staleError
	if err == nil || inst.Sent > 0 || !errors.As(err, &se) {
		return a, inst, err
	}
	inst2, ierr := ag.install(ctx, c, true, o.CallTimeout)
	if inst2 != nil {
		inst2.Sent += inst.Sent
		inst2.Disk = inst.Disk
	}
	if ierr != nil {
		return nil, inst2, fmt.Errorf("%w; reinstalling it: %v", err, ierr)
	}
	a, err = Start(ctx, c, inst2, o)
	return a, inst2, err
}

// fastStart tries the one-session warm start. ok is false when the caller
// should go the install path (agent not cached, or not the right build);
// probed is then what the host's probe said, when it printed one.
func (ag *Agents) fastStart(ctx context.Context, c *sshx.Client, o StartOptions) (a *Agent, inst *Installed, probed *probe, ok bool, err error) {
	var cands []warmCand
	hashes := map[string]bool{}
	arches := map[string]string{}
	for _, arch := range []string{"amd64", "arm64"} {
		if b := ag.bin(arch); b.err == nil {
			cands = append(cands, warmCand{arch, b.hash})
			hashes[b.hash] = true
			arches[b.hash] = arch
		}
	}
	if len(cands) == 0 {
		return nil, nil, nil, false, nil
	}
	hs := make([]string, 0, len(cands))
	for _, cd := range cands {
		hs = append(hs, cd.hash)
	}
	script := func(runID string) string { return warmScript(cands, o, runID) }
	fake := &Installed{Hash: strings.Join(hs, " or "), Path: "$HOME/" + CacheDir + "/<hash>/rlab-agent"}
	// A kept agent starts for no run in particular (keptRunID) and is
	// leased for ours; one that cannot be leased (an agent from before
	// leases) is given back and an ordinary one started.
	leased := o.Keep && c.Muxed
	cmd := script(o.RunID)
	if leased {
		cmd = script(keptRunID)
	}
	a, junk, err := startOn(ctx, c, fake, o, cmd, hashes, leased)
	if err == nil && leased {
		if lerr := a.lease(ctx, o.RunID); lerr != nil {
			a.Close()
			var ce *CallError
			if !errors.As(lerr, &ce) || ce.Err.Code != proto.CodeUnknown {
				return nil, nil, nil, true, fmt.Errorf("start agent: %w", lerr)
			}
			ag.log.Debug("kept agent cannot be leased: starting an ordinary one", "host", o.Host)
			a, junk, err = startOn(ctx, c, fake, o, script(o.RunID), hashes, false)
		}
	}
	if err == nil {
		h := a.Hello.Hash
		home := strings.TrimSuffix(a.Hello.WorkDir, "/.cache/rlab/runs/"+o.RunID+"/"+SafeName(o.Host))
		a.Installed = &Installed{Path: path.Join(home, CacheDir, h, "rlab-agent"), Hash: h, GOARCH: arches[h], Home: home, UID: a.Hello.UID}
		if ok, _, found := agentdisk.Status(junk); o.AgentDisk && found && ok {
			a.Installed.Disk = DiskOK
			ag.log.Debug("agent taken from the agent disk", "host", o.Host, "hash", h)
		}
		return a, a.Installed, nil, true, nil
	}
	// The probe first: a session that printed it ran no agent (it ended
	// without a hello, which startOn reports as a stale copy too).
	if p, perr := parseProbe(junk); perr == nil {
		if ok, why, found := agentdisk.Status(junk); o.AgentDisk && found && !ok {
			p.disk = why
		}
		return nil, nil, p, false, nil // not cached: install, with what the probe said
	}
	var se *staleError
	if errors.As(err, &se) {
		return nil, nil, nil, false, nil // the cached copy is not our build: install
	}
	return nil, nil, nil, true, err
}

// warmCand is an agent build the warm start may find cached: its arch and
// sha256.
type warmCand struct{ arch, hash string }

// warmScript is the warm start's shell for the builds cands.
// Only hex hashes, the validated run id and SafeName reach the
// shell.
// Every fork in this script is paid on every host of every run (about
// a millisecond each on a busy 2-core machine), so it forks nothing on
// the warm path when the login shell is bash: $HOSTTYPE and $EUID are
// bash's own; other shells fall back to uname and id. A wrong guess
// costs only time: an agent of another arch or a corrupt copy does not
// start with our hash, and Open goes the probe-and-install path. The
// file is only tested to be executable: installs rename a verified
// copy into place, and the hello's self-hash is the check.
func warmScript(cands []warmCand, o StartOptions, runID string) string {
	hs := make([]string, 0, len(cands))
	for _, cd := range cands {
		hs = append(hs, cd.hash)
	}
	var sb strings.Builder
	sb.WriteString(`case "${HOSTTYPE:-$(uname -m)}" in`)
	for _, cd := range cands {
		pat := "x86_64|amd64"
		if cd.arch == "arm64" {
			pat = "aarch64|arm64"
		}
		fmt.Fprintf(&sb, " %s) h=%s;;", pat, cd.hash)
	}
	sb.WriteString(` *) h=;; esac; a="$HOME/` + CacheDir + `/$h/rlab-agent"; `)
	cached := `{ [ -f "$a" ] && [ -x "$a" ]; }`
	if o.Become {
		// A login that is not root starts the root-owned copy when
		// it is there (becomeScript): nothing to upload for it.
		sb.WriteString(`s="` + proto.SystemAgentDir + `/$h/rlab-agent"; `)
		cached += ` || { [ "${EUID:-$(id -u)}" != 0 ] && [ -f "$s" ]; }`
	}
	if o.AgentDisk {
		// Not cached (a fresh VM never has it): from the disk, in
		// this session, else on to the probe and an upload.
		cached += ` || rlab_disk`
	}
	sb.WriteString(`if [ -n "$h" ] && { ` + cached + `; }; then `)
	args := ` serve --run-id ` + runID + ` --work-dir "$HOME/.cache/rlab/runs/` + runID + "/" + SafeName(o.Host) + `"`
	serve := `"$a"` + args
	if o.Become {
		sb.WriteString(`if [ "${EUID:-$(id -u)}" = 0 ]; then exec ` + serve + `; fi; ` +
			becomeScript(`"$s"`, `"$a"`, args, `"$(id -u):$(id -g)"`) + `; fi; `)
	} else {
		sb.WriteString(`exec ` + serve + `; fi; `)
	}
	sb.WriteString(probeCmd(hs))
	if o.AgentDisk {
		return agentdisk.GuestFunc(agentDiskSys, agentDiskDev) + "; " + sb.String()
	}
	return sb.String()
}

func (a *Agent) stderrNote() string {
	if s := strings.TrimSpace(a.stderr.String()); s != "" {
		return "; agent stderr: " + truncate(lastLines(s, 10), 2000)
	}
	return ""
}

func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// readHello is rpc.ReadHello with the junk bound of an SSH login.
func readHello(r *bufio.Reader) (proto.Hello, []byte, error) {
	return rpc.ReadHello(r, maxJunkBytes)
}

// readLine reads one newline-terminated line of at most max bytes.
func readLine(r *bufio.Reader, max int) ([]byte, error) { return rpc.ReadLine(r, max) }

// Call sends one request and waits for its response, at most the method's
// deadline (rpc.Deadline; StartOptions.CallTimeout); an agent that does not
// answer in time is given up on (an *rpc.StuckError, wrapping
// ErrAgentLost) and every later call fails at once. Events for it go to
// StartOptions.OnEvent. An error the agent answered is a *CallError
// (errors.As to *proto.Error for its code).
func (a *Agent) Call(ctx context.Context, method string, params, result any) error {
	return a.rpc.Do(ctx, method, params, result)
}

// RPC is the agent's protocol client (typed calls: rpc.Call).
func (a *Agent) RPC() *rpc.Client { return a.rpc }

// lease asks a kept agent to work for run runID (proto.MethodLease) and
// takes the work dir it moved to as its hello's: what pulls, bundles and
// the home derivation go by. The agent names the dir; one that is not
// ours under the same home is refused.
func (a *Agent) lease(ctx context.Context, runID string) error {
	res, err := rpc.Call(ctx, a.rpc, rpc.Lease, proto.LeaseParams{RunID: runID})
	if err != nil {
		return err
	}
	tail := "/.cache/rlab/runs/" + keptRunID + "/" + SafeName(a.Host)
	home, ok := strings.CutSuffix(a.Hello.WorkDir, tail)
	if want := home + "/.cache/rlab/runs/" + runID + "/" + SafeName(a.Host); !ok || res.WorkDir != want {
		return fmt.Errorf("host %q: lease: the agent moved to work dir %q, want %q", a.Host, res.WorkDir, want)
	}
	a.Hello.WorkDir = res.WorkDir
	return nil
}

// Kept reports whether the agent is one the mux daemon keeps between
// commands (StartOptions.Keep): it outlives this command, so it is not
// this command's to end by its pid.
func (a *Agent) Kept() bool {
	_, ok := a.sess.(*keptConn)
	return ok
}

// Lost is closed when the agent's session has ended or it was given up on.
func (a *Agent) Lost() <-chan struct{} { return a.rpc.Lost() }

// Stderr returns the tail of the agent's stderr (its log), bounded.
func (a *Agent) Stderr() string { return a.stderr.String() }

// Pulled is the number of artifact bytes pulled so far.
func (a *Agent) Pulled() int64 { return a.pulled.Load() }

// EndInput closes the agent's stdin without waiting: it stops what it
// started and exits. Close waits for that.
func (a *Agent) EndInput() { a.rpc.Close() }

// Close ends the agent: its stdin closes, it stops what it started, and the
// session ends. It does not close the SSH connection.
func (a *Agent) Close() error {
	a.rpc.Close()
	select {
	case <-a.rpc.Lost():
	case <-time.After(10 * time.Second):
		a.rpc.Abort(errors.New("it did not end within 10s of its input closing"))
	}
	if a.sftp != nil {
		closeSFTP(a.sftp, a.client.Abort)
	}
	return nil
}

// SafeName maps a host name (`server["ana"]`) to one path element made of
// [A-Za-z0-9._-] (`server_ana_`).
func SafeName(name string) string {
	b := []byte(name)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	s := string(b)
	if s == "" || s == "." || s == ".." {
		s = "host" + s
	}
	return s
}

func validRunID(id string) error {
	if id == "" || len(id) > 128 || id == "." || id == ".." {
		return fmt.Errorf("run id %q: want 1-128 of [A-Za-z0-9._-]", id)
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("run id %q: want 1-128 of [A-Za-z0-9._-]", id)
		}
	}
	return nil
}

// tailBuffer keeps the last max bytes written and passes everything on.
type tailBuffer struct {
	mu      sync.Mutex
	max     int
	buf     []byte
	dropped int64
	also    io.Writer
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.also != nil {
		t.also.Write(p)
	}
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.dropped += int64(over)
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

// ReadFrom copies r in 1 KiB reads. x/crypto/ssh copies a session's
// stderr into its Stderr writer with io.Copy, whose own buffer is 32 KiB and
// lives as long as the session: the agent's session lasts the whole run, so
// that was 32 MiB at 1,000 hosts (a class run's largest live item, see
// BENCHMARKS.md) for an agent log of a few lines.
func (t *tailBuffer) ReadFrom(r io.Reader) (int64, error) {
	buf := make([]byte, 1<<10)
	var n int64
	for {
		k, err := r.Read(buf)
		if k > 0 {
			t.Write(buf[:k])
			n += int64(k)
		}
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.dropped > 0 {
		return "[" + strconv.FormatInt(t.dropped, 10) + " bytes dropped]\n" + string(t.buf)
	}
	return string(t.buf)
}
