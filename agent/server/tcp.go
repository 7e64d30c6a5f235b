package server

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rlab-dev/rlab/agent/proto"
)

// The built-in TCP workload: a bulk transfer of N bytes (or for a duration)
// over one connection,
// measured on both sides, so a lab can set RDMA beside plain TCP. The
// receiver answers with the byte count it got after the sender's FIN, which
// makes the sender's time cover delivery, not just its socket buffer.

const tcpChunk = 256 << 10

type tcpServer struct {
	handle string
	ln     net.Listener

	mu     sync.Mutex
	conn   net.Conn
	done   chan struct{}
	res    proto.TCPResult
	err    error
	closed bool
}

func (s *Server) tcpServe(ctx context.Context, c *call, params json.RawMessage) (any, error) {
	var p proto.TCPServeParams
	if err := decode(proto.MethodTCPServe, params, &p); err != nil {
		return nil, err
	}
	if err := validHandle(proto.MethodTCPServe, p.Handle); err != nil {
		return nil, err
	}
	if p.Port < 0 || p.Port > 65535 {
		return nil, perr(proto.CodeBadRequest, "tcp.serve %q: port %d out of range", p.Handle, p.Port)
	}
	if o := s.opts.Owner; o != nil && o.UID != 0 && os.Geteuid() == 0 && p.Port != 0 && p.Port < unprivilegedPortStart() {
		// A root agent working for a user listens only where the user
		// could: with the sudoers rule the user speaks to the agent, and
		// root's listener on 80 or 443 holds the port against the host's
		// own service.
		return nil, perr(proto.CodePermission, "tcp.serve %q: port %d is below %d (net.ipv4.ip_unprivileged_port_start): a root agent working for uid %d listens only where that user could", p.Handle, p.Port, unprivilegedPortStart(), o.UID)
	}
	s.mu.Lock()
	_, dup := s.tcps[p.Handle]
	s.mu.Unlock()
	if dup {
		return nil, perr(proto.CodeExists, "tcp.serve: handle %q already in use", p.Handle)
	}
	addr := net.JoinHostPort(p.Addr, strconv.Itoa(p.Port))
	var ln net.Listener
	err := s.asOwnerSocket("tcp.serve", func() (err error) {
		ln, err = net.Listen("tcp", addr)
		return err
	})
	if err != nil {
		return nil, perr(proto.CodeCommand, "tcp.serve %q: listen on %s: %v", p.Handle, addr, err)
	}
	t := &tcpServer{handle: p.Handle, ln: ln, done: make(chan struct{})}
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		ln.Close()
		return nil, errClosing(proto.MethodTCPServe)
	}
	if _, dup := s.tcps[p.Handle]; dup {
		s.mu.Unlock()
		ln.Close()
		return nil, perr(proto.CodeExists, "tcp.serve: handle %q already in use", p.Handle)
	}
	s.tcps[p.Handle] = t
	s.mu.Unlock()
	go t.run(s)
	port := ln.Addr().(*net.TCPAddr).Port
	s.log.Info("tcp serving", "handle", p.Handle, "port", port)
	return proto.TCPServing{Handle: p.Handle, Port: port}, nil
}

// run accepts one connection, closes the listener (nothing listens longer
// than the workload needs), and receives until the sender's FIN.
func (t *tcpServer) run(s *Server) {
	defer close(t.done)
	conn, err := t.ln.Accept()
	t.ln.Close()
	if err != nil {
		t.setErr(fmt.Errorf("accept: %w", err))
		return
	}
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		conn.Close()
		t.setErr(errors.New("stopped"))
		return
	}
	t.conn = conn
	t.mu.Unlock()
	defer conn.Close()
	buf := make([]byte, tcpChunk)
	var n int64
	var start time.Time
	for {
		m, err := conn.Read(buf)
		if m > 0 && n == 0 {
			start = time.Now()
		}
		n += int64(m)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.setErr(fmt.Errorf("receive after %d bytes: %w", n, err))
			return
		}
	}
	elapsed := time.Since(start)
	if n == 0 {
		elapsed = 0
	}
	var ack [8]byte
	binary.BigEndian.PutUint64(ack[:], uint64(n))
	if _, err := conn.Write(ack[:]); err != nil {
		s.log.Warn("tcp ack", "handle", t.handle, "err", err)
	}
	t.mu.Lock()
	t.res = tcpResult(t.handle, n, elapsed)
	t.mu.Unlock()
	s.log.Info("tcp received", "handle", t.handle, "bytes", n, "seconds", elapsed.Seconds())
}

