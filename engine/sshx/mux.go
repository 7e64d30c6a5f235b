package sshx

// Connection persistence, rlab's ControlMaster/ControlPersist: with
// Options.Persist set, Dial does not log in to the host itself. It asks a
// per-user mux daemon (`rlab mux serve`, started on demand) for the
// connection; the daemon dials upstream with an ordinary Dialer (the same
// host key checks, auth, jump chains and pacing) or reuses a live
// connection, and relays every channel the caller opens. The local hop is
// SSH itself, over a unix socket in a private folder, so the caller gets a
// real *ssh.Client: sessions, sftp and the agent protocol work unchanged.
//
// Trust on the local hop: the folder is the user's own, mode 0700, not a
// symlink (checked with lstat before every use); the daemon accepts only
// peers of the same uid (SO_PEERCRED) that know the token it wrote there,
// and callers accept only the host key it wrote there (ssh.FixedHostKey).

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// Files in the mux folder.
const (
	muxSock      = "mux.sock"
	muxHostKey   = "hostkey.pub" // the daemon's ephemeral host key (public half)
	muxToken     = "token"       // the secret a caller proves it can read
	muxSpawnLock = "spawn.lock"  // held by a caller while it starts the daemon
	muxServeLock = "serve.lock"  // held by the daemon for its whole life
	muxLog       = "log"         // the daemon's log, bounded (log, log.1)

	muxProto = 3 // bumped when the dial request changes
	// A caller dials a host by opening a dial@rlab channel (the request in
	// its extra data); the daemon answers on it with one muxDialAnswer
	// line and keeps it open while the caller uses the host: the caller
	// closes it when done, the daemon when the host's connection ends.
	// Channels, unlike global requests, are answered concurrently.
	muxChanDial = "dial@rlab"
	muxChanFwd  = "fwd@rlab" // a channel to a dialed host: muxFwd in its extra data
	muxReqStat  = "status@rlab"
	muxReqStop  = "stop@rlab"
	muxUser     = "rlab"
)

// ErrNoMux: no mux daemon is running in the folder.
var ErrNoMux = errors.New("no rlab mux daemon is running")

// ParsePersist reads a --persist / RLAB_PERSIST value: a Go duration
// ("60s", "10m") or whole seconds ("60", as ControlPersist takes);
// "0", "no" and "off" mean off (returned as -1).
func ParsePersist(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	switch strings.ToLower(s) {
	case "0", "no", "off", "false":
		return -1, nil
	}
	// Seconds beyond time.Duration's 292 years wrapped to a negative
	// duration: such a number falls through to the error below.
	if n, err := strconv.Atoi(s); err == nil && n > 0 && n <= math.MaxInt64/int(time.Second) {
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("persist %q: want a duration such as 60s or 10m, or off", s)
	}
	if d == 0 {
		return -1, nil
	}
	return d, nil
}

// MuxDir is the user's mux folder: $XDG_RUNTIME_DIR/rlab, else
// ~/.cache/rlab/mux.
func MuxDir() (string, error) {
	if x := os.Getenv("XDG_RUNTIME_DIR"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "rlab"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("mux folder: no XDG_RUNTIME_DIR and no home directory: %w", err)
	}
	return filepath.Join(home, ".cache", "rlab", "mux"), nil
}

// ensureMuxDir makes the folder (0700) when missing and checks it.
func ensureMuxDir(dir string) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return fmt.Errorf("create mux folder %s: %w", dir, err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("create mux folder %s: %w", dir, err)
	}
	return checkMuxDir(dir)
}

