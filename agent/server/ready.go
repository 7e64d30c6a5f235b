package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
)

const (
	defaultReadyTimeout = 10 * time.Second
	readyPoll           = 20 * time.Millisecond
)

// waitReady blocks until the process is ready by r, exits, or the readiness
// timeout passes. Readiness is observed (a listening socket, an rdma_cm id,
// output), never assumed after a sleep.
func (s *Server) waitReady(ctx context.Context, pr *proc, r *proto.Ready, re *regexp.Regexp) error {
	if r == nil || (r.TCPListen == 0 && r.RDMACMListen == 0 && re == nil) {
		return nil
	}
	timeout := defaultReadyTimeout
	if r.TimeoutMs > 0 {
		timeout = time.Duration(r.TimeoutMs) * time.Millisecond
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(readyPoll)
	defer tick.Stop()
	var what string
	var check func() bool
	cm := &cmWait{pid: pr.cmd.Process.Pid, port: r.RDMACMListen, iwarp: r.IWARP}
	defer func() {
		switch {
		case cm.waited > 0:
			s.log.Info("iwarp: rdma_cm id listened before its TCP socket; waited for the socket", "handle", pr.handle, "port", cm.port, "waited", cm.waited.Round(time.Millisecond), "ready", cm.done)
		case cm.done:
			s.log.Info("iwarp: rdma_cm id and its TCP socket listen", "handle", pr.handle, "port", cm.port)
		}
	}()
	switch {
	case r.TCPListen != 0 && r.RDMACMListen != 0:
		// Either: a program whose transport rlab does not know (its
		// own), ready once its port listens as TCP or as an RDMA-CM ID.
		what = fmt.Sprintf("a TCP or rdma_cm listener on port %d", r.TCPListen)
		rdmaPath, rerr := lookTool("rdma")
		check = func() bool {
			if tcpListening(pr.cmd.Process.Pid, r.TCPListen) {
				return true
			}
			if rerr != nil {
				return false
			}
			return cm.ready(ctx, rdmaPath)
		}
	case r.TCPListen != 0:
		what = fmt.Sprintf("a TCP listener on port %d", r.TCPListen)
		check = func() bool { return tcpListening(pr.cmd.Process.Pid, r.TCPListen) }
	case r.RDMACMListen != 0:
		rdmaPath, err := lookTool("rdma")
		if err != nil {
			return perr(proto.CodeUnsupported, "wait for %q to listen on rdma_cm port %d: %v (install iproute2)", pr.handle, r.RDMACMListen, err)
		}
		what = fmt.Sprintf("an rdma_cm listener on port %d", r.RDMACMListen)
		if r.IWARP {
			what += " with its iWARP TCP socket listening"
		}
		check = func() bool { return cm.ready(ctx, rdmaPath) }
	default:
		what = fmt.Sprintf("output matching %q", re.String())
		out, errf := pr.handle+".stdout", pr.handle+".stderr"
		check = func() bool {
			a, _ := pr.wd.readTail(out, proto.OutputLimit)
			b, _ := pr.wd.readTail(errf, proto.OutputLimit)
			return re.MatchString(a) || re.MatchString(b)
		}
	}
	for {
		if check() {
			return nil
		}
		select {
		case <-pr.done:
			if check() {
				// Ready and already finished (a fast server); the caller
				// learns the outcome from proc.wait.
				return nil
			}
			res := pr.result()
			return &proto.Error{
				Code:     proto.CodeCommand,
				Message:  fmt.Sprintf("start %q: exited with code %d before %s", pr.handle, res.ExitCode, what),
				Command:  pr.argv,
				ExitCode: res.ExitCode,
				Stderr:   tailString(res.Stderr, 4096),
			}
		case <-deadline.C:
			return perr(proto.CodeTimeout, "start %q: no %s after %s", pr.handle, what, timeout)
		case <-ctx.Done():
			return perr(proto.CodeInternal, "start %q: agent shutting down", pr.handle)
		case <-tick.C:
		}
	}
}

// cmWait is the readiness of an rdma_cm listener: its cm_id in LISTEN and,
// on iWARP, a TCP socket listening on the same port. siw's listener is a
// kernel TCP socket (drivers/infiniband/sw/siw/siw_cm.c, siw_create_listen)
// that has been seen to come up after `rdma res show cm_id` showed the id
// in LISTEN: a client connecting then (1.6 s later in CI) got "Connection
// refused" from rdma_cm.
type cmWait struct {
	pid, port int
	iwarp     bool
	seen      time.Time     // the cm_id first listened, its TCP socket not yet
	waited    time.Duration // from seen until ready (or until the wait ended)
	done      bool          // both listen
}

func (c *cmWait) ready(ctx context.Context, rdmaPath string) bool {
	out := runQuiet(ctx, rdmaPath, "-j", "res", "show", "cm_id")
	l, found := RDMACMListener([]byte(out), groupPIDs(c.pid), c.port)
	if !found {
		return false
	}
	if !c.iwarp {
		return true
	}
	// The socket is looked for in the netns of the process that holds the
	// cm_id (a wrapper such as `ip netns exec` or `unshare -n --fork` may
	// have forked it into another one than the leader's), on the cm_id's
	// own address or the wildcard.
	pid := c.pid
	if l.PID > 0 {
		pid = l.PID
	}
	ok := netnsTCPListening(pid, c.port, l.Addr)
	c.done = ok
	switch {
	case !ok && c.seen.IsZero():
		c.seen = time.Now()
	case !c.seen.IsZero():
		c.waited = time.Since(c.seen)
	}
	return ok
}

// netnsTCPListening reports whether a TCP socket (IPv4 or IPv6) in the
// network namespace of pid listens on port at addr (see TCPPortListening),
// whoever holds it: siw's is the kernel's.
func netnsTCPListening(pid, port int, addr netip.Addr) bool {
	for _, f := range []string{"tcp", "tcp6"} {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "net", f))
		if err == nil && TCPPortListening(b, port, addr) {
			return true
		}
	}
	return false
}

