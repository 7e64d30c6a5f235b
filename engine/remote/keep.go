package remote

// Kept agents: with --persist, the mux daemon (engine/sshx) keeps each
// host's login open; KeptAgents, a handler the daemon runs, also keeps the
// agents that facts, check and run start there (all with one start
// command per host, login and become: the caller leases the agent for its
// own run afterwards, proto.MethodLease, Agent.lease). A caller opens a
// KeptAgentChannel carrying the agent's start command; the daemon hands it
// an idle agent started by the very same command on the very same
// connection, replaying its hello, or starts one. When the caller is done
// (its side of the channel closes) the daemon sends the agent a release
// (proto.MethodRelease: it stops and undoes everything it started for that
// caller, as when its input ends) and, once the release is answered, keeps
// it for the next caller. An agent that cannot be released cleanly (an
// error, a line cut in half, no answer) is ended instead. Agents end with
// the daemon (their session closes with the login) or when idle too long.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/engine/sshx"
	"golang.org/x/crypto/ssh"
)

// KeptAgentChannel is the channel type a caller opens on a mux connection
// to get a kept agent; its extra data is a keptOpen (JSON).
const KeptAgentChannel = "agent@rlab"

// keptOpen is what a caller asks for.
type keptOpen struct {
	Cmd string // the start command, run as the session's command
}

const (
	maxKeptCmd     = 16 << 10
	keptReleaseID  = 1 << 63 // ids from here on are the daemon's own
	releaseTimeout = 60 * time.Second
)

// KeptAgents is the daemon's pool of idle agents (sshx.MuxChannelHandler).
type KeptAgents struct {
	// MaxIdle bounds the idle agents kept per connection and command;
	// default 2 (two commands at once each find one next time).
	MaxIdle int
	// IdleTimeout ends an agent idle this long; default 10 minutes (the
	// daemon's own --persist ends them all sooner when it exits).
	IdleTimeout time.Duration

	mu     sync.Mutex
	idle   map[keptKey][]*keptAgent
	nextID uint64
}

type keptKey struct {
	up  *sshx.Client
	cmd string
}

// keptAgent is one agent process the daemon started.
type keptAgent struct {
	key   keptKey
	sess  *ssh.Session
	stdin io.WriteCloser
	log   *slog.Logger

	mu      sync.Mutex
	hello   []byte    // the hello line, once seen
	out     io.Writer // the current caller's channel, nil when idle
	errw    io.Writer // its stderr
	release uint64    // id of the release in flight, 0 none
	relDone chan *proto.Error
	ended   chan struct{} // stdout ended: the agent is gone
	errDone chan struct{} // stderr ended
	timer   *time.Timer   // idle timeout
	pump    func()        // starts reading its output; nil once started
}

// Kept counts the idle agents on up.
func (p *KeptAgents) Kept(up *sshx.Client) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for k, as := range p.idle {
		if k.up == up {
			n += len(as)
		}
	}
	return n
}

// ServeChannel serves one caller's KeptAgentChannel on up.
func (p *KeptAgents) ServeChannel(nc ssh.NewChannel, up *sshx.Client, log *slog.Logger) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var req keptOpen
	if len(nc.ExtraData()) > maxKeptCmd || json.Unmarshal(nc.ExtraData(), &req) != nil || req.Cmd == "" {
		nc.Reject(ssh.Prohibited, "rlab mux: bad kept agent request")
		return
	}
	key := keptKey{up: up, cmd: req.Cmd}
	a, reused := p.take(key)
	if a == nil {
		var err error
		if a, err = p.start(key, log); err != nil {
			nc.Reject(ssh.ConnectionFailed, err.Error())
			return
		}
	}
	ch, reqs, err := nc.Accept()
	if err != nil {
		p.end(a, "caller left")
		return
	}
	go ssh.DiscardRequests(reqs)
	// An agent that ends under its caller ends the caller's channel, once
	// everything it wrote is through (stderr says why: sudo, disk...).
	leased := make(chan struct{})
	defer close(leased)
	go func() {
		select {
		case <-a.ended:
		case <-leased:
			return
		}
		select {
		case <-a.errDone:
		case <-time.After(2 * time.Second):
		}
		ch.Close()
	}()
	a.mu.Lock()
	a.out, a.errw = ch, ch.Stderr()
	hello := a.hello
	pump := a.pump
	a.pump = nil
	a.mu.Unlock()
	if pump != nil {
		pump()
	}
	if reused {
		ch.Write(hello)
	}
	log.Debug("kept agent leased", "host", up.Name, "reused", reused)

	// Caller to agent, a whole line at a time, so a caller that leaves
	// mid-line never leaves the agent half a request.
	clean := true
	r := bufio.NewReaderSize(ch, 64<<10)
	for {
		line, err := readLine(r, proto.MaxLine)
		if err != nil {
			if !errors.Is(err, io.EOF) {
				clean = false // a line cut or too long
			}
			break
		}
		if _, err := a.stdin.Write(line); err != nil {
			clean = false
			break
		}
	}
	ok := clean && p.release(a)
	a.mu.Lock()
	a.out, a.errw = nil, nil
	a.mu.Unlock()
	// Kept (or ended) before the caller sees its channel close, so its
	// next command finds the agent idle.
	if ok {
		p.put(a)
	} else {
		p.end(a, "not released cleanly")
	}
	ch.Close()
}

