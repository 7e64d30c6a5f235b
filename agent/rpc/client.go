// Package rpc is the controller's side of the agent protocol (agent/proto):
// one client over a reader (the agent's stdout) and a writer (its stdin),
// whatever carries them — an SSH session in engine/remote, io.Pipe to an
// in-process agent in tests. It sends requests, matches responses by id,
// hands events to a callback, and gives up on an agent that does not
// answer: every call has a deadline (Method.Base, plus the bound a call
// carries itself, such as a workload's timeout), and while a call waits
// the client pings the agent (a heartbeat), so a silent agent is found
// even during a long proc.wait. Once the agent's watchdog is armed
// (Watchdog) the client pings it for the whole run, so that an agent
// whose controller vanished ends itself. An agent given up on is lost: its
// transport is closed and every call fails with an error naming the host.
//
// It imports only the standard library and agent/proto (internal/archtest
// checks it).
package rpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
)

// ErrLost is wrapped by every error of an agent the client gave up on or
// whose stream ended.
var ErrLost = errors.New("agent lost")

// CallError is an error the agent answered a call with.
type CallError struct {
	Host   string
	Method string
	Err    *proto.Error
}

func (e *CallError) Error() string {
	s := fmt.Sprintf("host %q: %s: %s", e.Host, e.Method, e.Err.Message)
	if len(e.Err.Command) > 0 {
		s += fmt.Sprintf(" (command %q exited %d", e.Err.Command, e.Err.ExitCode)
		if st := strings.TrimSpace(e.Err.Stderr); st != "" {
			s += ": " + Truncate(st, 2000)
		}
		s += ")"
	}
	return s
}

func (e *CallError) Unwrap() error { return e.Err }

// StuckError: the agent did not answer a call within its deadline (While is
// set for a heartbeat: the call it was waiting for). The client gives up
// on the agent.
type StuckError struct {
	Host   string
	Method string
	After  time.Duration
	While  string
}

func (e *StuckError) Error() string {
	if e.While != "" {
		return fmt.Sprintf("host %q: agent did not answer a heartbeat (%s) within %s while %s was running", e.Host, e.Method, FormatDuration(e.After), e.While)
	}
	return fmt.Sprintf("host %q: agent did not answer %s within %s", e.Host, e.Method, FormatDuration(e.After))
}

func (e *StuckError) Unwrap() error { return ErrLost }

