package sshx

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/crypto/ssh"
)

// Options configure a Dialer. Zero values mean the defaults noted.
type Options struct {
	// KnownHosts are the user's known_hosts files (--known-hosts) to verify
	// host keys with; new keys are recorded in the first, and only there.
	// Default ~/.ssh/known_hosts.
	KnownHosts []string
	// LabKnownHosts are known_hosts files a lab named (its known_hosts
	// attribute, or a run's state.json): read, never written, and only
	// for hosts KnownHosts has no entry for, so a key the user pinned
	// always wins over a lab's.
	LabKnownHosts []string
	// AcceptNewHostKeys records the key of a host no known_hosts file has
	// an entry for (trust on first use), in KnownHosts[0]. A changed key is
	// refused regardless.
	AcceptNewHostKeys bool
	// SSHConfig is the ssh config file to honour; "" ~/.ssh/config, "none" none.
	SSHConfig string
	// AgentSocket is the ssh-agent socket; "" uses $SSH_AUTH_SOCK, "none" none.
	AgentSocket string

	DialTimeout       time.Duration // TCP connect; default 10s
	HandshakeTimeout  time.Duration // SSH handshake and auth; default 20s
	KeepaliveInterval time.Duration // default 15s; <0 disables
	KeepaliveTimeout  time.Duration // a keepalive unanswered this long closes the link; default 15s
	// MaxHandshakes caps concurrent handshakes per destination sshd and per
	// bastion (sshd's default MaxStartups 10:30:100 drops bursts above 10).
	// Default 8.
	MaxHandshakes int
	// Retries is how many times a handshake reset by the server (EOF,
	// connection reset: what MaxStartups does) is retried, with jitter.
	// Default 4; negative: none.
	Retries int

	// Persist keeps authenticated connections alive this long after their
	// last use, in a per-user background process (rlab's ControlPersist):
	// Dial then goes through that mux daemon, which dials upstream or
	// reuses a live connection. 0: $RLAB_PERSIST if set, else off;
	// negative: off.
	Persist time.Duration
	// MuxDir is the mux daemon's private folder; "" MuxDir().
	MuxDir string
	// MuxCommand starts the mux daemon (argv; "--dir" DIR "--persist" D are
	// appended). Default: this executable with "mux serve" (rlab's hidden
	// command); tests re-exec their own binary.
	MuxCommand []string

	Logger *slog.Logger
}

// Dialer connects to hosts. One Dialer serves a whole run: it shares
// bastion connections, host key state and handshake slots between hosts.
// It is safe for concurrent use.
type Dialer struct {
	opts   Options
	keys   *hostKeys
	auth   *auth
	sshCfg *sshConfig
	log    *slog.Logger

	mu       sync.Mutex
	slots    map[string]chan struct{}
	bastions map[string]*bastion
	closed   bool

	muxMu sync.Mutex
	link  *muxLink // to the mux daemon (Persist), shared by every host
}

// bastion is one shared connection: a jump host's, and also any lab host's
// (a host dialed for itself and as the bastion of others is logged into
// once). Clients handed out by Dial are views on it; the connection ends
// when the last view is closed, unless it serves as a bastion (pinned),
// which the Dialer keeps until its Close.
type bastion struct {
	key    string
	done   chan struct{}
	client *Client
	err    error
	at     time.Time // when the dial ended
	refs   int       // open views (and callers waiting for the dial); under Dialer.mu
	pinned bool      // serves as a bastion; under Dialer.mu
}

// failedBastionTTL is how long a failed bastion dial is remembered: the
// hosts behind it dialed in the same burst all get its error at once, and a
// long-lived Dialer (the mux daemon's) tries again later.
const failedBastionTTL = 10 * time.Second

// dead: dialed, and the connection has ended since, or the dial failed a
// while ago.
func (b *bastion) dead() bool {
	select {
	case <-b.done:
	default:
		return false
	}
	if b.client == nil {
		return time.Since(b.at) > failedBastionTTL
	}
	select {
	case <-b.client.gone:
		return true
	default:
		return false
	}
}

