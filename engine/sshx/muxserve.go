package sshx

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/crypto/ssh"
)

// MuxServeOptions configure ServeMux.
type MuxServeOptions struct {
	Dir     string        // "" MuxDir()
	Persist time.Duration // exit after this long with nothing in use; default 60s
	// Log receives the daemon's log; nil: the bounded file "log" in Dir.
	Log *slog.Logger
	// Handlers serve channels of their type in the daemon itself instead
	// of relaying them to the host (engine/remote keeps agents alive this
	// way: remote.KeptAgentChannel).
	Handlers map[string]MuxChannelHandler

	uid   int           // peers allowed; tests set another to see refusals
	ready chan struct{} // closed once listening (tests)
}

// ServeMux runs the mux daemon (`rlab mux serve`) until it has been idle
// for Persist (no caller connected, so no upstream in use), StopMux is
// called, or ctx ends. Only one runs per folder: a second one waits for
// the first to exit.
func ServeMux(ctx context.Context, o MuxServeOptions) error {
	if o.Dir == "" {
		var err error
		if o.Dir, err = MuxDir(); err != nil {
			return err
		}
	}
	if o.Persist <= 0 {
		o.Persist = 60 * time.Second
	}
	if o.uid == 0 {
		o.uid = os.Getuid()
	}
	if err := ensureMuxDir(o.Dir); err != nil {
		return err
	}
	var logw *boundedLog
	if o.Log == nil {
		logw = &boundedLog{path: filepath.Join(o.Dir, muxLog), max: 1 << 20}
		defer logw.Close()
		o.Log = slog.New(slog.NewTextHandler(logw, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	lf, err := os.OpenFile(filepath.Join(o.Dir, muxServeLock), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("rlab mux: %w", err)
	}
	defer lf.Close()
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err = flockCtx(lctx, lf, syscall.LOCK_EX)
	cancel()
	if err != nil {
		return fmt.Errorf("rlab mux: another daemon holds %s: %w", lf.Name(), err)
	}
	m, err := newMuxServer(o)
	if err != nil {
		return err
	}
	return m.serve(ctx)
}

// MuxChannelHandler serves the channels of one type a caller opens on a
// mux connection, given the upstream connection they are for.
type MuxChannelHandler interface {
	ServeChannel(nc ssh.NewChannel, up *Client, log *slog.Logger)
	// Kept is how many sessions it holds on up while no caller uses them
	// (shown by `rlab mux status`).
	Kept(up *Client) int
}

type muxServer struct {
	o      MuxServeOptions
	log    *slog.Logger
	cfg    *ssh.ServerConfig
	ln     *net.UnixListener
	start  time.Time
	closed chan struct{}
	once   sync.Once

	mu       sync.Mutex
	persist  time.Duration
	dialers  map[string]*Dialer
	ups      map[string]*upstream
	locals   map[*ssh.ServerConn]bool
	dialing  int
	lastUsed time.Time
}

// upstream is one host connection the daemon holds for its callers.
type upstream struct {
	key      string
	done     chan struct{} // the dial ended
	c        *Client
	err      error
	users    int
	since    time.Time
	lastUsed time.Time
}

func newMuxServer(o MuxServeOptions) (*muxServer, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		return nil, err
	}
	tok := make([]byte, 32)
	if _, err := rand.Read(tok); err != nil {
		return nil, err
	}
	token := hex.EncodeToString(tok)
	// Both are written before the socket exists, so a caller that
	// connected reads this daemon's, never a predecessor's.
	if err := writeFileAtomic(filepath.Join(o.Dir, muxHostKey), ssh.MarshalAuthorizedKey(signer.PublicKey())); err != nil {
		return nil, err
	}
	if err := writeFileAtomic(filepath.Join(o.Dir, muxToken), []byte(token+"\n")); err != nil {
		return nil, err
	}
	cfg := &ssh.ServerConfig{
		PasswordCallback: func(c ssh.ConnMetadata, pass []byte) (*ssh.Permissions, error) {
			if c.User() == muxUser && subtle.ConstantTimeCompare(pass, []byte(token)) == 1 {
				return &ssh.Permissions{}, nil
			}
			return nil, errors.New("wrong token")
		},
		MaxAuthTries:  1,
		ServerVersion: "SSH-2.0-rlab-mux",
	}
	cfg.AddHostKey(signer)
	sock := filepath.Join(o.Dir, muxSock)
	os.Remove(sock) // a predecessor's, which held serve.lock until it exited
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("rlab mux: listen on %s: %w", sock, err)
	}
	os.Chmod(sock, 0o600)
	now := time.Now()
	return &muxServer{
		o: o, log: o.Log, cfg: cfg, ln: ln, start: now, closed: make(chan struct{}),
		persist: o.Persist, dialers: map[string]*Dialer{}, ups: map[string]*upstream{},
		locals: map[*ssh.ServerConn]bool{}, lastUsed: now,
	}, nil
}

func writeFileAtomic(path string, b []byte) error {
	tmp := path + ".tmp"
	os.Remove(tmp)
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("rlab mux: write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("rlab mux: write %s: %w", path, err)
	}
	return nil
}

func (m *muxServer) serve(ctx context.Context) error {
	m.log.Info("rlab mux started", "pid", os.Getpid(), "dir", m.o.Dir, "persist", m.persist)
	if m.o.ready != nil {
		close(m.o.ready)
	}
	go m.idleLoop(ctx)
	var wg sync.WaitGroup
	for {
		c, err := m.ln.AcceptUnix()
		if err != nil {
			select {
			case <-m.closed:
			default:
				m.log.Error("accept", "err", err)
				m.shutdown("accept failed")
			}
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.handle(c)
		}()
	}
	wg.Wait()
	m.mu.Lock()
	for _, u := range m.ups {
		<-u.done
		if u.c != nil {
			u.c.Close()
		}
	}
	for _, d := range m.dialers {
		d.Close()
	}
	m.mu.Unlock()
	os.Remove(filepath.Join(m.o.Dir, muxToken))
	os.Remove(filepath.Join(m.o.Dir, muxHostKey))
	m.log.Info("rlab mux stopped")
	return nil
}

// shutdown stops accepting and closes every caller's connection; serve
// then closes the upstream connections and returns.
func (m *muxServer) shutdown(why string) {
	m.once.Do(func() {
		m.log.Info("rlab mux stopping", "why", why)
		close(m.closed)
		m.ln.Close() // also removes the socket file
		m.mu.Lock()
		for sc := range m.locals {
			sc.Close()
		}
		m.mu.Unlock()
	})
}

func (m *muxServer) idleLoop(ctx context.Context) {
	for {
		m.mu.Lock()
		tick := min(max(m.persist/4, 10*time.Millisecond), time.Second)
		// In use: a host some caller holds, or a dial under way. A
		// caller's connection alone (an rlab process between hosts) is
		// not: it dials again, starting a daemon, if this one has gone.
		busy := m.dialing > 0
		for _, u := range m.ups {
			busy = busy || u.users > 0
		}
		idle := !busy && time.Since(m.lastUsed) >= m.persist
		m.mu.Unlock()
		if idle {
			m.shutdown("idle")
			return
		}
		select {
		case <-m.closed:
			return
		case <-ctx.Done():
			m.shutdown("stopped")
			return
		case <-time.After(tick):
		}
	}
}

func (m *muxServer) handle(c *net.UnixConn) {
	uid, err := peerUID(c)
	if err != nil || uid != m.o.uid {
		m.log.Warn("refused a local connection from another user", "uid", uid, "err", err)
		c.Close()
		return
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	sc, chans, reqs, err := ssh.NewServerConn(c, m.cfg)
	if err != nil {
		m.log.Warn("local handshake failed", "err", err)
		c.Close()
		return
	}
	c.SetDeadline(time.Time{})
	m.mu.Lock()
	select {
	case <-m.closed:
		m.mu.Unlock()
		sc.Close()
		return
	default:
	}
	m.locals[sc] = true
	m.lastUsed = time.Now()
	m.mu.Unlock()

	// The hosts this caller dialed, by the ID it tags their channels with.
	var (
		upMu   sync.Mutex // held across a dial: the end waits for it
		ups    = map[uint64]*upstream{}
		nextID uint64
		ended  bool
	)
	release := func(u *upstream) {
		m.mu.Lock()
		u.users--
		u.lastUsed = time.Now()
		m.lastUsed = u.lastUsed
		m.mu.Unlock()
	}
	defer func() {
		sc.Close()
		upMu.Lock()
		ended = true
		for _, u := range ups {
			release(u)
		}
		ups = nil
		upMu.Unlock()
		m.mu.Lock()
		delete(m.locals, sc)
		m.lastUsed = time.Now()
		m.mu.Unlock()
	}()
	go func() {
		for r := range reqs {
			switch r.Type {
			case "dial@rlab": // a caller of mux protocol 1 (dials were requests)
				r.Reply(false, encodeMuxError(fmt.Errorf("rlab mux: the running daemon speaks mux protocol %d, this rlab 1: stop it with `rlab mux stop`", muxProto)))
			case muxReqStat:
				b, _ := json.Marshal(m.status())
				r.Reply(true, b)
			case muxReqStop:
				r.Reply(true, nil)
				go m.shutdown("rlab mux stop")
			case "keepalive@openssh.com":
				r.Reply(true, nil)
			default:
				if r.WantReply {
					r.Reply(false, nil)
				}
			}
		}
	}()
	for nc := range chans {
		if nc.ChannelType() == muxChanDial {
			go func() {
				ch, creqs, err := nc.Accept()
				if err != nil {
					return
				}
				go ssh.DiscardRequests(creqs)
				defer ch.Close()
				u, reply, err := m.dial(nc.ExtraData())
				if err != nil {
					b, _ := json.Marshal(muxDialAnswer{Error: encodeMuxError(err)})
					ch.Write(append(b, '\n'))
					return
				}
				upMu.Lock()
				if ended { // the caller left while we dialed
					upMu.Unlock()
					release(u)
					return
				}
				nextID++
				id := nextID
				ups[id] = u
				upMu.Unlock()
				var dr muxDialReply
				json.Unmarshal(reply, &dr)
				dr.ID = id
				b, _ := json.Marshal(muxDialAnswer{OK: true, Reply: &dr})
				ch.Write(append(b, '\n'))
				// Open while the caller uses the host; a dead upstream
				// closes it, so the caller's sessions fail instead of
				// hanging.
				callerDone := make(chan struct{})
				go func() {
					io.Copy(io.Discard, ch)
					close(callerDone)
				}()
				select {
				case <-callerDone:
				case <-u.c.Gone():
				case <-m.closed:
				}
				upMu.Lock()
				_, mine := ups[id] // else the caller's end released it
				delete(ups, id)
				upMu.Unlock()
				if mine {
					release(u)
				}
			}()
			continue
		}
		if nc.ChannelType() != muxChanFwd {
			nc.Reject(ssh.Prohibited, fmt.Sprintf("rlab mux: channel type %q: open channels to a dialed host (%s, mux protocol %d)", nc.ChannelType(), muxChanFwd, muxProto))
			continue
		}
		var f muxFwd
		if err := json.Unmarshal(nc.ExtraData(), &f); err != nil || f.Type == "" {
			nc.Reject(ssh.Prohibited, "rlab mux: bad channel request")
			continue
		}
		upMu.Lock()
		u := ups[f.ID]
		upMu.Unlock()
		if u == nil {
			nc.Reject(ssh.Prohibited, "rlab mux: no such host dialed on this connection")
			continue
		}
		fc := &fwdChannel{NewChannel: nc, typ: f.Type, extra: f.Data}
		if h := m.o.Handlers[f.Type]; h != nil {
			go h.ServeChannel(fc, u.c, m.log)
			continue
		}
		go relayChannel(fc, u.c)
	}
}

// fwdChannel is a caller's channel to a dialed host: the type and extra
// data it asked for, not the muxFwd it came as.
type fwdChannel struct {
	ssh.NewChannel
	typ   string
	extra []byte
}

func (f *fwdChannel) ChannelType() string { return f.typ }
func (f *fwdChannel) ExtraData() []byte   { return f.extra }

// dial answers a dial@rlab request: the live connection for the same key,
// its host keys checked again against the caller's known_hosts, or a new
// one.
func (m *muxServer) dial(payload []byte) (*upstream, []byte, error) {
	var req muxDialReq
	if err := json.Unmarshal(payload, &req); err != nil {
		return nil, nil, fmt.Errorf("rlab mux: bad dial request: %w", err)
	}
	if req.V != muxProto {
		return nil, nil, fmt.Errorf("rlab mux: the running daemon speaks mux protocol %d, this rlab %d: stop it with `rlab mux stop`", muxProto, req.V)
	}
	key := req.connKey()
	m.mu.Lock()
	m.dialing++
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		m.dialing--
		m.lastUsed = time.Now()
		m.mu.Unlock()
	}()
	for attempt := 0; ; attempt++ {
		m.mu.Lock()
		if req.Persist > 0 {
			m.persist = req.Persist // the latest caller's --persist holds
		}
		u, ok := m.ups[key]
		if ok && u.dead() {
			delete(m.ups, key)
			ok = false
		}
		fresh := !ok
		if fresh {
			u = &upstream{key: key, done: make(chan struct{}), since: time.Now()}
			m.ups[key] = u
		}
		m.mu.Unlock()
		if fresh {
			d, err := m.dialer(&req)
			if err == nil {
				// Not bound to this caller: others may wait for it.
				ctx, cancel := context.WithTimeout(context.Background(), 2*(req.DialTimeout+req.HandshakeTimeout*time.Duration(req.Retries+1))+10*time.Second)
				u.c, err = d.Dial(ctx, req.Target)
				cancel()
			}
			if err == nil {
				// The host's key was just verified; its bastions' may have
				// been verified long ago by this long-lived Dialer.
				if err = recheck(u.c, &req); err != nil {
					u.c.Close()
					u.c = nil
				}
			}
			u.err = err
			close(u.done)
			if err != nil {
				m.mu.Lock()
				if m.ups[key] == u {
					delete(m.ups, key) // errors are not kept: the next run tries again
				}
				m.mu.Unlock()
				m.log.Info("dial failed", "host", req.Target.Name, "err", err)
				return nil, nil, err
			}
			m.log.Info("dialed", "host", u.c.Name, "addr", u.c.Addr, "user", u.c.User, "via", viaOf(u.c))
		} else {
			select {
			case <-u.done:
			case <-m.closed:
				return nil, nil, errors.New("rlab mux: stopping")
			}
			if u.err != nil {
				return nil, nil, u.err
			}
			if err := recheck(u.c, &req); err != nil {
				m.log.Warn("kept connection no longer trusted; closed", "host", u.c.Name, "addr", u.c.Addr, "err", err)
				m.mu.Lock()
				if m.ups[key] == u {
					delete(m.ups, key)
				}
				m.mu.Unlock()
				u.c.Close()
				return nil, nil, err
			}
		}
		m.mu.Lock()
		if u.dead() {
			// Died between the dial (or check) and now: once more.
			if m.ups[key] == u {
				delete(m.ups, key)
			}
			m.mu.Unlock()
			if attempt < 2 {
				continue
			}
			return nil, nil, fmt.Errorf("connect to %s@%s: connection lost as it was made", u.c.User, u.c.Addr)
		}
		u.users++
		u.lastUsed = time.Now()
		m.mu.Unlock()
		b, _ := json.Marshal(muxDialReply{Name: req.Target.Name, Addr: u.c.Addr, User: u.c.User, HostKey: u.c.HostKey.Marshal(), Reused: !fresh})
		return u, b, nil
	}
}

func (u *upstream) dead() bool {
	select {
	case <-u.done:
	default:
		return false
	}
	if u.c == nil {
		return true
	}
	select {
	case <-u.c.Gone():
		return true
	default:
		return false
	}
}

func viaOf(c *Client) string {
	var via []string
	for v := c.Via; v != nil; v = v.Via {
		via = append(via, v.User+"@"+v.Addr)
	}
	return strings.Join(via, ",")
}

// dialer returns the Dialer for the request's options, shared by every
// request with the same ones (so a bastion is logged in to once).
func (m *muxServer) dialer(req *muxDialReq) (*Dialer, error) {
	key := req.dialerKey()
	m.mu.Lock()
	defer m.mu.Unlock()
	if d := m.dialers[key]; d != nil {
		return d, nil
	}
	retries := req.Retries
	if retries == 0 {
		retries = -1 // the caller's Dialer had already turned "none" into 0
	}
	d, err := NewDialer(Options{
		KnownHosts: append([]string(nil), req.KnownHosts...), LabKnownHosts: append([]string(nil), req.LabKnownHosts...), AcceptNewHostKeys: req.AcceptNew,
		SSHConfig: req.SSHConfig, AgentSocket: req.AgentSocket,
		DialTimeout: req.DialTimeout, HandshakeTimeout: req.HandshakeTimeout,
		KeepaliveInterval: req.KeepaliveInterval, KeepaliveTimeout: req.KeepaliveTimeout,
		MaxHandshakes: req.MaxHandshakes, Retries: retries,
		Persist: -1, // this is the mux: dial for real
		Logger:  m.log,
	})
	if err != nil {
		return nil, err
	}
	m.dialers[key] = d
	return d, nil
}

// recheck verifies every hop of a kept connection against the caller's
// known_hosts as the files are now: a key removed, changed or revoked since
// the login fails as a new login would.
func recheck(c *Client, req *muxDialReq) error {
	hk, err := newHostKeys(append([]string(nil), req.KnownHosts...), append([]string(nil), req.LabKnownHosts...), req.AcceptNew)
	if err != nil {
		return err
	}
	var hops []*Client
	for h := c; h != nil; h = h.Via {
		hops = append(hops, h)
	}
	// Outermost bastion first, as a login would meet them.
	for i := len(hops) - 1; i >= 0; i-- {
		h := hops[i]
		if h.HostKey == nil {
			return fmt.Errorf("connect to %s@%s: kept connection has no recorded host key", h.User, h.Addr)
		}
		if err := hk.callback(h.Name, h.Via != nil)(h.Addr, fakeAddr{h.Addr}, h.HostKey); err != nil {
			err = fmt.Errorf("connect to %s@%s: %w", h.User, h.Addr, err)
			if h != c {
				err = fmt.Errorf("via jump host %s@%s: %w", h.User, h.Addr, err)
			}
			return err
		}
	}
	return nil
}

func (m *muxServer) status() MuxStatus {
	m.mu.Lock()
	defer m.mu.Unlock()
	// The connection asking is not counted.
	st := MuxStatus{PID: os.Getpid(), Dir: m.o.Dir, Started: m.start, Persist: m.persist.String(), Clients: max(len(m.locals)-1, 0)}
	for _, u := range m.ups {
		if u.c == nil || u.dead() {
			continue
		}
		mc := MuxConn{Name: u.c.Name, Addr: u.c.Addr, User: u.c.User, Via: viaOf(u.c), Users: u.users, Since: u.since, LastUsed: u.lastUsed}
		for _, h := range m.o.Handlers {
			mc.Kept += h.Kept(u.c)
		}
		st.Upstream = append(st.Upstream, mc)
	}
	return st
}

// relayChannel opens the same channel upstream and copies both ways: data,
// stderr, requests (exec, subsystem, signal, exit-status...), EOF and close.
func relayChannel(nc ssh.NewChannel, up *Client) {
	// An upstream that never answers the open is closed (wait.go): the
	// next caller gets a fresh connection.
	w := up.Watch(context.Background(), "open "+nc.ChannelType(), DefaultOpenTimeout)
	uch, ureqs, err := up.OpenChannel(nc.ChannelType(), nc.ExtraData())
	if werr := w.Stop(); werr != nil {
		if uch != nil {
			uch.Close()
		}
		err = werr
	}
	if err != nil {
		var oe *ssh.OpenChannelError
		if errors.As(err, &oe) {
			nc.Reject(oe.Reason, oe.Message)
		} else {
			nc.Reject(ssh.ConnectionFailed, err.Error())
		}
		return
	}
	lch, lreqs, err := nc.Accept()
	if err != nil {
		uch.Close()
		return
	}
	// Each way, EOF is passed on only once data and extended data (stderr)
	// are both through: nothing may follow an EOF.
	pipe := func(dst, src ssh.Channel) <-chan struct{} {
		done := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			io.Copy(dst, src)
		}()
		go func() {
			defer wg.Done()
			io.Copy(dst.Stderr(), src.Stderr())
		}()
		go func() {
			wg.Wait()
			dst.CloseWrite()
			close(done)
		}()
		return done
	}
	// Caller to host: stdin; requests in order; the caller's close closes
	// the host's side. A request's reply must reach the caller before the
	// close does (a fast command's exit and close can overtake its exec
	// reply).
	pipe(uch, lch)
	var replying sync.Mutex
	go func() {
		for r := range lreqs {
			replying.Lock()
			ok, err := uch.SendRequest(r.Type, r.WantReply, r.Payload)
			if r.WantReply {
				r.Reply(ok && err == nil, nil)
			}
			replying.Unlock()
		}
		uch.Close()
	}()
	// Host to caller: output, every request (exit-status comes before the
	// close), then close.
	out := pipe(lch, uch)
	forwardRequests(ureqs, lch)
	<-out
	replying.Lock()
	lch.Close()
	replying.Unlock()
}