func (t *tcpServer) setErr(err error) {
	t.mu.Lock()
	t.err = err
	t.mu.Unlock()
}

// close stops the listener and any transfer; it reports whether anything was
// still running.
func (t *tcpServer) close() bool {
	select {
	case <-t.done:
		return false
	default:
	}
	t.mu.Lock()
	t.closed = true
	if t.conn != nil {
		t.conn.Close()
	}
	t.mu.Unlock()
	t.ln.Close()
	<-t.done
	return true
}

func tcpResult(handle string, n int64, d time.Duration) proto.TCPResult {
	r := proto.TCPResult{Handle: handle, Bytes: n, Seconds: d.Seconds()}
	if d > 0 {
		r.MiBps = float64(n) / (1 << 20) / d.Seconds()
		r.Gbps = float64(n) * 8 / 1e9 / d.Seconds()
	}
	return r
}

func (s *Server) tcpWait(ctx context.Context, c *call, params json.RawMessage) (any, error) {
	var p proto.TCPWaitParams
	if err := decode(proto.MethodTCPWait, params, &p); err != nil {
		return nil, err
	}
	s.mu.Lock()
	t, ok := s.tcps[p.Handle]
	s.mu.Unlock()
	if !ok {
		return nil, perr(proto.CodeNotFound, "tcp.wait: no tcp.serve with handle %q", p.Handle)
	}
	var timeout <-chan time.Time
	if p.TimeoutMs > 0 {
		tm := time.NewTimer(time.Duration(p.TimeoutMs) * time.Millisecond)
		defer tm.Stop()
		timeout = tm.C
	}
	select {
	case <-t.done:
	case <-timeout:
		return nil, perr(proto.CodeTimeout, "tcp.wait %q: no complete transfer after %d ms", p.Handle, p.TimeoutMs)
	case <-ctx.Done():
		return nil, perr(proto.CodeInternal, "tcp.wait %q: agent shutting down", p.Handle)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err != nil {
		return nil, perr(proto.CodeCommand, "tcp.wait %q: %v", p.Handle, t.err)
	}
	return t.res, nil
}

// asOwnerSocket runs f, which makes a socket, with the owner's filesystem
// ids when a root agent works for a user: a socket is its maker's by its
// inode and its file's credentials (/proc/net/tcp's uid; iptables' owner
// match), so a firewall rule that filters by user holds for the user's
// transfers (attack round 15: tcp.send connected as uid 0). f makes the
// socket in this goroutine, on the thread asOwnerFS holds.
func (s *Server) asOwnerSocket(what string, f func() error) error {
	o := s.opts.Owner
	if o == nil || o.UID == 0 || os.Geteuid() != 0 {
		return f()
	}
	var ferr error
	if err := asOwnerFS(o, nil, what, func() error { ferr = f(); return nil }); err != nil {
		return err
	}
	return ferr
}

func (s *Server) tcpSend(ctx context.Context, c *call, params json.RawMessage) (any, error) {
	var p proto.TCPSendParams
	if err := decode(proto.MethodTCPSend, params, &p); err != nil {
		return nil, err
	}
	if p.Bytes < 0 || p.DurationMs < 0 || p.Port <= 0 || p.Port > 65535 || p.Addr == "" {
		return nil, perr(proto.CodeBadRequest, "tcp.send %q: want addr, port 1-65535, bytes >= 0 and duration_ms >= 0", p.Handle)
	}
	dur := time.Duration(p.DurationMs) * time.Millisecond
	addr := net.JoinHostPort(p.Addr, strconv.Itoa(p.Port))
	if p.TimeoutMs > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(p.TimeoutMs)*time.Millisecond)
		defer cancel()
	}
	// No parallel fallback dial (happy eyeballs), whose racers make their
	// sockets in goroutines of their own, outside asOwnerSocket's thread.
	d := net.Dialer{FallbackDelay: -1}
	var conn net.Conn
	err := s.asOwnerSocket("tcp.send", func() (err error) {
		conn, err = d.DialContext(ctx, "tcp", addr)
		return err
	})
	if err != nil {
		return nil, perr(proto.CodeCommand, "tcp.send %q: connect to %s: %v", p.Handle, addr, err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	buf := make([]byte, tcpChunk)
	start := time.Now()
	var sent int64
	// With a duration, the last write may block on a full socket buffer
	// past the end: a write deadline at the end cuts it short.
	if dur > 0 {
		_ = conn.SetWriteDeadline(start.Add(dur))
	}
	more := func() bool {
		if dur > 0 {
			return time.Since(start) < dur
		}
		return sent < p.Bytes
	}
	for more() {
		m := int64(len(buf))
		if dur == 0 {
			m = min(m, p.Bytes-sent)
		}
		w, err := conn.Write(buf[:m])
		sent += int64(w)
		if dur > 0 && errors.Is(err, os.ErrDeadlineExceeded) {
			break
		}
		if err != nil {
			return nil, s.sendErr(ctx, p, addr, fmt.Sprintf("send after %d bytes", sent), err)
		}
		if sent%(64*tcpChunk) == 0 {
			if dur > 0 {
				c.event(proto.EventProgress, map[string]int64{"done_ms": time.Since(start).Milliseconds(), "total_ms": p.DurationMs})
			} else if p.Bytes > 0 {
				c.event(proto.EventProgress, map[string]int64{"done": sent, "total": p.Bytes})
			}
		}
	}
	_ = conn.SetWriteDeadline(time.Time{})
	if err := conn.(*net.TCPConn).CloseWrite(); err != nil {
		return nil, s.sendErr(ctx, p, addr, "close write", err)
	}
	var ack [8]byte
	if _, err := io.ReadFull(conn, ack[:]); err != nil {
		return nil, s.sendErr(ctx, p, addr, "read receiver's count", err)
	}
	elapsed := time.Since(start)
	if got := int64(binary.BigEndian.Uint64(ack[:])); got != sent {
		return nil, perr(proto.CodeCommand, "tcp.send %q to %s: receiver got %d of %d bytes", p.Handle, addr, got, sent)
	}
	res := tcpResult(p.Handle, sent, elapsed)
	res.TotalRetrans = totalRetrans(conn.(*net.TCPConn))
	return res, nil
}

// totalRetrans is the connection's tcpi_total_retrans: every segment it
// sent again (after a loss, a timeout), what explains a slow transfer over
// a lossy link. Nil when TCP_INFO cannot be read.
func totalRetrans(c *net.TCPConn) *uint32 {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil
	}
	var info *unix.TCPInfo
	var ierr error
	if err := rc.Control(func(fd uintptr) {
		info, ierr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
	}); err != nil || ierr != nil {
		return nil
	}
	n := info.Total_retrans
	return &n
}

func (s *Server) sendErr(ctx context.Context, p proto.TCPSendParams, addr, what string, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return perr(proto.CodeTimeout, "tcp.send %q to %s: %s: timed out after %d ms", p.Handle, addr, what, p.TimeoutMs)
	}
	return perr(proto.CodeCommand, "tcp.send %q to %s: %s: %v", p.Handle, addr, what, err)
}

// unprivilegedPortStart is the lowest port a process without
// CAP_NET_BIND_SERVICE may listen on in the agent's network namespace
// (1024 when the kernel does not say).
func unprivilegedPortStart() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_unprivileged_port_start")
	if err != nil {
		return 1024
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n < 0 {
		return 1024
	}
	return n
}