// FormatDuration prints whole seconds under two minutes as "60s", else as
// time.Duration does without the trailing zero units ("2m", "1h5m").
func FormatDuration(d time.Duration) string {
	if d < 2*time.Minute && d >= time.Second && d%time.Second == 0 {
		return fmt.Sprintf("%ds", d/time.Second)
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// Options configure a Client.
type Options struct {
	// Host names the agent's host in errors.
	Host string
	// OnEvent receives every event (log, progress, ready), in order, from
	// the reading goroutine: it must not block.
	OnEvent func(proto.Event)
	// OnStray receives a response that answers no call in flight: the
	// agent's answer to a line it could not decode (id 0), or to a call
	// given up on.
	OnStray func(proto.Envelope)
	// OnLine sees every line the agent writes, as read (transcripts).
	OnLine func([]byte)
	// Close ends the transport when the client gives up on the agent or
	// its stream ends (an SSH session; it must not block long). Without it
	// the writer is closed.
	Close func()
	// Note returns text added to the error of a lost agent (its stderr).
	Note func() string
	// Timeout, when > 0, replaces every method's Base and the heartbeat's
	// deadline (short in tests; RLAB_AGENT_TIMEOUT for slow hosts).
	Timeout time.Duration
	// Heartbeat, when > 0: once a call has waited this long, and again
	// every Heartbeat, the client pings the agent; an agent that does not
	// answer a ping within its deadline is lost. Every agent answers ping
	// (it is in protocol 1 from the start; an agent without it would
	// answer unknown_method, which is an answer too).
	Heartbeat time.Duration
	// HeartbeatTimeout, when > 0, is a heartbeat ping's deadline (else
	// Timeout's, else ping's Base).
	HeartbeatTimeout time.Duration
	// Mask, when set, masks the sensitive values in an error's text before
	// Bounded cuts it (SECURITY 195): a value the cut fell inside kept a
	// part the run's redactor, given the cut text, no longer matched. cut
	// says the text may be part of a longer one the agent cut (a stderr's
	// tail or head), so it may start with a value's end or end with a
	// value's start.
	Mask func(s string, cut bool) string
}

// Client is the controller's end of one agent.
type Client struct {
	o   Options
	r   *bufio.Reader
	w   io.WriteCloser
	wmu sync.Mutex
	// wonce closes w once; werr is what that returned.
	wonce sync.Once
	werr  error
	next  atomic.Uint64

	mu      sync.Mutex
	pending map[uint64]*Pending // nil once lost
	err     error
	lost    chan struct{}
	once    sync.Once
	beat    atomic.Bool // a heartbeat ping in flight
	keep    atomic.Bool // keepAlive started (Watchdog)
}

// New starts a client reading r (after the hello) and writing w.
func New(r io.Reader, w io.WriteCloser, o Options) *Client {
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReaderSize(r, 64<<10)
	}
	c := &Client{o: o, r: br, w: w, pending: map[uint64]*Pending{}, lost: make(chan struct{})}
	go c.read()
	if o.Heartbeat > 0 {
		go c.heartbeat()
	}
	return c
}

// Dial reads the agent's hello from r (skipping at most maxJunk bytes a
// login script printed before it) and starts a client.
func Dial(r io.Reader, w io.WriteCloser, o Options) (*Client, proto.Hello, error) {
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReaderSize(r, 64<<10)
	}
	h, _, err := ReadHello(br, 64<<10)
	if err != nil {
		return nil, h, err
	}
	return New(br, w, o), h, nil
}

// Pending is a call sent and not yet waited for.
type Pending struct {
	ID     uint64
	Method string
	c      *Client
	sent   time.Time
	timer  *time.Timer
	done   chan struct{}
	env    proto.Envelope
	err    error
}

// Done is closed once the call is answered or failed.
func (p *Pending) Done() <-chan struct{} { return p.done }

func (p *Pending) finish(env proto.Envelope, err error) {
	if p.timer != nil {
		p.timer.Stop()
	}
	p.env, p.err = env, err
	close(p.done)
}

// Go sends a call and returns at once.
func (c *Client) Go(method string, params any) (*Pending, error) {
	id := c.next.Add(1)
	req := proto.Request{ID: id, Method: method}
	if params != nil {
		b, err := json.Marshal(params)
		if err != nil {
			return nil, fmt.Errorf("host %q: %s: encode params: %w", c.o.Host, method, err)
		}
		req.Params = b
	}
	line, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("host %q: %s: %w", c.o.Host, method, err)
	}
	p := &Pending{ID: id, Method: method, c: c, done: make(chan struct{})}
	c.mu.Lock()
	if c.pending == nil {
		err := c.err
		c.mu.Unlock()
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	c.pending[id] = p
	c.mu.Unlock()
	// The deadline runs from the send; the heartbeat looks at sent too.
	d, bounded := Deadline(method, params, c.o.Timeout)
	c.wmu.Lock()
	c.mu.Lock()
	p.sent = time.Now()
	if bounded && c.pending[id] == p {
		p.timer = time.AfterFunc(d, func() { c.expire(p, d, "") })
	}
	c.mu.Unlock()
	_, werr := c.w.Write(append(line, '\n'))
	c.wmu.Unlock()
	if werr != nil {
		c.forget(p)
		select {
		case <-c.lost:
			return nil, fmt.Errorf("%s: %w", method, c.Err())
		case <-time.After(time.Second):
		}
		return nil, fmt.Errorf("host %q: %s: send request: %w", c.o.Host, method, werr)
	}
	return p, nil
}

