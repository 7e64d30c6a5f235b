package vm

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// A network of three or more VMs is one L2 segment through a hub: a small
// learning switch rlab runs for the run, on a unix datagram socket in the
// run's socket folder. Each member's -netdev dgram binds its own socket and
// sends every frame to the hub's; the hub learns which member each source
// MAC lives behind and sends a frame to the one member its destination lives
// behind, or, for broadcast, multicast and destinations not learnt yet, to
// every other member. No root, no bridge, no tap; per run (the sockets live
// in the run's folder, so two labs never share a segment), and it stops with
// the run (a goroutine of the rlab process, as the VMs die with it too).
//
// Two VMs keep the direct pair of sockets (each sends to the other's): the
// soak of issue 13 measured that link, and it needs nothing running beside
// the VMs.

// maxFrame bounds one frame: MTU 9000 plus the Ethernet header and a VLAN
// tag, with room to spare for QEMU's largest datagram (64 KiB for GSO-less
// virtio frames). A longer datagram is dropped, never cut.
const maxFrame = 65536

// Hub is a running learning switch.
type Hub struct {
	conn    *net.UnixConn
	path    string
	members []*net.UnixAddr // the members' bound sockets, in machine order
	log     *slog.Logger

	mu    sync.Mutex
	table map[[6]byte]int // source MAC -> member index

	ports      []chan []byte // per member: the frames waiting for it
	stuck      []bool        // per member: its port stayed full (serve's own)
	patience   time.Duration // sendPatience when started
	portsDone  sync.WaitGroup
	closePorts sync.Once

	forwarded, flooded, dropped, jammed atomic.Int64
	done                                chan struct{}
}

// StartHub binds the hub's socket at path and forwards frames between the
// members, the paths their -netdev dgram binds. A member whose socket does
// not exist yet, or no longer (a VM not booted, or stopped), loses the
// frames meant for it, as an unplugged port does; the others go on.
func StartHub(path string, members []string, log *slog.Logger) (*Hub, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	_ = os.Remove(path)
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return nil, fmt.Errorf("start hub %s: %w", path, err)
	}
	h := &Hub{conn: conn, path: path, log: log, table: map[[6]byte]int{}, done: make(chan struct{}), patience: sendPatience}
	for _, m := range members {
		h.members = append(h.members, &net.UnixAddr{Name: m, Net: "unixgram"})
		h.ports = append(h.ports, make(chan []byte, portQueue))
		h.stuck = append(h.stuck, false)
	}
	for i := range h.ports {
		h.portsDone.Add(1)
		go h.port(i)
	}
	go h.serve()
	return h, nil
}

// member returns the index of the member a datagram came from, or -1 (an
// unbound sender, or a socket that is not a member: ignored).
func (h *Hub) member(from *net.UnixAddr) int {
	if from == nil {
		return -1
	}
	for i, m := range h.members {
		if m.Name == from.Name {
			return i
		}
	}
	return -1
}

func (h *Hub) serve() {
	defer close(h.done)
	buf := make([]byte, maxFrame+1)
	for {
		n, from, err := h.conn.ReadFromUnix(buf)
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				h.log.Warn("hub stopped", "hub", h.path, "err", err)
			}
			return
		}
		src := h.member(from)
		if src < 0 || n < 14 || n > maxFrame {
			h.dropped.Add(1)
			continue
		}
		frame := buf[:n]
		var dst, smac [6]byte
		copy(dst[:], frame[0:6])
		copy(smac[:], frame[6:12])
		h.mu.Lock()
		if smac[0]&1 == 0 { // a multicast source is bogus: never learnt
			h.table[smac] = src
		}
		to, known := h.table[dst]
		h.mu.Unlock()
		if dst[0]&1 == 0 && known {
			if to != src {
				h.enqueue(frame, to)
				h.forwarded.Add(1)
			}
			continue
		}
		for i := range h.members {
			if i != src {
				h.enqueue(frame, i)
			}
		}
		h.flooded.Add(1)
	}
}