// checkMuxDir refuses a folder anyone but the user could have planted or
// could reach: a symlink, another owner, group or other permissions.
func checkMuxDir(dir string) error {
	st, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("mux folder %s: %w", dir, err)
	}
	if st.Mode()&os.ModeSymlink != 0 {
		return fmt.Errorf("mux folder %s is a symlink: refusing it (remove it; rlab makes a private folder there)", dir)
	}
	if !st.IsDir() {
		return fmt.Errorf("mux folder %s is not a directory: refusing it", dir)
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("mux folder %s: cannot read its owner", dir)
	}
	if int(sys.Uid) != os.Getuid() {
		return fmt.Errorf("mux folder %s is owned by uid %d, not by you (uid %d): refusing it", dir, sys.Uid, os.Getuid())
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("mux folder %s has mode %04o: refusing it, it must be private (chmod 700 %s)", dir, perm, dir)
	}
	if n := len(filepath.Join(dir, muxSock)); n >= 108 {
		return fmt.Errorf("mux folder %s: socket path is %d bytes, over the 107 a unix socket allows (set XDG_RUNTIME_DIR to a shorter folder)", dir, n)
	}
	return nil
}

// muxDialReq is what a caller asks the daemon for: the target and the
// options that decide how it is reached and verified.
type muxDialReq struct {
	V                 int
	Target            Target
	KnownHosts        []string
	LabKnownHosts     []string
	AcceptNew         bool
	SSHConfig         string
	AgentSocket       string
	DialTimeout       time.Duration
	HandshakeTimeout  time.Duration
	KeepaliveInterval time.Duration
	KeepaliveTimeout  time.Duration
	MaxHandshakes     int
	Retries           int
	Persist           time.Duration
}

// dialerKey names the Dialer these options need (one per set, so bastions
// are shared between the hosts of a run, as without the mux).
func (r *muxDialReq) dialerKey() string {
	o := *r
	o.Target, o.Persist = Target{}, 0
	return hashJSON(o)
}

// connKey names the upstream connection, as OpenSSH's %C does: the target
// as given (user, address, port, identities, jump chain) and the files
// that decide how it is verified. Timeouts and accept-new only matter to a
// new login; the agent socket changes with every terminal session.
func (r *muxDialReq) connKey() string {
	return hashJSON(struct {
		T Target
		K []string
		L []string
		C string
	}{r.Target, r.KnownHosts, r.LabKnownHosts, r.SSHConfig})
}

func hashJSON(v any) string {
	b, _ := json.Marshal(v)
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:16])
}

// muxDialReply is the daemon's answer to a dial that worked. ID names the
// host on this local connection: channels to it carry it (muxFwd).
type muxDialReply struct {
	ID               uint64
	Name, Addr, User string
	HostKey          []byte
	Reused           bool
}

// muxFwd opens a channel of type Type with extra data Data to the host
// dialed as ID.
type muxFwd struct {
	ID   uint64
	Type string
	Data []byte
}

// muxDialAnswer is the first line on a dial@rlab channel.
type muxDialAnswer struct {
	OK    bool
	Reply *muxDialReply   `json:",omitempty"`
	Error json.RawMessage `json:",omitempty"` // encodeMuxError
}

// muxError carries a dial error through the mux with its text unchanged
// and, for host key errors, enough to rebuild their types (errors.As works
// as without the mux).
type muxError struct {
	Text       string
	Mismatch   string `json:"Kind,omitempty"` // unknown, changed, revoked (the wire keeps its name)
	Host       string `json:",omitempty"`
	Addr       string `json:",omitempty"`
	KnownHosts string `json:",omitempty"`
	ViaJump    bool   `json:",omitempty"`
	Key        []byte `json:",omitempty"`
	Known      []muxKnownKey
}

type muxKnownKey struct {
	Key  []byte
	File string
	Line int
}