// Wait waits for the call's answer and decodes its result into result
// (when not nil). An error the agent answered is a *CallError (errors.As
// to *proto.Error for its code); an agent given up on, a *StuckError or
// an error wrapping ErrLost. When ctx ends first the call is forgotten
// (the agent is not told) and ctx's error returned.
func (p *Pending) Wait(ctx context.Context, result any) error {
	c := p.c
	select {
	case <-p.done:
	case <-ctx.Done():
		c.forget(p)
		return fmt.Errorf("host %q: %s: %w", c.o.Host, p.Method, ctx.Err())
	}
	if p.err != nil {
		return p.err
	}
	if p.env.Error != nil {
		// Bounded: every step keeps an error's text for the run (SECURITY 136).
		return &CallError{Host: c.o.Host, Method: p.Method, Err: maskError(p.env.Error, c.o.Mask).Bounded()}
	}
	if result != nil {
		// A reply's text is bounded (MaxLine), what decoding it builds is
		// not: a line of empty objects costs a hundred times its size.
		if err := proto.CheckValues(p.env.Result, proto.MaxValues); err != nil {
			return fmt.Errorf("host %q: %s: decode result: %w", c.o.Host, p.Method, err)
		}
		if err := json.Unmarshal(p.env.Result, result); err != nil {
			return fmt.Errorf("host %q: %s: decode result: %w", c.o.Host, p.Method, err)
		}
		// Each field within its bound (proto.Bounds): what a run keeps,
		// copies per workload, stores or prints of a host's answer is no
		// larger than the real thing can be (issue 24).
		if err := proto.CheckBounds(result); err != nil {
			return fmt.Errorf("host %q: %s: the agent's answer is refused: %w", c.o.Host, p.Method, err)
		}
	}
	return nil
}

// maskError is e with its text masked by mask (Options.Mask), when set.
func maskError(e *proto.Error, mask func(s string, cut bool) string) *proto.Error {
	if mask == nil {
		return e
	}
	m := *e
	m.Code, m.Message, m.Stderr = mask(m.Code, false), mask(m.Message, false), mask(m.Stderr, true)
	m.Command = make([]string, len(e.Command))
	for i, a := range e.Command {
		m.Command[i] = mask(a, false)
	}
	if e.Command == nil {
		m.Command = nil
	}
	return &m
}

// Do sends one call by name and waits for its answer: the raw path, for
// tests of the protocol itself (unknown methods, malformed params). Code
// that talks to an agent uses the typed pairs: Call, Invoke, Send.
func (c *Client) Do(ctx context.Context, method string, params, result any) error {
	p, err := c.Go(method, params)
	if err != nil {
		return err
	}
	return p.Wait(ctx, result)
}

// Request is one typed call on its way to an agent. Only a Method makes
// one (Invoke, Call), so whatever carries it — the engine's view of a
// host (engine/run.Host, steps.Host), a wrapper that counts or fails
// calls, a fake in a test — passes on a method with params of that
// method's type and a result of its result type: a wrong params type does
// not compile.
type Request struct {
	method string
	params any // the P, nil for None
	result any // a *R
}

// Method is the request's method name.
func (r *Request) Method() string { return r.method }

// Params is the request's params (a value of the method's P; nil for
// None), for a wrapper that looks at what passes through it.
func (r *Request) Params() any { return r.params }

// Match reports whether r is a call of m and, if it is, returns its params
// and where its result goes: how a fake host in a test answers a call,
// typed.
func Match[P, R any](r *Request, m Method[P, R]) (P, *R, bool) {
	var p P
	if r.method != m.Name {
		return p, nil, false
	}
	res, ok := r.result.(*R)
	if !ok {
		return p, nil, false
	}
	if r.params != nil {
		if p, ok = r.params.(P); !ok {
			return p, nil, false
		}
	}
	return p, res, true
}

// Caller carries typed calls to an agent: a *Client, or the engine's view
// of a host (engine/run.Host, steps.Host) whose Send ends in a Client's.
// There is no way to send a method by name through it.
type Caller interface {
	Send(ctx context.Context, r *Request) error
}

// Send sends r and decodes its answer into r's result.
func (c *Client) Send(ctx context.Context, r *Request) error {
	return c.Do(ctx, r.method, r.params, r.result)
}