// TCPPortListening reports whether /proc/net/tcp{,6} text shows a socket
// in LISTEN on port, of any owner and inode (a kernel socket's may be 0),
// that a client of the rdma_cm listener at addr reaches: bound to the
// wildcard, or to addr itself; for a listener on the wildcard (addr
// unspecified or invalid), to any address but a loopback one (an unrelated
// 127.0.0.1:port listener is not siw's).
func TCPPortListening(procNetTCP []byte, port int, addr netip.Addr) bool {
	addr = addr.Unmap()
	for _, s := range ParseProcNetTCP(procNetTCP) {
		if s.State != tcpListen || s.LocalPort != port {
			continue
		}
		local := s.LocalAddr.Unmap()
		switch {
		case !local.IsValid() || local.IsUnspecified():
			return true
		case addr.IsValid() && !addr.IsUnspecified():
			if local == addr {
				return true
			}
		case !local.IsLoopback():
			return true
		}
	}
	return false
}

func tailString(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// groupPIDs lists the processes in the process group led by pgid (the
// started process and whatever it forked).
func groupPIDs(pgid int) map[int]bool {
	pids := map[int]bool{pgid: true}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return pids
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == pgid {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// The command name may hold spaces and parens: fields start after
		// the last ')'. Then: state ppid pgrp ...
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) >= 3 && f[2] == strconv.Itoa(pgid) {
			pids[pid] = true
		}
	}
	return pids
}

// socketInodes returns the inodes of the sockets the given processes hold.
func socketInodes(pids map[int]bool) map[uint64]bool {
	inodes := map[uint64]bool{}
	for pid := range pids {
		dir := filepath.Join("/proc", strconv.Itoa(pid), "fd")
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range ents {
			l, err := os.Readlink(filepath.Join(dir, e.Name()))
			if err != nil {
				continue
			}
			if rest, ok := strings.CutPrefix(l, "socket:["); ok {
				if n, err := strconv.ParseUint(strings.TrimSuffix(rest, "]"), 10, 64); err == nil {
					inodes[n] = true
				}
			}
		}
	}
	return inodes
}

// tcpListening reports whether a process of the group led by pid has a TCP
// socket in LISTEN on port (IPv4 or IPv6), as /proc/<pid>/net/tcp{,6} show.
func tcpListening(pid, port int) bool {
	inodes := socketInodes(groupPIDs(pid))
	if len(inodes) == 0 {
		return false
	}
	for _, f := range []string{"tcp", "tcp6"} {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "net", f))
		if err != nil {
			continue
		}
		for _, s := range ParseProcNetTCP(b) {
			if s.State == tcpListen && s.LocalPort == port && inodes[s.Inode] {
				return true
			}
		}
	}
	return false
}