// NewDialer checks the options and reads known_hosts and the ssh config.
func NewDialer(opts Options) (*Dialer, error) {
	if len(opts.KnownHosts) == 0 {
		opts.KnownHosts = []string{ExpandHome("~/.ssh/known_hosts")}
	}
	opts.KnownHosts = expandAll(opts.KnownHosts)
	opts.LabKnownHosts = expandAll(opts.LabKnownHosts)
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&opts.DialTimeout, 10*time.Second)
	def(&opts.HandshakeTimeout, 20*time.Second)
	def(&opts.KeepaliveInterval, 15*time.Second)
	def(&opts.KeepaliveTimeout, 15*time.Second)
	if opts.MaxHandshakes <= 0 {
		opts.MaxHandshakes = 8
	}
	switch {
	case opts.Retries == 0:
		opts.Retries = 4
	case opts.Retries < 0:
		opts.Retries = 0 // no retry
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Persist == 0 {
		if v := os.Getenv("RLAB_PERSIST"); v != "" {
			p, err := ParsePersist(v)
			if err != nil {
				return nil, fmt.Errorf("RLAB_PERSIST: %w", err)
			}
			opts.Persist = p
		}
	}
	keys, err := newHostKeys(opts.KnownHosts, opts.LabKnownHosts, opts.AcceptNewHostKeys)
	if err != nil {
		return nil, err
	}
	cfg, err := loadSSHConfig(opts.SSHConfig)
	if err != nil {
		return nil, err
	}
	sock := opts.AgentSocket
	switch sock {
	case "":
		sock = os.Getenv("SSH_AUTH_SOCK")
	case "none":
		sock = ""
	}
	return &Dialer{
		opts:     opts,
		keys:     keys,
		auth:     &auth{agentSock: sock},
		sshCfg:   cfg,
		log:      opts.Logger,
		slots:    map[string]chan struct{}{},
		bastions: map[string]*bastion{},
	}, nil
}

// Client is one host's SSH connection, kept for the whole run. Open a
// session per command or stream on it.
type Client struct {
	*ssh.Client
	Name string // the target's name
	Addr string // host:port dialed
	User string
	Via  *Client // bastion, nil when direct
	// HostKey is the key the host proved it holds (through a mux: the key
	// of the upstream connection).
	HostKey ssh.PublicKey
	// Muxed: the connection goes through the mux daemon (Options.Persist),
	// which may serve some channel types itself (MuxChannelHandler).
	Muxed bool

	closeOnce sync.Once
	stop      chan struct{}
	gone      chan struct{} // closed when the connection has ended
	release   func()        // a view: Close gives its share back instead
}

// newClient wraps an SSH connection and notes when it ends.
func newClient(c *ssh.Client, name, addr, user string, via *Client, key ssh.PublicKey) *Client {
	cl := &Client{Client: c, Name: name, Addr: addr, User: user, Via: via, HostKey: key, stop: make(chan struct{}), gone: make(chan struct{})}
	go func() {
		c.Wait()
		close(cl.gone)
	}()
	return cl
}

// Gone is closed when the connection has ended (closed here, by the
// server, or by an unanswered keepalive).
func (c *Client) Gone() <-chan struct{} { return c.gone }

// Close closes the connection (not the bastion, which the Dialer owns).
func (c *Client) Close() error {
	var err error
	c.closeOnce.Do(func() {
		close(c.stop)
		if c.release != nil {
			c.release()
			return
		}
		err = c.Client.Close()
	})
	return err
}

// Close closes every bastion connection. Clients to hosts behind them stop
// working; close those first.
func (d *Dialer) Close() error {
	d.mu.Lock()
	d.closed = true
	bs := d.bastions
	d.bastions = map[string]*bastion{}
	d.mu.Unlock()
	for _, b := range bs {
		<-b.done
		if b.client != nil {
			b.client.Close()
		}
	}
	d.muxMu.Lock()
	if d.link != nil {
		d.link.conn.Close()
		d.link = nil
	}
	d.muxMu.Unlock()
	return nil
}

// Dial connects to t and authenticates. Errors say what was being done to
// which address; callers add the host's name.
func (d *Dialer) Dial(ctx context.Context, t Target) (*Client, error) {
	if d.opts.Persist > 0 {
		return d.muxDial(ctx, t)
	}
	r, err := d.resolve(&t, 0)
	if err != nil {
		return nil, err
	}
	b, err := d.shared(ctx, r, false)
	if err != nil {
		return nil, err
	}
	u := b.client
	return &Client{Client: u.Client, Name: r.name, Addr: u.Addr, User: u.User, Via: u.Via, HostKey: u.HostKey,
		stop: make(chan struct{}), gone: u.gone, release: func() { d.release(b) }}, nil
}