func forwardRequests(in <-chan *ssh.Request, out ssh.Channel) {
	for r := range in {
		ok, err := out.SendRequest(r.Type, r.WantReply, r.Payload)
		if err != nil {
			ok = false
		}
		if r.WantReply {
			r.Reply(ok, nil)
		}
	}
}

// boundedLog is the daemon's log file: when it passes max bytes it moves
// to log.1 (replacing the previous one) and starts again, so the two never
// hold more than 2*max.
type boundedLog struct {
	path string
	max  int64

	mu   sync.Mutex
	f    *os.File
	size int64
}

func (b *boundedLog) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.f == nil || b.size+int64(len(p)) > b.max {
		if b.f != nil {
			b.f.Close()
			b.f = nil
			os.Rename(b.path, b.path+".1")
		}
		f, err := os.OpenFile(b.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return 0, err
		}
		st, err := f.Stat()
		if err != nil {
			f.Close()
			return 0, err
		}
		b.f, b.size = f, st.Size()
		if b.size+int64(len(p)) > b.max && b.size > 0 {
			b.f.Close()
			os.Rename(b.path, b.path+".1")
			if b.f, err = os.OpenFile(b.path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600); err != nil {
				b.f = nil
				return 0, err
			}
			b.size = 0
		}
	}
	n, err := b.f.Write(p)
	b.size += int64(n)
	return n, err
}

func (b *boundedLog) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.f == nil {
		return nil
	}
	err := b.f.Close()
	b.f = nil
	return err
}