// take pops an idle agent for key that is still alive.
func (p *KeptAgents) take(key keptKey) (*keptAgent, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for as := p.idle[key]; len(as) > 0; as = p.idle[key] {
		a := as[len(as)-1]
		p.idle[key] = as[:len(as)-1]
		if a.timer != nil {
			a.timer.Stop()
		}
		select {
		case <-a.ended:
			continue
		default:
			return a, true
		}
	}
	return nil, false
}

// put keeps a released agent idle, or ends it when enough are.
func (p *KeptAgents) put(a *keptAgent) {
	max := p.MaxIdle
	if max <= 0 {
		max = 2
	}
	idle := p.IdleTimeout
	if idle <= 0 {
		idle = 10 * time.Minute
	}
	p.mu.Lock()
	if p.idle == nil {
		p.idle = map[keptKey][]*keptAgent{}
	}
	select {
	case <-a.ended:
		p.mu.Unlock()
		return
	case <-a.key.up.Gone():
		p.mu.Unlock()
		p.end(a, "connection gone")
		return
	default:
	}
	if len(p.idle[a.key]) >= max {
		p.mu.Unlock()
		p.end(a, "enough idle")
		return
	}
	p.idle[a.key] = append(p.idle[a.key], a)
	a.timer = time.AfterFunc(idle, func() {
		p.mu.Lock()
		as := p.idle[a.key]
		for i, x := range as {
			if x == a {
				p.idle[a.key] = append(as[:i:i], as[i+1:]...)
				p.mu.Unlock()
				p.end(a, "idle timeout")
				return
			}
		}
		p.mu.Unlock()
	})
	p.mu.Unlock()
}

// start runs the command in a new session on key.up.
func (p *KeptAgents) start(key keptKey, log *slog.Logger) (*keptAgent, error) {
	// Bounded as every wait on a host (sshx.Client.OpenSession): an
	// upstream that never answers is closed, not waited for by the daemon.
	sess, err := key.up.OpenSession(context.Background(), 0)
	if err != nil {
		return nil, err
	}
	a := &keptAgent{key: key, sess: sess, log: log, ended: make(chan struct{}), errDone: make(chan struct{})}
	stdout, err := sess.StdoutPipe()
	if err != nil {
		sess.Close()
		return nil, err
	}
	stderr, err := sess.StderrPipe()
	if err != nil {
		sess.Close()
		return nil, err
	}
	if a.stdin, err = sess.StdinPipe(); err != nil {
		sess.Close()
		return nil, err
	}
	if err := key.up.Start(context.Background(), sess, key.cmd, 0); err != nil {
		sess.Close()
		return nil, err
	}
	// The pumps start once the caller is attached (pump), so nothing the
	// agent writes first, its hello included, goes to no one.
	a.pump = func() {
		go a.pumpStderr(stderr)
		go a.pumpStdout(stdout)
	}
	return a, nil
}

// pumpStdout passes the agent's lines to the caller of the moment, keeps
// the hello, and takes the answer to a release for itself.
func (a *keptAgent) pumpStdout(stdout io.Reader) {
	defer close(a.ended)
	r := bufio.NewReaderSize(stdout, 64<<10)
	for {
		line, err := readLine(r, proto.MaxLine)
		if len(line) > 0 && err == nil {
			a.mu.Lock()
			if a.hello == nil && isHello(line) {
				a.hello = bytes.Clone(line)
			}
			if rerr, ok := releaseAnswer(line, a.release); ok {
				a.release = 0
				a.relDone <- rerr
				a.mu.Unlock()
				continue
			}
			out := a.out
			a.mu.Unlock()
			if out != nil {
				out.Write(line)
			}
			continue
		}
		if err != nil {
			return
		}
	}
}

func (a *keptAgent) pumpStderr(stderr io.Reader) {
	defer close(a.errDone)
	buf := make([]byte, 32<<10)
	for {
		n, err := stderr.Read(buf)
		if n > 0 {
			a.mu.Lock()
			w := a.errw
			a.mu.Unlock()
			if w != nil {
				w.Write(buf[:n])
			}
		}
		if err != nil {
			return
		}
	}
}

func isHello(line []byte) bool {
	var h proto.Hello
	return bytes.HasPrefix(bytes.TrimSpace(line), []byte("{")) && json.Unmarshal(line, &h) == nil && h.Magic == proto.Magic
}