func (d *Dialer) dial(ctx context.Context, r *resolved) (*Client, error) {
	var via *Client
	if r.jump != nil {
		b, err := d.bastion(ctx, r.jump)
		if err != nil {
			return nil, fmt.Errorf("via jump host %s: %w", r.jump.key(), err)
		}
		via = b
	}
	methods, notes, err := d.auth.methods(r.identities, r.identitiesOnly)
	if err != nil {
		return nil, fmt.Errorf("connect to %s@%s: %w", r.user, r.addr(), err)
	}
	cfg := &ssh.ClientConfig{
		User:              r.user,
		Auth:              methods,
		HostKeyCallback:   d.keys.callback(r.name, via != nil),
		HostKeyAlgorithms: d.keys.algorithms(r.addr()),
		Timeout:           d.opts.DialTimeout,
		ClientVersion:     "SSH-2.0-rlab",
	}
	var lastErr error
	for attempt := 0; attempt <= d.opts.Retries; attempt++ {
		if attempt > 0 {
			// Exponential backoff with full jitter spreads a burst that
			// MaxStartups refused.
			backoff := time.Duration(100<<min(attempt, 5)) * time.Millisecond
			sleep := backoff/2 + rand.N(backoff)
			d.log.Debug("retry ssh handshake", "addr", r.addr(), "attempt", attempt, "after", sleep, "err", lastErr)
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("connect to %s@%s: %w (last error: %v)", r.user, r.addr(), ctx.Err(), lastErr)
			case <-time.After(sleep):
			}
		}
		c, err := d.handshake(ctx, r, via, cfg)
		if err == nil {
			if attempt > 0 {
				d.log.Info("ssh handshake succeeded after retry (sshd MaxStartups?)", "addr", r.addr(), "attempts", attempt+1)
			}
			return c, nil
		}
		lastErr = err
		if !retryable(err) || ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("connect to %s@%s: %w", r.user, r.addr(), explain(lastErr, r, notes, d.opts))
}

func (d *Dialer) handshake(ctx context.Context, r *resolved, via *Client, cfg *ssh.ClientConfig) (*Client, error) {
	release, err := d.acquire(ctx, r.addr())
	if err != nil {
		return nil, err
	}
	defer release()
	if via != nil {
		// Hosts behind one bastion also share its slots: their handshakes
		// all pass through it.
		rel2, err := d.acquire(ctx, "via "+via.Addr)
		if err != nil {
			return nil, err
		}
		defer rel2()
	}
	var conn net.Conn
	if via != nil {
		dctx, cancel := context.WithTimeout(ctx, d.opts.DialTimeout)
		conn, err = via.DialContext(dctx, "tcp", r.addr())
		cancel()
		if err != nil {
			return nil, fmt.Errorf("open tunnel through %s: %w", via.Addr, err)
		}
	} else {
		nd := net.Dialer{Timeout: d.opts.DialTimeout, KeepAlive: 30 * time.Second}
		conn, err = nd.DialContext(ctx, "tcp", r.addr())
		if err != nil {
			return nil, err
		}
	}
	conn.SetDeadline(time.Now().Add(d.opts.HandshakeTimeout))
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	// Remember the key the host proved, so a connection kept by the mux
	// can be checked again against known_hosts when it is reused.
	var hostKey ssh.PublicKey
	ccfg := *cfg
	ccfg.HostKeyCallback = func(addr string, remote net.Addr, key ssh.PublicKey) error {
		err := cfg.HostKeyCallback(addr, remote, key)
		if err == nil {
			hostKey = key
		}
		return err
	}
	cc, chans, reqs, err := ssh.NewClientConn(conn, r.addr(), &ccfg)
	stopped := stop()
	if err != nil {
		conn.Close()
		if !stopped && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	conn.SetDeadline(time.Time{})
	c := newClient(ssh.NewClient(cc, chans, reqs), r.name, r.addr(), r.user, via, hostKey)
	if d.opts.KeepaliveInterval > 0 {
		go d.keepalive(c)
	}
	return c, nil
}

// keepalive sends keepalive@openssh.com requests; one unanswered within
// KeepaliveTimeout closes the connection, so every session on it fails
// instead of hanging on a dead link.
func (d *Dialer) keepalive(c *Client) {
	t := time.NewTicker(d.opts.KeepaliveInterval)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
		}
		reply := make(chan error, 1)
		go func() {
			_, _, err := c.SendRequest("keepalive@openssh.com", true, nil)
			reply <- err
		}()
		select {
		case <-c.stop:
			return
		case err := <-reply:
			if err != nil {
				return // connection already gone
			}
		case <-time.After(d.opts.KeepaliveTimeout):
			d.log.Warn("ssh keepalive unanswered; closing connection", "host", c.Name, "addr", c.Addr, "timeout", d.opts.KeepaliveTimeout)
			c.Close()
			return
		}
	}
}