func encodeMuxError(err error) []byte {
	me := muxError{Text: err.Error()}
	var (
		uk *UnknownHostKeyError
		ck *ChangedHostKeyError
		rk *RevokedHostKeyError
	)
	switch {
	case errors.As(err, &uk):
		me.Mismatch, me.Host, me.Addr, me.KnownHosts, me.ViaJump, me.Key = "unknown", uk.Host, uk.Addr, uk.KnownHosts, uk.ViaJump, uk.Key.Marshal()
	case errors.As(err, &ck):
		me.Mismatch, me.Addr, me.Key = "changed", ck.Addr, ck.Key.Marshal()
		for _, k := range ck.Known {
			me.Known = append(me.Known, muxKnownKey{k.Key.Marshal(), k.Filename, k.Line})
		}
	case errors.As(err, &rk):
		me.Mismatch, me.Addr, me.Key = "revoked", rk.Addr, rk.Key.Marshal()
		me.Known = []muxKnownKey{{rk.At.Key.Marshal(), rk.At.Filename, rk.At.Line}}
	}
	b, _ := json.Marshal(me)
	return b
}

// relayedError is a dial error the daemon met: its text as the daemon
// wrote it, its cause when it could be rebuilt.
type relayedError struct {
	text  string
	cause error
}

func (e *relayedError) Error() string { return e.text }
func (e *relayedError) Unwrap() error { return e.cause }

func decodeMuxError(b []byte) error {
	var me muxError
	if err := json.Unmarshal(b, &me); err != nil || me.Text == "" {
		return fmt.Errorf("rlab mux: dial refused without a reason (%q)", b)
	}
	e := &relayedError{text: me.Text}
	key, kerr := ssh.ParsePublicKey(me.Key)
	if kerr != nil {
		return e
	}
	var known []knownhosts.KnownKey
	for _, k := range me.Known {
		if pk, err := ssh.ParsePublicKey(k.Key); err == nil {
			known = append(known, knownhosts.KnownKey{Key: pk, Filename: k.File, Line: k.Line})
		}
	}
	switch me.Mismatch {
	case "unknown":
		e.cause = &UnknownHostKeyError{Host: me.Host, Addr: me.Addr, Key: key, KnownHosts: me.KnownHosts, ViaJump: me.ViaJump}
	case "changed":
		e.cause = &ChangedHostKeyError{Addr: me.Addr, Key: key, Known: known}
	case "revoked":
		if len(known) == 1 {
			e.cause = &RevokedHostKeyError{Addr: me.Addr, Key: key, At: known[0]}
		}
	}
	return e
}

// muxDial gets the connection to t through the mux daemon, starting it
// when none runs.
func (d *Dialer) muxDial(ctx context.Context, t Target) (*Client, error) {
	dir := d.opts.MuxDir
	if dir == "" {
		var err error
		if dir, err = MuxDir(); err != nil {
			return nil, err
		}
	}
	if err := ensureMuxDir(dir); err != nil {
		return nil, err
	}
	req := muxDialReq{
		V: muxProto, Target: t, KnownHosts: d.opts.KnownHosts, LabKnownHosts: d.opts.LabKnownHosts, AcceptNew: d.opts.AcceptNewHostKeys,
		SSHConfig: d.opts.SSHConfig, AgentSocket: d.auth.agentSock,
		DialTimeout: d.opts.DialTimeout, HandshakeTimeout: d.opts.HandshakeTimeout,
		KeepaliveInterval: d.opts.KeepaliveInterval, KeepaliveTimeout: d.opts.KeepaliveTimeout,
		MaxHandshakes: d.opts.MaxHandshakes, Retries: d.opts.Retries, Persist: d.opts.Persist,
	}
	if req.AgentSocket == "" {
		req.AgentSocket = "none" // resolved here: the daemon's environment is not the caller's
	}
	if req.SSHConfig == "" {
		req.SSHConfig = ExpandHome("~/.ssh/config")
	}
	payload, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	var lastErr error
	// A daemon that was exiting as we connected drops the connection; a
	// new one is started and asked again.
	for attempt := 0; attempt < 3; attempt++ {
		link, err := d.muxLink(ctx, dir)
		if err != nil {
			return nil, err
		}
		dch, r, err := link.dial(ctx, payload)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			link.conn.Close()
			lastErr = err
			continue
		}
		if !r.OK {
			return nil, decodeMuxError(r.Error)
		}
		key, _ := ssh.ParsePublicKey(r.Reply.HostKey)
		d.log.Debug("ssh connection through rlab mux", "host", r.Reply.Name, "addr", r.Reply.Addr, "reused", r.Reply.Reused)
		v := link.view(r.Reply.ID, dch)
		cl := newClient(ssh.NewClient(v, v.chans, v.reqs), r.Reply.Name, r.Reply.Addr, r.Reply.User, nil, key)
		cl.Muxed = true
		return cl, nil
	}
	return nil, fmt.Errorf("rlab mux in %s: the daemon dropped the connection 3 times (see %s): %w", dir, filepath.Join(dir, muxLog), lastErr)
}