const tcpListen = 0x0A

// TCPSocket is one line of /proc/net/tcp or tcp6.
type TCPSocket struct {
	LocalAddr netip.Addr // invalid when the field is not an address
	LocalPort int
	State     int
	Inode     uint64
}

// procNetAddr reads the address of a /proc/net/tcp{,6} line: 8 or 32 hex
// digits, each 32-bit word as the kernel prints it, in the host's byte
// order (little-endian on every platform rlab's agent is built for).
func procNetAddr(h string) netip.Addr {
	if len(h) != 8 && len(h) != 32 {
		return netip.Addr{}
	}
	var b [16]byte
	for w := 0; w < len(h)/8; w++ {
		v, err := strconv.ParseUint(h[w*8:w*8+8], 16, 32)
		if err != nil {
			return netip.Addr{}
		}
		b[w*4], b[w*4+1], b[w*4+2], b[w*4+3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
	}
	if len(h) == 8 {
		return netip.AddrFrom4([4]byte(b[:4]))
	}
	return netip.AddrFrom16(b)
}

// ParseProcNetTCP parses /proc/net/tcp{,6}; malformed lines are skipped.
func ParseProcNetTCP(b []byte) []TCPSocket {
	var out []TCPSocket
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 4096), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		// sl local rem st tx:rx tr:when retrnsmt uid timeout inode
		if len(f) < 10 || !strings.HasSuffix(f[0], ":") {
			continue
		}
		addrHex, portHex, ok := strings.Cut(f[1], ":")
		if !ok {
			continue
		}
		port, err := strconv.ParseUint(portHex, 16, 16)
		if err != nil {
			continue
		}
		st, err := strconv.ParseUint(f[3], 16, 8)
		if err != nil {
			continue
		}
		inode, err := strconv.ParseUint(f[9], 10, 64)
		if err != nil {
			continue
		}
		out = append(out, TCPSocket{LocalAddr: procNetAddr(addrHex), LocalPort: int(port), State: int(st), Inode: inode})
	}
	return out
}

// RDMACMListening reports whether `rdma -j res show cm_id` output shows an
// rdma_cm id in LISTEN on port owned by one of pids (any owner when the
// entry names none). iproute2 prints the address and port together
// ("src-addr": "0.0.0.0:7174"); a separate numeric "src-port" is accepted too.
func RDMACMListening(out []byte, pids map[int]bool, port int) bool {
	_, ok := RDMACMListener(out, pids, port)
	return ok
}

// CMListener is an rdma_cm id in LISTEN: the process that holds it (0 when
// the entry names none) and its source address (invalid when none).
type CMListener struct {
	PID  int
	Addr netip.Addr
}

// RDMACMListener is RDMACMListening, with the listener it found.
func RDMACMListener(out []byte, pids map[int]bool, port int) (CMListener, bool) {
	var ids []map[string]any
	if err := json.Unmarshal(bytes.TrimSpace(out), &ids); err != nil {
		return CMListener{}, false
	}
	for _, id := range ids {
		if state, _ := id["state"].(string); state != "LISTEN" {
			continue
		}
		if cmSrcPort(id) != port {
			continue
		}
		pid, _ := id["pid"].(float64)
		if pid != 0 && len(pids) > 0 && !pids[int(pid)] {
			continue
		}
		l := CMListener{Addr: cmSrcAddr(id)}
		if pid > 0 && pid < 1<<31 {
			l.PID = int(pid)
		}
		return l, true
	}
	return CMListener{}, false
}

// cmSrcAddr is the address of an id's "src-addr" ("10.99.0.1:7174",
// "[fe80::1]:7174", "0.0.0.0:7174"), invalid when it has none.
func cmSrcAddr(id map[string]any) netip.Addr {
	s, _ := id["src-addr"].(string)
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().WithZone("")
	}
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return netip.Addr{}
	}
	a, err := netip.ParseAddr(strings.Trim(s[:i], "[]"))
	if err != nil {
		return netip.Addr{}
	}
	return a.WithZone("")
}

func cmSrcPort(id map[string]any) int {
	if p, ok := id["src-port"].(float64); ok {
		return int(p)
	}
	addr, _ := id["src-addr"].(string)
	i := strings.LastIndexByte(addr, ':')
	if i < 0 {
		return -1
	}
	p, err := strconv.Atoi(addr[i+1:])
	if err != nil {
		return -1
	}
	return p
}