// Call sends m with params p and returns its result.
func Call[P, R any](ctx context.Context, c *Client, m Method[P, R], p P) (R, error) {
	return Invoke(ctx, c, m, p)
}

// Invoke is Call through any Caller: the typed pairs for code that holds a
// host rather than its client.
func Invoke[P, R any](ctx context.Context, c Caller, m Method[P, R], p P) (R, error) {
	var r R
	var params any = p
	if _, none := params.(None); none {
		params = nil
	}
	err := c.Send(ctx, &Request{method: m.Name, params: params, result: &r})
	if ch, ok := any(&r).(checker); ok && err == nil {
		if cerr := ch.Check(); cerr != nil {
			var zero R
			return zero, fmt.Errorf("%s: the agent's answer is refused: %w", m.Name, cerr)
		}
	}
	return r, err
}

// checker is an answer that can say whether a host may have sent it
// (proto.ProcIdentity's boot id, proto.ImpairResult's sizes): Invoke
// refuses one that fails, whatever Caller delivered it, so no later step
// journals or shows it (SECURITY 126).
type checker interface{ Check() error }

// WriteLine sends a raw line (tests of the agent's handling of bad input);
// a newline is added.
func (c *Client) WriteLine(line []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.w.Write(append(bytes.Clone(line), '\n'))
	return err
}

func (c *Client) forget(p *Pending) {
	c.mu.Lock()
	if c.pending != nil && c.pending[p.ID] == p {
		delete(c.pending, p.ID)
		if p.timer != nil {
			p.timer.Stop()
		}
	}
	c.mu.Unlock()
}

// expire gives up on the agent: the call p was not answered within d.
func (c *Client) expire(p *Pending, d time.Duration, while string) {
	c.mu.Lock()
	if c.pending == nil || c.pending[p.ID] != p {
		c.mu.Unlock()
		return
	}
	delete(c.pending, p.ID)
	c.mu.Unlock()
	err := &StuckError{Host: c.o.Host, Method: p.Method, After: d, While: while}
	p.finish(proto.Envelope{}, err)
	c.Abort(err)
}

func (c *Client) read() {
	var err error
	for {
		var line []byte
		line, err = ReadLine(c.r, proto.MaxLine)
		if err != nil {
			break
		}
		if c.o.OnLine != nil {
			c.o.OnLine(line)
		}
		var env proto.Envelope
		if jerr := json.Unmarshal(line, &env); jerr != nil {
			err = fmt.Errorf("malformed line from agent: %v", jerr)
			break
		}
		if env.Event != "" {
			if c.o.OnEvent != nil {
				c.o.OnEvent(proto.Event{ID: env.ID, Event: env.Event, Data: env.Data})
			}
			continue
		}
		c.mu.Lock()
		p := c.pending[env.ID]
		if p != nil {
			delete(c.pending, env.ID)
		}
		c.mu.Unlock()
		if p != nil {
			p.finish(env, nil)
		} else if c.o.OnStray != nil {
			c.o.OnStray(env)
		}
	}
	if errors.Is(err, io.EOF) {
		err = errors.New("its session ended")
	}
	c.Abort(err)
}

// Abort gives up on the agent (once): the transport is closed, and every
// call in flight and every later one fails with an error naming the host
// and why.
func (c *Client) Abort(why error) {
	c.once.Do(func() {
		if c.o.Close != nil {
			c.o.Close()
		} else {
			c.closeW()
		}
		note := ""
		if c.o.Note != nil {
			note = c.o.Note()
		}
		c.mu.Lock()
		var se *StuckError
		if errors.As(why, &se) {
			c.err = fmt.Errorf("%w%s", why, note) // names the host already
		} else {
			c.err = fmt.Errorf("agent on host %q lost: %w: %v%s", c.o.Host, ErrLost, why, note)
		}
		pend := c.pending
		c.pending = nil
		c.mu.Unlock()
		close(c.lost)
		for _, p := range pend {
			p.finish(proto.Envelope{}, fmt.Errorf("%s: %w", p.Method, c.err))
		}
	})
}