// muxLink is a Dialer's one connection to the mux daemon, shared by every
// host it dials through it: one local handshake per rlab process, not per
// host. Each dialed host is a view on it (muxView), its channels tagged
// with the host's ID.
type muxLink struct {
	conn ssh.Conn
	dead chan struct{}

	mu    sync.Mutex
	views map[uint64]*muxView
}

// muxLink returns the Dialer's live link to the daemon in dir, connecting
// (and starting the daemon) when there is none.
func (d *Dialer) muxLink(ctx context.Context, dir string) (*muxLink, error) {
	d.muxMu.Lock()
	defer d.muxMu.Unlock()
	if l := d.link; l != nil {
		select {
		case <-l.dead:
		default:
			return l, nil
		}
	}
	conn, chans, reqs, err := d.muxConnect(ctx, dir, true)
	if err != nil {
		return nil, err
	}
	l := &muxLink{conn: conn, dead: make(chan struct{}), views: map[uint64]*muxView{}}
	go ssh.DiscardRequests(reqs)
	go func() {
		for nc := range chans {
			nc.Reject(ssh.Prohibited, "rlab: no channels to the caller")
		}
	}()
	go func() {
		conn.Wait()
		close(l.dead)
		l.mu.Lock()
		vs := l.views
		l.views = map[uint64]*muxView{}
		l.mu.Unlock()
		for _, v := range vs {
			v.end()
		}
	}()
	d.link = l
	return l, nil
}

// dial asks the daemon for a host: a dial@rlab channel and the answer on
// it. Gives up when ctx ends (the channel closed: the daemon lets go).
func (l *muxLink) dial(ctx context.Context, payload []byte) (ssh.Channel, *muxDialAnswer, error) {
	ch, reqs, err := l.conn.OpenChannel(muxChanDial, payload)
	if err != nil {
		var oe *ssh.OpenChannelError
		if errors.As(err, &oe) && strings.Contains(oe.Message, "no host dialed on this connection") {
			// A daemon of mux protocol 1 (dials were requests).
			return nil, &muxDialAnswer{Error: encodeMuxError(fmt.Errorf("rlab mux: the running daemon speaks mux protocol 1, this rlab %d: stop it with `rlab mux stop`", muxProto))}, nil
		}
		return nil, nil, err
	}
	go ssh.DiscardRequests(reqs)
	stop := context.AfterFunc(ctx, func() { ch.Close() })
	line, err := bufio.NewReader(io.LimitReader(ch, 1<<20)).ReadBytes('\n')
	stop()
	if err != nil {
		ch.Close()
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		return nil, nil, fmt.Errorf("rlab mux: no answer to a dial: %w", err)
	}
	var a muxDialAnswer
	if err := json.Unmarshal(line, &a); err != nil || (a.OK && a.Reply == nil) {
		ch.Close()
		return nil, nil, fmt.Errorf("rlab mux: bad dial answer %q", truncateBytes(line, 200))
	}
	if !a.OK {
		ch.Close()
	}
	return ch, &a, nil
}

