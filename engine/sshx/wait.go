package sshx

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
)

// Every wait on a host ends: a channel open, an exec request, a read of a
// session's output. Closing a session does not end a read with OpenSSH:
// sshd keeps a session's channel while its process lives (a `sleep` or a
// stalled agent keeps it forever), and x/crypto's reads end only when the
// server closes the channel. Closing the connection does: every channel on
// it fails at once. So a wait that passes its limit, or whose context ends,
// closes the host's connection (Abort), and the host is given up on.

// DefaultOpenTimeout bounds a channel open and an exec request's answer
// (OpenSession, Start): sshd answers both in milliseconds.
const DefaultOpenTimeout = 30 * time.Second

// ErrStalled is wrapped by the error of a wait on a host that passed its
// limit; the host's connection was closed to end it.
var ErrStalled = errors.New("host stalled")

// StallError is a wait on a host that passed its limit (Idle: the limit is
// on silence, renewed by each byte), or whose context ended; the
// connection was closed to end it.
type StallError struct {
	Step  string
	Limit time.Duration
	Idle  bool
	Ctx   error  // the context's error when it ended first, else nil
	Cut   string // why the caller cut the host off (Watch.Cut), else ""
}

func (e *StallError) Error() string {
	switch {
	case e.Cut != "":
		return fmt.Sprintf("%s: %s (cut off)", e.Step, e.Cut)
	case e.Ctx != nil:
		return fmt.Sprintf("%s: stopped (%v)", e.Step, e.Ctx)
	case e.Idle:
		return fmt.Sprintf("%s: no progress for %s", e.Step, FormatLimit(e.Limit))
	}
	return fmt.Sprintf("%s: no answer within %s", e.Step, FormatLimit(e.Limit))
}

// Unwrap is ErrStalled, or the context's error.
func (e *StallError) Unwrap() error {
	if e.Ctx != nil {
		return e.Ctx
	}
	return ErrStalled
}

// FormatLimit writes a limit as rpc.FormatDuration does: whole seconds
// under two minutes as "90s", else "2m", "1h5m".
func FormatLimit(d time.Duration) string {
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

// Abort closes the host's connection itself (for a view on a shared one,
// the shared one: a Dialer dials it again for the next Dial), ending every
// wait on it. For a host that stopped answering; Close is the ordinary end.
func (c *Client) Abort() {
	if c.Client != nil {
		c.Client.Close()
	}
}

// Watch guards the waits of one step on c: when limit passes (since Watch,
// or since the last Reset) it closes c's connection (Abort), which ends
// them. When ctx ends first, it closes the step's session (when it has
// one: an honest host then ends it, and the connection stays for the
// teardown), and the connection CancelGrace later if the wait has not
// ended by then (Stop). Stop ends the watch.
type Watch struct {
	c       *Client
	limit   time.Duration
	idle    bool
	soft    io.Closer
	t       *time.Timer
	stopCtx func() bool

	mu      sync.Mutex
	step    string
	err     *StallError
	stopped bool
	grace   *time.Timer
}

// CancelGrace is how long a session closed because its context ended may
// take to end its wait before the connection is closed under it.
const CancelGrace = 5 * time.Second

// WatchOptions refine a Watch.
type WatchOptions struct {
	// Idle makes the limit one on silence: each Reset renews it.
	Idle bool
	// Session is the step's session, closed first when ctx ends.
	Session io.Closer
}

// Watch starts a watch of step on c with a limit on the whole step.
// limit <= 0 means no limit (ctx only).
func (c *Client) Watch(ctx context.Context, step string, limit time.Duration) *Watch {
	return c.WatchWith(ctx, step, limit, WatchOptions{})
}

// WatchWith is Watch with options.
func (c *Client) WatchWith(ctx context.Context, step string, limit time.Duration, o WatchOptions) *Watch {
	w := &Watch{c: c, step: step, limit: limit, idle: o.Idle, soft: o.Session}
	if limit > 0 {
		w.t = time.AfterFunc(limit, func() { w.fire(&StallError{Step: w.getStep(), Limit: limit, Idle: w.idle}) })
	}
	w.stopCtx = context.AfterFunc(ctx, func() { w.fire(&StallError{Step: w.getStep(), Ctx: context.Cause(ctx)}) })
	return w
}

func (w *Watch) fire(e *StallError) {
	w.mu.Lock()
	if w.err != nil || w.stopped {
		w.mu.Unlock()
		return
	}
	w.err = e
	if e.Ctx != nil && w.soft != nil {
		w.grace = time.AfterFunc(CancelGrace, w.c.Abort)
		w.mu.Unlock()
		w.soft.Close()
		return
	}
	w.mu.Unlock()
	w.c.Abort()
}

// Cut ends the step now, closing the connection: the host sent what no
// honest host sends (why says what, e.g. "more than 64 KiB of output").
func (w *Watch) Cut(why string) {
	w.fire(&StallError{Step: w.getStep(), Cut: why})
}

// SetStep renames the step the watch guards (the next error says it).
func (w *Watch) SetStep(step string) {
	w.mu.Lock()
	w.step = step
	w.mu.Unlock()
}

func (w *Watch) getStep() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.step
}

// Reset renews the limit: the host showed life (bytes arrived or left).
func (w *Watch) Reset() {
	if w.t == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.stopped && w.err == nil {
		w.t.Reset(w.limit)
	}
}

// Err is the watch's error once it fired (the connection is closed), else
// nil.
func (w *Watch) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		return nil
	}
	return w.err
}

// Stop ends the watch and returns Err.
func (w *Watch) Stop() error {
	if w.t != nil {
		w.t.Stop()
	}
	w.stopCtx()
	w.mu.Lock()
	w.stopped = true
	if w.grace != nil {
		w.grace.Stop()
	}
	w.mu.Unlock()
	return w.Err()
}

// Fired is err, or the watch's error when it fired (what ended a wait
// that failed is the stall, not the closed connection it saw).
func (w *Watch) Fired(err error) error {
	if werr := w.Err(); werr != nil {
		return werr
	}
	return err
}

// OpenSession opens a session, at most limit (DefaultOpenTimeout when
// <= 0) or until ctx ends: then the connection is closed and the error
// says "open session: no answer within 30s".
func (c *Client) OpenSession(ctx context.Context, limit time.Duration) (*ssh.Session, error) {
	if limit <= 0 {
		limit = DefaultOpenTimeout
	}
	w := c.Watch(ctx, "open session", limit)
	s, err := c.NewSession()
	if werr := w.Stop(); werr != nil {
		if s != nil {
			s.Close()
		}
		return nil, werr
	}
	if err != nil {
		return nil, fmt.Errorf("open session: %w", err)
	}
	return s, nil
}

// Start starts cmd in s (an exec request, which waits for sshd's answer),
// at most limit (DefaultOpenTimeout when <= 0) or until ctx ends: then c's
// connection is closed.
func (c *Client) Start(ctx context.Context, s *ssh.Session, cmd string, limit time.Duration) error {
	if limit <= 0 {
		limit = DefaultOpenTimeout
	}
	w := c.Watch(ctx, "start command", limit)
	err := s.Start(cmd)
	if werr := w.Stop(); werr != nil {
		return werr
	}
	if err != nil {
		return fmt.Errorf("start command: %w", err)
	}
	return nil
}