// heartbeat pings the agent while a call has waited Heartbeat or longer.
func (c *Client) heartbeat() {
	t := time.NewTicker(c.o.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-c.lost:
			return
		case <-t.C:
		}
		waiting := ""
		c.mu.Lock()
		for _, p := range c.pending {
			if !p.sent.IsZero() && time.Since(p.sent) >= c.o.Heartbeat && p.Method != proto.MethodPing {
				waiting = p.Method
				break
			}
		}
		c.mu.Unlock()
		if waiting == "" || !c.beat.CompareAndSwap(false, true) {
			continue
		}
		go func() {
			defer c.beat.Store(false)
			d, _ := Deadline(proto.MethodPing, nil, c.o.Timeout)
			if c.o.HeartbeatTimeout > 0 {
				d = c.o.HeartbeatTimeout
			}
			p, err := c.goNoDeadline(proto.MethodPing)
			if err != nil {
				return
			}
			select {
			case <-p.done:
			case <-time.After(d):
				c.expire(p, d, waiting)
			case <-c.lost:
			}
		}()
	}
}

// Watchdog arms the agent's watchdog (proto.MethodWatchdog): an agent that
// reads nothing for limit undoes what it made and exits. From then on the
// client pings it every limit/6 (at most 10 s, at least 100 ms) until it is
// lost or closed, whether or not a call waits, so that only a controller
// gone silent (its network vanished) sets it off. An agent from before the
// watchdog answers a *CallError with proto.CodeUnknown, and is not pinged.
func (c *Client) Watchdog(ctx context.Context, limit time.Duration) error {
	if _, err := Call(ctx, c, Watchdog, proto.WatchdogParams{LimitMs: limit.Milliseconds()}); err != nil {
		return err
	}
	if limit > 0 && c.keep.CompareAndSwap(false, true) {
		go c.keepAlive(min(max(limit/6, 100*time.Millisecond), 10*time.Second))
	}
	return nil
}

// keepAlive pings the agent every interval until it is lost. A ping not
// answered by the next one is forgotten (its late answer is a stray): the
// heartbeat, not this, decides that an agent is stuck.
func (c *Client) keepAlive(every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	var last *Pending
	for {
		select {
		case <-c.lost:
			return
		case <-t.C:
		}
		if last != nil {
			select {
			case <-last.done:
			default:
				c.forget(last)
			}
		}
		p, err := c.goNoDeadline(proto.MethodPing)
		if err != nil {
			return
		}
		last = p
	}
}

// goNoDeadline sends a parameterless call whose deadline the caller keeps.
func (c *Client) goNoDeadline(method string) (*Pending, error) {
	id := c.next.Add(1)
	line, _ := json.Marshal(proto.Request{ID: id, Method: method})
	p := &Pending{ID: id, Method: method, c: c, done: make(chan struct{})}
	c.mu.Lock()
	if c.pending == nil {
		err := c.err
		c.mu.Unlock()
		return nil, err
	}
	c.pending[id] = p
	c.mu.Unlock()
	c.wmu.Lock()
	c.mu.Lock()
	p.sent = time.Now()
	c.mu.Unlock()
	_, err := c.w.Write(append(line, '\n'))
	c.wmu.Unlock()
	if err != nil {
		c.forget(p)
		return nil, err
	}
	return p, nil
}

// Lost is closed once the client gave up on the agent or its stream ended.
func (c *Client) Lost() <-chan struct{} { return c.lost }

// Err is why the agent is lost (nil while it is not).
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Close closes the writer: the agent's input ends, it stops what it
// started and exits; its stream then ends (Lost).
func (c *Client) Close() error {
	// Not under wmu: a write blocked on an agent that stopped reading
	// must not keep its input from closing.
	return c.closeW()
}

// closeW closes the writer once (a teardown that ended every agent's input
// first calls Close again to wait): a second EOF is not sent.
func (c *Client) closeW() error {
	c.wonce.Do(func() { c.werr = c.w.Close() })
	return c.werr
}

// Truncate bounds s to n bytes ("..." where it was cut).
func Truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
