package run

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc"
	"github.com/rlab-dev/rlab/steps"
)

// The data link check. A workload between two hosts depends on the link
// between their data addresses; when that link dies (a VM link that stops
// passing frames, a cable pulled) the tools only hang until their timeout
// and every later workload of the pair hangs again. So while a two-sided
// workload runs, and once after any workload fails, the client's agent opens
// a TCP connection to the server's agent on the server's data address (the
// agents' tcp.serve / tcp.send with 0 bytes: pure Go, no shell). When it
// fails twice in a row the workload is stopped, the link is named as down
// (infrastructure, exit 2) and the pair's later workloads are skipped with
// that reason.

// dataLink is the link a two-sided workload uses.
type dataLink struct {
	server, client string // host names
	netdev         string // the server's netdev holding addr ("" unknown)
	addr           string // the server's data address
	port           int    // a port of the workload's block none of its runs uses; 0 any
}

func (l dataLink) String() string {
	s := fmt.Sprintf("data link %s ↔ %s", l.server, l.client)
	if l.netdev != "" {
		return s + " on " + l.netdev
	}
	return s + " to " + l.addr
}

// key names the host pair, in either order.
func (l dataLink) key() string {
	a, b := l.server, l.client
	if b < a {
		a, b = b, a
	}
	return a + "\x00" + b
}

// linkDownError is a data link found down.
type linkDownError struct {
	link dataLink
	err  error
}

func (e *linkDownError) Error() string { return e.link.String() + " down: " + e.err.Error() }
func (e *linkDownError) Unwrap() error { return e.err }

const (
	linkProbeEvery   = 3 * time.Second
	linkProbeTimeout = 4 * time.Second
	linkProbeMisses  = 2 // failures in a row before the link is called down
	// linkCallSlack is how long an agent call of the probe may take beyond
	// the probe's own deadline: agents in busy TCG guests answer in
	// seconds.
	linkCallSlack = 15 * time.Second
)

var linkProbes atomic.Int64 // unique agent handles

// linkOf returns the data link a workload depends on, if it has one: two
// different hosts, and the server's data address known (its rxe's IPv4 for
// RDMA tools, the address the tcp client dials otherwise).
func (r *runner) linkOf(n *workloadNode) (dataLink, bool) {
	w := n.spec
	if w.ServerHost == "" || w.ClientHost == "" || w.ServerHost == w.ClientHost {
		return dataLink{}, false
	}
	// A port of the workload's block none of its trials takes (the
	// plan's): open where the workload's ports are; 0, an ephemeral one.
	l := dataLink{server: w.ServerHost, client: w.ClientHost, port: n.ProbePort}
	if x := cmp.Or(w.ServerDevice, w.DialDevice); x != "" { // a tcp workload's DialDevice: the link it dials
		info, err := r.env.Device(x)
		if err != nil || info.IPv4 == "" {
			return dataLink{}, false
		}
		l.addr, l.netdev = info.IPv4, info.Netdev
		return l, true
	}
	if w.Tool != "tcp" || w.ServerAddr == "" {
		return dataLink{}, false
	}
	ip, err := netip.ParseAddr(w.ServerAddr)
	if err != nil {
		return dataLink{}, false // a name: which link it takes is not ours to know
	}
	l.addr = ip.String()
	if f := r.env.Facts[w.ServerHost]; f != nil {
		for _, nd := range f.Netdevs {
			for _, a := range nd.Addrs {
				if p, err := netip.ParsePrefix(a); err == nil && p.Addr() == ip {
					l.netdev = nd.Name
				}
			}
		}
	}
	return l, true
}

// probeLink checks once that the client reaches the server over l. Only
// the client's agent saying it could not connect counts (the link:
// linkMiss). The server not being able to listen (the port taken by the
// workload itself) or an agent slow to answer on a loaded host does not:
// that is not a verdict on the link (a mute agent is the heartbeat's
// business).
func (r *runner) probeLink(ctx context.Context, l dataLink) error {
	r.mu.Lock()
	srv, cli := r.conns[l.server], r.conns[l.client]
	r.mu.Unlock()
	if srv == nil || cli == nil {
		return nil
	}
	hd := fmt.Sprintf("link.%d", linkProbes.Add(1))
	serve := func(port int) (proto.TCPServing, error) {
		sctx, cancel := context.WithTimeout(ctx, linkCallSlack)
		defer cancel()
		return rpc.Invoke(sctx, srv, rpc.TCPServe, proto.TCPServeParams{Handle: hd, Addr: l.addr, Port: port})
	}
	serving, err := serve(l.port)
	if err != nil {
		if serving, err = serve(0); err != nil {
			if ctx.Err() != nil {
				return nil // the workload ended while the probe started: no warning
			}
			r.log.Warn("data link check: cannot listen", "host", l.server, "addr", l.addr, "err", err)
			return nil
		}
	}
	sctx, cancel := context.WithTimeout(ctx, linkProbeTimeout+linkCallSlack)
	_, sendErr := rpc.Invoke(sctx, cli, rpc.TCPSend, proto.TCPSendParams{Handle: hd, Addr: l.addr, Port: serving.Port, TimeoutMs: int(linkProbeTimeout / time.Millisecond)})
	cancel()
	wctx, wcancel := context.WithTimeout(context.WithoutCancel(ctx), linkProbeTimeout+linkCallSlack)
	defer wcancel()
	if sendErr == nil {
		_, _ = rpc.Invoke(wctx, srv, rpc.TCPWait, proto.TCPWaitParams{Handle: hd, TimeoutMs: int(linkProbeTimeout / time.Millisecond)})
	} else {
		// Close the listener now: left open on the workload's port it
		// would take that port from a later run of the workload.
		_, _ = rpc.Invoke(wctx, srv, rpc.ProcStop, proto.ProcStopParams{Handle: hd})
	}
	if linkMiss(sendErr) {
		return fmt.Errorf("host %q cannot reach %s:%d on host %q: %s", l.client, l.addr, serving.Port, l.server, plainText(firstLineOf(sendErr.Error())))
	}
	if sendErr != nil && ctx.Err() == nil { // ended with its workload: not worth a warning
		r.log.Warn("data link check: no verdict", "host", l.client, "addr", l.addr, "err", sendErr)
	}
	return nil
}