func truncateBytes(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

// view makes the ssh.Conn of one dialed host; dch is its dial channel,
// open while the host is in use.
func (l *muxLink) view(id uint64, dch ssh.Channel) *muxView {
	v := &muxView{link: l, id: id, dch: dch, done: make(chan struct{}), chans: make(chan ssh.NewChannel), reqs: make(chan *ssh.Request)}
	l.mu.Lock()
	l.views[id] = v
	l.mu.Unlock()
	// The daemon closes the dial channel when the host's connection ends.
	go func() {
		io.Copy(io.Discard, dch)
		v.end()
	}()
	select {
	case <-l.dead:
		v.end()
	default:
	}
	return v
}

// muxView is one dialed host on a muxLink: the ssh.Conn under that host's
// *ssh.Client. Its channels go to the daemon tagged with its ID; closing
// it closes them and tells the daemon.
type muxView struct {
	link  *muxLink
	id    uint64
	dch   ssh.Channel // the dial channel
	done  chan struct{}
	chans chan ssh.NewChannel // the host opens none to us
	reqs  chan *ssh.Request

	mu   sync.Mutex
	once sync.Once
	open []ssh.Channel
}

func (v *muxView) User() string          { return v.link.conn.User() }
func (v *muxView) SessionID() []byte     { return v.link.conn.SessionID() }
func (v *muxView) ClientVersion() []byte { return v.link.conn.ClientVersion() }
func (v *muxView) ServerVersion() []byte { return v.link.conn.ServerVersion() }
func (v *muxView) RemoteAddr() net.Addr  { return v.link.conn.RemoteAddr() }
func (v *muxView) LocalAddr() net.Addr   { return v.link.conn.LocalAddr() }

// SendRequest: global requests are not relayed to hosts (as before the
// link was shared: the daemon refused them).
func (v *muxView) SendRequest(name string, wantReply bool, payload []byte) (bool, []byte, error) {
	select {
	case <-v.done:
		return false, nil, io.EOF
	default:
	}
	return false, nil, nil
}

func (v *muxView) OpenChannel(name string, data []byte) (ssh.Channel, <-chan *ssh.Request, error) {
	select {
	case <-v.done:
		return nil, nil, io.EOF
	default:
	}
	b, err := json.Marshal(muxFwd{ID: v.id, Type: name, Data: data})
	if err != nil {
		return nil, nil, err
	}
	ch, reqs, err := v.link.conn.OpenChannel(muxChanFwd, b)
	if err != nil {
		return nil, nil, err
	}
	v.mu.Lock()
	select {
	case <-v.done:
		v.mu.Unlock()
		ch.Close()
		return nil, nil, io.EOF
	default:
	}
	// Forget closed channels now and then, so a long-lived view does not
	// grow without bound.
	if len(v.open) >= 64 {
		v.open = v.open[:0]
	}
	v.open = append(v.open, ch)
	v.mu.Unlock()
	return ch, reqs, nil
}

// Close ends the view: its channels close and the daemon lets the host go.
func (v *muxView) Close() error {
	v.end()
	return nil
}

func (v *muxView) end() {
	v.once.Do(func() {
		v.mu.Lock()
		close(v.done)
		open := v.open
		v.open = nil
		v.mu.Unlock()
		for _, ch := range open {
			ch.Close()
		}
		close(v.chans)
		close(v.reqs)
		v.link.mu.Lock()
		delete(v.link.views, v.id)
		v.link.mu.Unlock()
		v.dch.Close()
	})
}

func (v *muxView) Wait() error {
	<-v.done
	return nil
}

// sendRequestCtx is SendRequest that gives up (closing c) when ctx ends.
func sendRequestCtx(ctx context.Context, c *ssh.Client, name string, payload []byte) (bool, []byte, error) {
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	return c.SendRequest(name, true, payload)
}

// muxConnect opens an authenticated SSH connection to the daemon in dir,
// starting the daemon when spawn is set and none answers.
func (d *Dialer) muxConnect(ctx context.Context, dir string, spawn bool) (ssh.Conn, <-chan ssh.NewChannel, <-chan *ssh.Request, error) {
	conn, err := dialMuxSocket(dir)
	if err != nil && spawn {
		conn, err = d.spawnMux(ctx, dir)
	}
	if err != nil {
		return nil, nil, nil, err
	}
	return muxHandshake(ctx, conn, dir)
}

func dialMuxSocket(dir string) (*net.UnixConn, error) {
	if err := checkMuxDir(dir); err != nil {
		return nil, err
	}
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: filepath.Join(dir, muxSock), Net: "unix"})
	if err != nil {
		return nil, err
	}
	// The daemon must be ours too (the folder's modes make this so;
	// checked anyway).
	if uid, err := peerUID(c); err != nil || uid != os.Getuid() {
		c.Close()
		return nil, fmt.Errorf("rlab mux socket %s: its process is not yours (uid %d, %v): refusing it", filepath.Join(dir, muxSock), uid, err)
	}
	return c, nil
}