// enqueue hands a copy of frame to member to's port. A full port holds the
// switch up to sendPatience: the hub stops reading, its socket fills, and
// the senders' QEMUs hold their guests' frames, as a direct pair holds them
// for a slow peer (Soft-RoCE sends up to a QP's whole window at once and
// does not take loss well). A port that stays full that long is stuck (a
// stopped VM): it loses frames at once until it takes one again, so the
// rest of the segment goes on.
func (h *Hub) enqueue(frame []byte, to int) {
	f := append([]byte(nil), frame...)
	select {
	case h.ports[to] <- f:
		h.stuck[to] = false
		return
	default:
	}
	if !h.stuck[to] {
		t := time.NewTimer(h.patience)
		defer t.Stop()
		select {
		case h.ports[to] <- f:
			return
		case <-t.C:
			h.stuck[to] = true
		}
	}
	h.jammed.Add(1)
	h.dropped.Add(1)
}

// port writes one member's frames in order. Soft-RoCE does not take loss
// well (a lost packet of a multi-packet WRITE can end the QP with a remote
// invalid request error, seen in a ring run), so a member whose socket queue
// is full is waited for, as QEMU's own dgram pair waits for its peer, while
// the other ports go on; only a member that is gone (nobody bound to its
// socket) or has not taken a frame for sendPatience loses it.
func (h *Hub) port(to int) {
	defer h.portsDone.Done()
	for frame := range h.ports[to] {
		h.send(frame, to)
	}
}

// send writes one frame to a member. A member whose socket queue is full (a
// unix datagram socket queues net.unix.max_dgram_qlen frames, 10 by default)
// is tried again for up to sendPatience; then, or at once when the member is
// gone (no socket, nobody bound), the frame is dropped.
func (h *Hub) send(frame []byte, to int) {
	sa := &syscall.SockaddrUnix{Name: h.members[to].Name}
	rc, err := h.conn.SyscallConn()
	if err != nil {
		h.dropped.Add(1)
		return
	}
	deadline := time.Now().Add(h.patience)
	for {
		var serr error
		if err := rc.Write(func(fd uintptr) bool {
			serr = syscall.Sendto(int(fd), frame, syscall.MSG_DONTWAIT, sa)
			return true
		}); err != nil {
			serr = err
		}
		switch {
		case serr == nil:
			return
		case errors.Is(serr, syscall.EAGAIN) && time.Now().Before(deadline):
			time.Sleep(200 * time.Microsecond)
		case errors.Is(serr, syscall.EAGAIN):
			h.jammed.Add(1)
			h.dropped.Add(1)
			return
		default:
			h.dropped.Add(1)
			return
		}
	}
}

// sendPatience is how long a frame waits for a member's full socket queue
// or port: long enough for a TCG guest's QEMU that the host's CPUs left
// waiting. A variable for the tests.
var sendPatience = 5 * time.Second

// portQueue is how many frames wait for one member (at 9018 bytes, 9 MiB).
const portQueue = 1024

// Close stops the hub and removes its socket. It is idempotent.
func (h *Hub) Close() error {
	err := h.conn.Close()
	<-h.done
	h.closePorts.Do(func() {
		for _, p := range h.ports {
			close(p)
		}
	})
	h.portsDone.Wait()
	_ = os.Remove(h.path)
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// Counts are the hub's frames so far: sent to one learnt member, flooded,
// dropped (from a non-member, too short or too long, or not delivered).
func (h *Hub) Counts() (forwarded, flooded, dropped int64) {
	return h.forwarded.Load(), h.flooded.Load(), h.dropped.Load()
}

// HubStats is what a hub did, written beside the VMs at the end of a run
// (vm/net-NAME.switch.json) so a slow ring can be told from a lossy switch.
type HubStats struct {
	Network   string `json:"network"`
	Members   int    `json:"members"`
	Forwarded int64  `json:"forwarded"` // frames sent to the one member their destination was learnt behind
	Flooded   int64  `json:"flooded"`   // broadcast, multicast and not-yet-learnt frames sent to every other member
	Dropped   int64  `json:"dropped"`   // frames (or copies) not delivered, jammed ones included
	Jammed    int64  `json:"jammed"`    // copies dropped because a member's port stayed full (a stuck member)
}

// Stats returns the hub's counts.
func (h *Hub) Stats(network string) HubStats {
	return HubStats{Network: network, Members: len(h.members), Forwarded: h.forwarded.Load(), Flooded: h.flooded.Load(), Dropped: h.dropped.Load(), Jammed: h.jammed.Load()}
}