// linkMiss tells whether the client agent's answer to a probe's tcp.send
// is a verdict on the link: it could not connect (refused, unreachable, or
// no answer to its SYN within the probe's deadline). A connection made
// whose 8-byte count comes back late is not: the SYN and SYN-ACK crossed
// the link, and a server agent in a TCG guest under load (19 on two cores)
// answers in seconds; a link that dies after the connect fails the next
// probe's connect.
func linkMiss(sendErr error) bool {
	var pe *proto.Error
	if !errors.As(sendErr, &pe) || (pe.Code != proto.CodeCommand && pe.Code != proto.CodeTimeout) {
		return false
	}
	return strings.Contains(pe.Message, ": connect to ")
}

// linkDown returns why the link of n's pair is known down ("" when not).
func (r *runner) linkDown(n *workloadNode) string {
	l, ok := r.linkOf(n)
	if !ok {
		return ""
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.downLinks[l.key()]; err != nil {
		return err.Error() + " (an earlier workload found it)"
	}
	return ""
}

// markLinkDown records a dead link once: infrastructure, and a notice now.
func (r *runner) markLinkDown(err *linkDownError) {
	r.mu.Lock()
	if r.downLinks == nil {
		r.downLinks = map[string]error{}
	}
	_, seen := r.downLinks[err.link.key()]
	if !seen {
		r.downLinks[err.link.key()] = err
	}
	r.mu.Unlock()
	if !seen {
		r.addErr(&infraError{err})
		r.emit(Event{Type: EventNotice, Message: err.Error()})
	}
}

// watchLink probes l while a workload runs and cancels it, with the link
// error as the cause, after linkProbeMisses failures in a row.
func (r *runner) watchLink(ctx context.Context, stop context.CancelCauseFunc, l dataLink) {
	misses := 0
	t := time.NewTicker(linkProbeEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := r.probeLink(ctx, l)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			misses = 0
			continue
		}
		if misses++; misses >= linkProbeMisses {
			lerr := &linkDownError{link: l, err: err}
			r.markLinkDown(lerr)
			stop(lerr)
			return
		}
	}
}

// linkAfterPauses are the pauses between the probes of a failed
// workload's link: a probe, then one after each pause. A link called down
// there skips every later workload of the pair, so it takes three misses
// over some 20 s: a guest that a failed tool left busy for a few seconds
// under TCG is not a dead link.
var linkAfterPauses = []time.Duration{time.Second, 3 * time.Second}

// checkLinkAfter probes the link of a failed workload, again after each of
// linkAfterPauses, and marks it down when every probe fails: a workload that
// failed because the link died is then told apart from one that failed on
// its own.
func (r *runner) checkLinkAfter(ctx context.Context, n *workloadNode) {
	l, ok := r.linkOf(n)
	if !ok || r.linkDown(n) != "" {
		return
	}
	for _, h := range n.Hosts {
		if r.hostGone(h.Name) {
			return // the host is gone, not the link: nothing to probe
		}
	}
	var err error
	for i := 0; i <= len(linkAfterPauses); i++ {
		if i > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(linkAfterPauses[i-1]):
			}
		}
		if err = r.probeLink(ctx, l); err == nil || ctx.Err() != nil {
			return
		}
	}
	r.markLinkDown(&linkDownError{link: l, err: err})
}

// plainText escapes control characters of text that came from a host (the
// agent's error), since the link error is printed to the terminal as is.
func plainText(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return '?'
		}
		return r
	}, s)
}

// hostGone says whether host's agent is lost: marked so, or its session
// ended under a call that did not go through it (runPair's peer watch).
func (r *runner) hostGone(host string) bool {
	r.mu.Lock()
	h, lost := r.conns[host], r.lost[host] != nil
	r.mu.Unlock()
	c, ok := h.(steps.Lossy)
	if lost || !ok {
		return lost
	}
	select {
	case <-c.Lost():
		r.markLost(host, c.LostErr())
		return true
	default:
		return false
	}
}
