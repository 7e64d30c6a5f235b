package vm

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// hubMember is one end on a hub, as a VM's -netdev dgram is: a bound unix
// datagram socket that sends to the hub's.
type hubMember struct {
	t    *testing.T
	conn *net.UnixConn
	hub  *net.UnixAddr
	mac  [6]byte
}

func newHubBed(t *testing.T, n int) (*Hub, []*hubMember) {
	t.Helper()
	dir, err := os.MkdirTemp("", "rlab-hub-") // short: sun_path is 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	var paths []string
	for i := range n {
		paths = append(paths, filepath.Join(dir, "m"+string(rune('0'+i))+".sock"))
	}
	hubPath := filepath.Join(dir, "hub.sock")
	h, err := StartHub(hubPath, paths, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	var ms []*hubMember
	for i, p := range paths {
		c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: p, Net: "unixgram"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		ms = append(ms, &hubMember{t: t, conn: c, hub: &net.UnixAddr{Name: hubPath, Net: "unixgram"}, mac: [6]byte{0x52, 0x54, 0, 0x11, 0, byte(i)}})
	}
	return h, ms
}

var broadcast = [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// frame is an Ethernet frame to dst from m with a payload of size bytes
// (a marker first, so each frame is told apart).
func (m *hubMember) frame(dst [6]byte, marker string, size int) []byte {
	f := append(append(append([]byte{}, dst[:]...), m.mac[:]...), 0x08, 0x00)
	p := make([]byte, size)
	copy(p, marker)
	return append(f, p...)
}

func (m *hubMember) send(f []byte) {
	m.t.Helper()
	if _, err := m.conn.WriteToUnix(f, m.hub); err != nil {
		m.t.Fatalf("send to hub: %v", err)
	}
}

// recv returns the next frame m gets. The deadline only keeps a broken
// hub from hanging the test; what is asserted is which frame arrives.
func (m *hubMember) recv() []byte {
	m.t.Helper()
	m.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, maxFrame)
	n, _, err := m.conn.ReadFromUnix(buf)
	if err != nil {
		m.t.Fatalf("member %x: no frame: %v", m.mac[5], err)
	}
	return buf[:n]
}

func marker(f []byte) string {
	p := f[14:]
	if i := bytes.IndexByte(p, 0); i >= 0 {
		p = p[:i]
	}
	return string(p)
}

// TestHub: broadcast and unknown unicast reach every other member; a learnt
// unicast reaches only its member (the next frame the others get is the
// broadcast sent after it); a 9018-byte frame (MTU 9000 with a VLAN tag)
// passes whole; a member that died loses its frames while the others go on;
// a sender that is not a member is ignored.
func TestHub(t *testing.T) {
	h, m := newHubBed(t, 3)
	a, b, c := m[0], m[1], m[2]

	a.send(a.frame(broadcast, "arp from a", 46))
	for _, x := range []*hubMember{b, c} {
		if got := marker(x.recv()); got != "arp from a" {
			t.Errorf("member %d got %q, want the broadcast", x.mac[5], got)
		}
	}
	// b is not learnt yet: a's unicast to it floods.
	a.send(a.frame(b.mac, "to b unknown", 46))
	for _, x := range []*hubMember{b, c} {
		if got := marker(x.recv()); got != "to b unknown" {
			t.Errorf("member %d got %q, want the flooded unicast", x.mac[5], got)
		}
	}
	// b answers: now both are learnt.
	b.send(b.frame(a.mac, "b to a", 46))
	if got := marker(a.recv()); got != "b to a" {
		t.Errorf("a got %q", got)
	}
	a.send(a.frame(b.mac, "to b learnt", 46))
	a.send(a.frame(broadcast, "after", 46))
	if got := marker(b.recv()); got != "to b learnt" {
		t.Errorf("b got %q, want the unicast", got)
	}
	if got := marker(c.recv()); got != "after" {
		t.Errorf("c got %q first, want the broadcast sent after the unicast to b (a learnt unicast goes to its member only)", got)
	}
	if got := marker(b.recv()); got != "after" {
		t.Errorf("b got %q", got)
	}

	// MTU 9000: 14-byte header + 4-byte VLAN tag + 9000.
	big := a.frame(b.mac, "jumbo", 9004)
	if len(big) != 9018 {
		t.Fatalf("frame of %d bytes", len(big))
	}
	a.send(big)
	if got := b.recv(); !bytes.Equal(got, big) {
		t.Errorf("jumbo frame: got %d bytes, want the 9018 sent, unchanged", len(got))
	}

	// c dies: its socket closes and goes away.
	c.conn.Close()
	os.Remove(h.members[2].Name)
	_, _, dropped := h.Counts()
	a.send(a.frame(broadcast, "c is gone", 46))
	if got := marker(b.recv()); got != "c is gone" {
		t.Errorf("b got %q after c died", got)
	}
	a.send(a.frame(b.mac, "still", 46))
	if got := marker(b.recv()); got != "still" {
		t.Errorf("b got %q after c died", got)
	}
	// c's port drops on its own goroutine: wait for it (the guard only
	// keeps a broken hub from hanging the test).
	for guard := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		_, _, d := h.Counts()
		if d > dropped {
			break
		}
		if time.Now().After(guard) {
			t.Errorf("dropped %d frames before c died and %d after, want the broadcast to c dropped", dropped, d)
			break
		}
	}

	// A socket that is not a member is not heard.
	dir := filepath.Dir(h.path)
	stranger, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: filepath.Join(dir, "x.sock"), Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer stranger.Close()
	s := &hubMember{t: t, conn: stranger, hub: a.hub, mac: [6]byte{0x52, 0x54, 0, 0x11, 0, 9}}
	s.send(s.frame(broadcast, "stranger", 46))
	a.send(a.frame(b.mac, "marker", 46))
	if got := marker(b.recv()); got != "marker" {
		t.Errorf("b got %q: the hub forwarded a non-member's frame", got)
	}
}

// TestHubClose: Close stops the hub, removes its socket and is idempotent.
func TestHubClose(t *testing.T) {
	h, _ := newHubBed(t, 3)
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(h.path); !os.IsNotExist(err) {
		t.Errorf("hub socket still there: %v", err)
	}
	if err := h.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestHubStuckMember: a member that takes no frames (a stopped VM whose
// socket is still bound) holds the segment up once, then loses its frames:
// the others get every frame, in order (a slow reader is waited for, not
// dropped to), and the stuck member's are counted as jammed.
func TestHubStuckMember(t *testing.T) {
	old := sendPatience
	sendPatience = 200 * time.Millisecond
	defer func() { sendPatience = old }()
	h, m := newHubBed(t, 3)
	a, b := m[0], m[1] // m[2] never reads
	n := portQueue + 200
	sent := make(chan error, 1)
	go func() {
		for i := range n {
			if _, err := a.conn.WriteToUnix(a.frame(broadcast, fmt.Sprintf("f%d", i), 46), a.hub); err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()
	for i := range n {
		if got, want := marker(b.recv()), fmt.Sprintf("f%d", i); got != want {
			t.Fatalf("b got %q, want %q: a stuck member held up the others", got, want)
		}
	}
	if err := <-sent; err != nil {
		t.Fatalf("send to hub: %v", err)
	}
	if st := h.Stats("x"); st.Jammed == 0 {
		t.Errorf("stats %+v: want the stuck member's overflow counted as jammed", st)
	}
}