func (d *Dialer) acquire(ctx context.Context, key string) (func(), error) {
	d.mu.Lock()
	s, ok := d.slots[key]
	if !ok {
		s = make(chan struct{}, d.opts.MaxHandshakes)
		d.slots[key] = s
	}
	d.mu.Unlock()
	select {
	case s <- struct{}{}:
		return func() { <-s }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// bastion returns the shared connection to a jump host, dialing it once.
func (d *Dialer) bastion(ctx context.Context, r *resolved) (*Client, error) {
	b, err := d.shared(ctx, r, true)
	if err != nil {
		return nil, err
	}
	return b.client, nil
}

// shared returns the live connection to r, dialing it when there is none
// (or the one there was has ended). A bastion caller (pin) keeps it for the
// Dialer's life; any other caller holds one share, given back by release.
// The dial itself is bound to no caller's ctx: others may be waiting for
// it; a caller whose ctx ends stops waiting.
func (d *Dialer) shared(ctx context.Context, r *resolved, pin bool) (*bastion, error) {
	key := r.key()
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil, errors.New("dialer closed")
	}
	b, ok := d.bastions[key]
	if ok && b.dead() {
		// A connection that ended (its keepalive gave up, or the host
		// closed it) is dialed again rather than kept.
		ok = false
	}
	if !ok {
		b = &bastion{key: key, done: make(chan struct{})}
		d.bastions[key] = b
		go func() {
			bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.opts.DialTimeout+d.opts.HandshakeTimeout*time.Duration(d.opts.Retries+1))
			c, err := d.dial(bctx, r)
			cancel()
			d.mu.Lock()
			b.client, b.err, b.at = c, err, time.Now()
			close(b.done)
			switch {
			case err != nil && !b.pinned:
				// A host's failed dial is not remembered: the next Dial
				// tries again (a bastion's is, for failedBastionTTL).
				if d.bastions[key] == b {
					delete(d.bastions, key)
				}
			case err == nil && b.refs == 0 && !b.pinned:
				// Everyone who asked gave up waiting.
				d.drop(b)
			}
			d.mu.Unlock()
		}()
	}
	if pin {
		b.pinned = true
	} else {
		b.refs++
	}
	d.mu.Unlock()
	select {
	case <-b.done:
	case <-ctx.Done():
		if !pin {
			d.release(b)
		}
		return nil, ctx.Err()
	}
	if b.err != nil {
		if !pin {
			d.release(b)
		}
		return nil, b.err
	}
	return b, nil
}

// release gives back one share of b; the last one closes it unless it
// serves as a bastion.
func (d *Dialer) release(b *bastion) {
	d.mu.Lock()
	defer d.mu.Unlock()
	b.refs--
	if b.refs > 0 || b.pinned {
		return
	}
	select {
	case <-b.done:
		d.drop(b)
	default: // still dialing: the dial drops it when it ends
	}
}

// drop forgets b and closes its connection; d.mu held.
func (d *Dialer) drop(b *bastion) {
	if d.bastions[b.key] == b {
		delete(d.bastions, b.key)
	}
	if b.client != nil {
		go b.client.Close()
	}
}

// retryable: the server dropped us during key exchange, as sshd does past
// MaxStartups. Auth and host key failures are final.
func retryable(err error) bool {
	var (
		uk *UnknownHostKeyError
		ck *ChangedHostKeyError
		rk *RevokedHostKeyError
	)
	if errors.As(err, &uk) || errors.As(err, &ck) || errors.As(err, &rk) {
		return false
	}
	if errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	s := err.Error()
	return strings.Contains(s, "handshake failed: EOF") || strings.Contains(s, "connection reset by peer")
}

// explain turns an x/crypto error into a sentence that says what to do.
func explain(err error, r *resolved, notes []string, o Options) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Errorf("no SSH answer within %s (host silent: sshd hung, a firewall dropping packets, or the wrong port): %w", o.HandshakeTimeout, err)
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("connection refused: nothing listens on port %d (sshd not running, or the wrong port): %w", r.port, err)
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return fmt.Errorf("host unreachable (no route; is it only reachable through a jump host?): %w", err)
	case strings.Contains(err.Error(), "unable to authenticate"):
		return fmt.Errorf("login as %q refused (wrong user, or the key is not in its authorized_keys): %s: %w", r.user, strings.Join(notes, "; "), err)
	}
	return err
}