func muxHandshake(ctx context.Context, conn *net.UnixConn, dir string) (ssh.Conn, <-chan ssh.NewChannel, <-chan *ssh.Request, error) {
	// Read after connecting: the daemon writes both before it listens.
	pubText, err := os.ReadFile(filepath.Join(dir, muxHostKey))
	if err != nil {
		conn.Close()
		return nil, nil, nil, fmt.Errorf("rlab mux: read its host key: %w", err)
	}
	pub, _, _, _, err := ssh.ParseAuthorizedKey(pubText)
	if err != nil {
		conn.Close()
		return nil, nil, nil, fmt.Errorf("rlab mux: parse its host key %s: %w", filepath.Join(dir, muxHostKey), err)
	}
	token, err := os.ReadFile(filepath.Join(dir, muxToken))
	if err != nil {
		conn.Close()
		return nil, nil, nil, fmt.Errorf("rlab mux: read its token: %w", err)
	}
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	cc, chans, reqs, err := ssh.NewClientConn(conn, "rlab-mux", &ssh.ClientConfig{
		User:              muxUser,
		Auth:              []ssh.AuthMethod{ssh.Password(string(bytes.TrimSpace(token)))},
		HostKeyCallback:   ssh.FixedHostKey(pub),
		HostKeyAlgorithms: []string{pub.Type()},
		ClientVersion:     "SSH-2.0-rlab",
	})
	stop()
	if err != nil {
		conn.Close()
		if ctx.Err() != nil {
			return nil, nil, nil, ctx.Err()
		}
		return nil, nil, nil, fmt.Errorf("rlab mux in %s: handshake: %w", dir, err)
	}
	conn.SetDeadline(time.Time{})
	return cc, chans, reqs, nil
}

// spawnMux starts the daemon, once however many callers find none at the
// same time: under an exclusive lock, look again, then start it and wait
// until its socket answers.
func (d *Dialer) spawnMux(ctx context.Context, dir string) (*net.UnixConn, error) {
	lf, err := os.OpenFile(filepath.Join(dir, muxSpawnLock), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("start rlab mux: %w", err)
	}
	defer lf.Close()
	if err := flockCtx(ctx, lf, syscall.LOCK_EX); err != nil {
		return nil, fmt.Errorf("start rlab mux: lock %s: %w", lf.Name(), err)
	}
	defer syscall.Flock(int(lf.Fd()), syscall.LOCK_UN)
	if c, err := dialMuxSocket(dir); err == nil {
		return c, nil // another caller started it meanwhile
	}
	argv := d.opts.MuxCommand
	if len(argv) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("start rlab mux: find this executable: %w", err)
		}
		argv = []string{exe, "mux", "serve"}
	}
	argv = append(append([]string(nil), argv...), "--dir", dir, "--persist", d.opts.Persist.String())
	logf, err := os.OpenFile(filepath.Join(dir, muxLog), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("start rlab mux: %w", err)
	}
	start, _ := logf.Seek(0, 2)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = "/"
	cmd.Stderr = logf // early failures and panics; the daemon logs there itself after
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	logf.Close()
	if err != nil {
		return nil, fmt.Errorf("start rlab mux (%s): %w", argv[0], err)
	}
	d.log.Debug("started rlab mux", "pid", cmd.Process.Pid, "dir", dir, "persist", d.opts.Persist)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(15 * time.Second)
	for {
		if c, err := dialMuxSocket(dir); err == nil {
			return c, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case err := <-exited:
			return nil, fmt.Errorf("start rlab mux (%s): it exited (%v) before listening: %s", strings.Join(argv, " "), err, logTail(filepath.Join(dir, muxLog), start))
		case <-deadline:
			return nil, fmt.Errorf("start rlab mux (%s): not listening after 15s: %s", strings.Join(argv, " "), logTail(filepath.Join(dir, muxLog), start))
		case <-tick.C:
		}
	}
}