// releaseAnswer reports whether line is the response to release id, and
// the error it carries.
func releaseAnswer(line []byte, id uint64) (*proto.Error, bool) {
	if id == 0 || !bytes.Contains(line, []byte(strconv.FormatUint(id, 10))) {
		return nil, false
	}
	var env proto.Envelope
	if json.Unmarshal(line, &env) != nil || env.ID != id || env.Event != "" {
		return nil, false
	}
	if env.Error != nil {
		return env.Error, true
	}
	// Something it could not undo (an rxe device, a capture): not clean.
	var res proto.CleanupResult
	if err := json.Unmarshal(env.Result, &res); err != nil {
		return &proto.Error{Code: proto.CodeInternal, Message: "release: " + err.Error()}, true
	}
	// The mux daemon logs what it says: each field within its bound
	// (proto.Bounds), an error's text cut to 4 KiB.
	if err := proto.CheckBounds(&res); err != nil {
		return &proto.Error{Code: proto.CodeInternal, Message: "release: the agent's answer is refused: " + err.Error()}, true
	}
	if len(res.Errors) > 4 {
		res.Errors = append(res.Errors[:4:4], fmt.Sprintf("(%d more)", len(res.Errors)-4))
	}
	if len(res.Errors) > 0 {
		return &proto.Error{Code: proto.CodeInternal, Message: "release: " + strings.Join(res.Errors, "; ")}, true
	}
	return nil, true
}

// release asks the agent to end the caller's lease and waits for its
// answer; false when the agent cannot be kept.
func (p *KeptAgents) release(a *keptAgent) bool {
	a.mu.Lock()
	if a.hello == nil {
		a.mu.Unlock()
		return false // never became an agent (e.g. printed the install probe)
	}
	p.mu.Lock()
	p.nextID++
	id := keptReleaseID + p.nextID
	p.mu.Unlock()
	a.release = id
	a.relDone = make(chan *proto.Error, 1)
	done := a.relDone
	a.mu.Unlock()
	b, _ := json.Marshal(proto.Request{ID: id, Method: proto.MethodRelease})
	if _, err := a.stdin.Write(append(b, '\n')); err != nil {
		return false
	}
	select {
	case <-a.ended:
		return false
	case perr := <-done:
		if perr != nil {
			a.log.Info("kept agent not released", "host", a.key.up.Name, "err", perr)
			return false
		}
		return true
	case <-time.After(releaseTimeout):
		a.log.Warn("kept agent did not answer its release", "host", a.key.up.Name)
		return false
	}
}

// end closes the agent's session: its input ends and it stops everything.
func (p *KeptAgents) end(a *keptAgent, why string) {
	a.log.Debug("kept agent ended", "host", a.key.up.Name, "why", why)
	a.mu.Lock()
	unread := a.pump != nil
	a.mu.Unlock()
	if unread { // never attached: nothing reads its output
		a.sess.Close()
		return
	}
	a.stdin.Close()
	go func() {
		select {
		case <-a.ended:
		case <-time.After(30 * time.Second):
		}
		a.sess.Close()
	}()
}

// keptConn is the caller's end of a KeptAgentChannel, the agent's session.
type keptConn struct {
	ch   ssh.Channel
	done chan struct{} // the channel is closed and stderr copied
}

// openKept opens a KeptAgentChannel for cmd on c; nil, nil when the daemon
// does not keep agents (one from before they existed relays the channel
// to the host, which refuses its type).
func openKept(ctx context.Context, c *sshx.Client, cmd string, stderr io.Writer, limit time.Duration) (*keptConn, error) {
	extra, err := json.Marshal(keptOpen{Cmd: cmd})
	if err != nil {
		return nil, err
	}
	// The daemon opens an upstream session for it: as bounded as any.
	w := c.Watch(ctx, "open kept agent channel", limit)
	ch, reqs, err := c.OpenChannel(KeptAgentChannel, extra)
	if werr := w.Stop(); werr != nil {
		if ch != nil {
			ch.Close()
		}
		return nil, fmt.Errorf("kept agent through rlab mux: %w", werr)
	}
	if err != nil {
		var oe *ssh.OpenChannelError
		if errors.As(err, &oe) && oe.Reason == ssh.UnknownChannelType {
			return nil, nil
		}
		return nil, fmt.Errorf("kept agent through rlab mux: %w", err)
	}
	k := &keptConn{ch: ch, done: make(chan struct{})}
	copied := make(chan struct{})
	go func() {
		io.Copy(stderr, ch.Stderr())
		close(copied)
	}()
	go func() {
		ssh.DiscardRequests(reqs)
		<-copied
		close(k.done)
	}()
	return k, nil
}

// Close drops the channel (the daemon then releases the agent).
func (k *keptConn) Close() error { return k.ch.Close() }

// stdin is the agent's input: closing it sends EOF, the daemon releases the
// agent, then closes the channel.
func (k *keptConn) stdin() io.WriteCloser { return keptStdin{k.ch} }

type keptStdin struct{ ch ssh.Channel }

func (s keptStdin) Write(p []byte) (int, error) { return s.ch.Write(p) }
func (s keptStdin) Close() error                { return s.ch.CloseWrite() }

// Wait waits for the channel to close.
func (k *keptConn) Wait() error {
	<-k.done
	return nil
}