func logTail(path string, from int64) string {
	b, err := os.ReadFile(path)
	if err != nil || int64(len(b)) < from {
		return "(no log)"
	}
	b = bytes.TrimSpace(b[from:])
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	if len(b) == 0 {
		return "(nothing logged)"
	}
	return string(b)
}

// flockCtx takes a flock, giving up when ctx ends.
func flockCtx(ctx context.Context, f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// MuxStatus is what `rlab mux status` shows.
type MuxStatus struct {
	PID      int       `json:"pid"`
	Dir      string    `json:"dir"`
	Started  time.Time `json:"started"`
	Persist  string    `json:"persist"`
	Clients  int       `json:"clients"` // local connections open now
	Upstream []MuxConn `json:"connections"`
}

// MuxConn is one upstream connection the daemon holds.
type MuxConn struct {
	Name     string    `json:"name"`
	Addr     string    `json:"addr"`
	User     string    `json:"user"`
	Via      string    `json:"via,omitempty"`
	Users    int       `json:"users"`
	Kept     int       `json:"kept_sessions"` // e.g. agents kept running for reuse
	Since    time.Time `json:"since"`
	LastUsed time.Time `json:"last_used"`
}

// QueryMux asks the daemon in dir ("" MuxDir()) for its status; ErrNoMux
// when none runs.
func QueryMux(ctx context.Context, dir string) (*MuxStatus, error) {
	b, err := muxControl(ctx, dir, muxReqStat)
	if err != nil {
		return nil, err
	}
	var st MuxStatus
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("rlab mux status: %w", err)
	}
	return &st, nil
}

// StopMux tells the daemon in dir ("" MuxDir()) to close every connection
// and exit; ErrNoMux when none runs.
func StopMux(ctx context.Context, dir string) error {
	_, err := muxControl(ctx, dir, muxReqStop)
	return err
}

func muxControl(ctx context.Context, dir, req string) ([]byte, error) {
	if dir == "" {
		var err error
		if dir, err = MuxDir(); err != nil {
			return nil, err
		}
	}
	if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w (no folder %s)", ErrNoMux, dir)
	}
	conn, err := dialMuxSocket(dir)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ECONNREFUSED) {
		return nil, fmt.Errorf("%w (in %s)", ErrNoMux, dir)
	}
	if err != nil {
		return nil, err
	}
	cc, chans, reqs, err := muxHandshake(ctx, conn, dir)
	if err != nil {
		return nil, err
	}
	c := ssh.NewClient(cc, chans, reqs)
	defer c.Close()
	ok, b, err := sendRequestCtx(ctx, c, req, nil)
	if err != nil {
		return nil, fmt.Errorf("rlab mux in %s: %s: %w", dir, req, err)
	}
	if !ok {
		return nil, fmt.Errorf("rlab mux in %s: %s refused: %s", dir, req, b)
	}
	return b, nil
}
