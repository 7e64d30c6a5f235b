package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"

	"github.com/rlab-dev/rlab/agent/proto"
)

func TestCaptureRefusesWithoutDiskSpace(t *testing.T) {
	c, _ := startAgent(t, Options{})
	e := c.call(proto.MethodCaptureStart, proto.CaptureStartParams{Handle: "big", Netdev: "lo", MaxBytes: 1 << 60}, nil)
	if e == nil || e.Code != proto.CodeNoSpace || !strings.Contains(e.Message, "need twice max_bytes") {
		t.Errorf("capture.start with max_bytes 1 EiB: %v, want %s", e, proto.CodeNoSpace)
	}
	e = c.call(proto.MethodCaptureStart, proto.CaptureStartParams{Handle: "x", Netdev: "nosuchdev0", MaxBytes: 1 << 20}, nil)
	if e == nil || e.Code != proto.CodeNotFound || !strings.Contains(e.Message, "have: ") {
		t.Errorf("capture on a missing netdev: %v", e)
	}
	e = c.call(proto.MethodCaptureStart, proto.CaptureStartParams{Handle: "x", Netdev: "lo", Filter: "tcp\x00port 1", MaxBytes: 1 << 20}, nil)
	if e == nil || e.Code != proto.CodeBadRequest {
		t.Errorf("capture with a NUL in the filter: %v", e)
	}
	e = c.call(proto.MethodCaptureStart, proto.CaptureStartParams{Handle: "x", Netdev: "lo", File: "../x.pcap", MaxBytes: 1 << 20}, nil)
	if e == nil || e.Code != proto.CodeBadRequest {
		t.Errorf("capture to ../x.pcap: %v", e)
	}
}

func TestCaptureRing(t *testing.T) {
	for _, tt := range []struct {
		max         int64
		cMB, nFiles int64
	}{
		{256 << 20, 67, 4}, {8_000_000, 2, 4}, {2_000_000, 1, 2}, {1000, 1, 1}, {5_500_000, 1, 4},
	} {
		c, n := captureRing(tt.max)
		if c != tt.cMB || n != tt.nFiles {
			t.Errorf("captureRing(%d) = -C %d -W %d, want -C %d -W %d", tt.max, c, n, tt.cMB, tt.nFiles)
		}
		if tt.max >= 1_000_000 && c*n*1_000_000 > tt.max {
			t.Errorf("captureRing(%d): ring %d bytes exceeds the bound", tt.max, c*n*1_000_000)
		}
	}
}

func TestValidNetdev(t *testing.T) {
	for name, ok := range map[string]bool{
		"eth0": true, "enp0s31f6": true, "veth-a.100": true, "any": true, "123456789012345": true,
		"": false, ".": false, "..": false, "a/b": false, "a b": false, "a:1": false, "eth0\n": false,
		"1234567890123456": false, "$(reboot)": true, // odd but a legal name; it is only ever an argv element
	} {
		if err := ValidNetdev(name); (err == nil) != ok {
			t.Errorf("ValidNetdev(%q) = %v, want ok=%v", name, err, ok)
		}
	}
}

// netnsPair creates a veth pair: one end in this namespace (10.231.N.1/30),
// the other in a new network namespace (10.231.N.2/30). Root only.
func netnsPair(t *testing.T) (ns, localDev, localIP, peerIP string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to create a network namespace")
	}
	for _, tool := range []string{"ip", "tcpdump"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s", tool)
		}
	}
	id := os.Getpid() % 100000
	ns = fmt.Sprintf("rlabt%d", id)
	localDev, peerDev := fmt.Sprintf("rlt%da", id), fmt.Sprintf("rlt%db", id)
	octet := id % 250
	localIP, peerIP = fmt.Sprintf("10.231.%d.1", octet), fmt.Sprintf("10.231.%d.2", octet)
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	ip("netns", "add", ns)
	t.Cleanup(func() {
		exec.Command("ip", "link", "del", localDev).Run()
		exec.Command("ip", "netns", "del", ns).Run()
	})
	ip("link", "add", localDev, "type", "veth", "peer", "name", peerDev)
	ip("link", "set", peerDev, "netns", ns)
	ip("addr", "add", localIP+"/30", "dev", localDev)
	ip("link", "set", localDev, "up")
	ip("-n", ns, "addr", "add", peerIP+"/30", "dev", peerDev)
	ip("-n", ns, "link", "set", peerDev, "up")
	ip("-n", ns, "link", "set", "lo", "up")
	return ns, localDev, localIP, peerIP
}

// TestCaptureTCPOverVeth: a real tcpdump captures a real agent-to-agent TCP
// transfer over a veth pair (the receiver is a second agent, this test
// binary, inside a network namespace); the pcap is read back and its TCP
// packets counted.
func TestCaptureTCPOverVeth(t *testing.T) {
	ns, dev, _, peerIP := netnsPair(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The peer agent: `ip netns exec NS <test binary>` in helper mode.
	peerDir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, "ip", "netns", "exec", ns, self)
	var peerErr bytes.Buffer
	cmd.Stderr = &peerErr
	peerIn, peerOut, peerDone := helperServe(t, cmd, peerDir)
	peer := newClient(t, peerIn, peerOut, peerDone)

	local, srv := startAgent(t, Options{})
	var started proto.CaptureStarted
	local.mustCall(proto.MethodCaptureStart, proto.CaptureStartParams{
		Handle: "tcp", Netdev: dev, Filter: "tcp port 5201", Snaplen: 96, MaxBytes: 8 << 20, File: "tcp.pcap",
	}, &started)
	// A second, full-snaplen capture bounded to 2 MB: the 4 MiB transfer
	// wraps its ring of two 1 MB files.
	local.mustCall(proto.MethodCaptureStart, proto.CaptureStartParams{
		Handle: "ring", Netdev: dev, Filter: "tcp port 5201", Snaplen: 65535, MaxBytes: 2_000_000, File: "ring.pcap",
	}, nil)
	var serving proto.TCPServing
	peer.mustCall(proto.MethodTCPServe, proto.TCPServeParams{Handle: "rx", Addr: peerIP, Port: 5201}, &serving)
	const n = 4 << 20
	var tx, rx proto.TCPResult
	local.mustCall(proto.MethodTCPSend, proto.TCPSendParams{Handle: "tx", Addr: peerIP, Port: 5201, Bytes: n, TimeoutMs: 60000}, &tx)
	peer.mustCall(proto.MethodTCPWait, proto.TCPWaitParams{Handle: "rx"}, &rx)
	if tx.Bytes != n || rx.Bytes != n {
		t.Errorf("sent %d, received %d; want %d", tx.Bytes, rx.Bytes, n)
	}
	var res proto.CaptureResult
	local.mustCall(proto.MethodCaptureStop, proto.CaptureStopParams{Handle: "tcp"}, &res)
	if len(res.Files) == 0 {
		t.Fatalf("no capture files; tcpdump said %q", res.Stderr)
	}
	if !strings.Contains(res.Stderr, "packets captured") || res.Captured == 0 || res.Captured+res.Dropped < res.Received {
		t.Errorf("tcpdump's report missing or incomplete: %+v", res)
	}
	var tcpPackets, payload int
	for _, f := range res.Files {
		if f.Path != "tcp.pcap" {
			t.Errorf("capture file %q not named after the capture", f.Path)
		}
		b, err := os.ReadFile(filepath.Join(srv.WorkDir(), f.Path))
		if err != nil {
			t.Fatal(err)
		}
		if f.Mode != 0o600 {
			t.Errorf("%s mode %o, want 600", f.Path, f.Mode)
		}
		if sha(b) != f.SHA256 || int64(len(b)) != f.Size {
			t.Errorf("%s: reported size %d sha %s, file has %d bytes sha %s", f.Path, f.Size, f.SHA256, len(b), sha(b))
		}
		r, err := pcapgo.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("read %s: %v", f.Path, err)
		}
		if r.Snaplen() != 96 {
			t.Errorf("snaplen %d, want 96", r.Snaplen())
		}
		for {
			data, ci, err := r.ReadPacketData()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("read packet from %s: %v", f.Path, err)
			}
			if ci.CaptureLength > 96 {
				t.Errorf("packet of %d bytes beyond the snaplen", ci.CaptureLength)
			}
			p := gopacket.NewPacket(data, r.LinkType(), gopacket.NoCopy)
			if tl, ok := p.Layer(layers.LayerTypeTCP).(*layers.TCP); ok && (tl.DstPort == 5201 || tl.SrcPort == 5201) {
				tcpPackets++
				payload += ci.Length
			}
		}
	}
	// 4 MiB cross the link in at least 4 MiB / 64 KiB (GSO) segments.
	if tcpPackets < n/(64<<10) || payload < n {
		t.Errorf("pcap holds %d TCP packets (%d bytes on the wire) for a %d-byte transfer", tcpPackets, payload, n)
	}
	var ring proto.CaptureResult
	local.mustCall(proto.MethodCaptureStop, proto.CaptureStopParams{Handle: "ring"}, &ring)
	// The bound always holds; two files when tcpdump kept up (on a loaded
	// machine the kernel may drop full-size packets, and then says so).
	if ring.Dropped == 0 && (len(ring.Files) != 2 || ring.Files[0].Path != "ring.000.pcap" || ring.Files[1].Path != "ring.001.pcap") {
		t.Errorf("ring files %+v, want ring.000.pcap and ring.001.pcap; tcpdump: %s", ring.Files, ring.Stderr)
	}
	if len(ring.Files) > 2 || ring.Received == 0 || ring.Captured+ring.Dropped < ring.Received {
		t.Errorf("ring capture %+v", ring)
	}
	for _, f := range ring.Files {
		if f.Size > 1_000_000+65535+16 {
			t.Errorf("%s: %d bytes, beyond the 1 MB file bound plus one packet", f.Path, f.Size)
		}
	}
	// Stopping twice gives the same answer; the tcpdump is gone.
	var again proto.CaptureResult
	local.mustCall(proto.MethodCaptureStop, proto.CaptureStopParams{Handle: "tcp"}, &again)
	if len(again.Files) != len(res.Files) {
		t.Errorf("second stop: %+v", again)
	}
	waitGone(t, started.PID)
	if err := peer.close(); err != nil {
		t.Errorf("peer agent: %v: %s", err, peerErr.String())
	}
}

// TestCaptureStoppedWhenStdinCloses: a running tcpdump is stopped (and its
// file flushed) when the controller goes away.
func TestCaptureStoppedWhenStdinCloses(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for tcpdump")
	}
	if _, err := exec.LookPath("tcpdump"); err != nil {
		t.Skip("needs tcpdump")
	}
	c, srv := startAgent(t, Options{})
	var started proto.CaptureStarted
	c.mustCall(proto.MethodCaptureStart, proto.CaptureStartParams{Handle: "lo", Netdev: "lo", Filter: "tcp port 1", MaxBytes: 1 << 20}, &started)
	if err := c.close(); err != nil {
		t.Fatal(err)
	}
	waitGone(t, started.PID)
	names, err := captureFiles(srv.workDir().root, "lo.pcap")
	if err != nil || len(names) != 1 {
		t.Fatalf("capture files %v, %v; want one", names, err)
	}
	b, err := os.ReadFile(filepath.Join(srv.WorkDir(), names[0]))
	if err != nil {
		t.Fatalf("capture file: %v", err)
	}
	if _, err := pcapgo.NewReader(bytes.NewReader(b)); err != nil {
		t.Errorf("capture file is not a complete pcap: %v", err)
	}
}

func TestNameRing(t *testing.T) {
	base := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name  string
		files map[string]int // name -> age order (0 oldest)
		want  []string
	}{
		{"one suffixed file", map[string]int{"roce.pcap0": 0}, []string{"roce.pcap"}},
		{"one plain file", map[string]int{"roce.pcap": 0}, []string{"roce.pcap"}},
		{"wrapped ring", map[string]int{"roce.pcap0": 2, "roce.pcap1": 3, "roce.pcap2": 0, "roce.pcap3": 1},
			[]string{"roce.000.pcap", "roce.001.pcap", "roce.002.pcap", "roce.003.pcap"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for n, age := range tt.files {
				p := filepath.Join(dir, n)
				if err := os.WriteFile(p, []byte(n), 0o600); err != nil {
					t.Fatal(err)
				}
				mt := base.Add(time.Duration(age) * time.Second)
				if err := os.Chtimes(p, mt, mt); err != nil {
					t.Fatal(err)
				}
			}
			root, err := os.OpenRoot(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer root.Close()
			names, err := captureFiles(root, "roce.pcap")
			if err != nil {
				t.Fatal(err)
			}
			got, err := nameRing(root, "roce.pcap", names)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Fatalf("(-want +got):\n%s", d)
			}
			// Oldest first: roce.000.pcap holds what was roce.pcap2.
			if len(got) == 4 {
				if b, _ := os.ReadFile(filepath.Join(dir, got[0])); string(b) != "roce.pcap2" {
					t.Errorf("%s holds %q, want the oldest file roce.pcap2", got[0], b)
				}
			}
		})
	}
}

func TestTcpdumpArgv(t *testing.T) {
	p := proto.CaptureStartParams{Netdev: "eth1", Snaplen: 128, MaxBytes: 256 << 20, File: "roce.pcap",
		Filter: "-w /etc/cron.d/x or udp port 4791; $(reboot)"}
	got := tcpdumpArgv("/usr/bin/tcpdump", p, "alice")
	want := []string{"/usr/bin/tcpdump", "-i", "eth1", "-n", "--immediate-mode", "-B", "8192", "-s", "128",
		"-w", "roce.pcap", "-C", "67", "-W", "4", "-Z", "alice", "--", "-w /etc/cron.d/x or udp port 4791; $(reboot)"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	p.Filter = ""
	if got := tcpdumpArgv("tcpdump", p, ""); slices.Contains(got, "--") || slices.Contains(got, "-Z") {
		t.Errorf("no filter, not root: %q", got)
	}
}

// TestCaptureStopOnLoopbackDoesNotWaitDrain: on lo, and on "any" for
// loopback traffic, tcpdump's counters never balance (the kernel counts each
// packet as sent and as received, libpcap keeps one: "5 captured, 10
// received"), and the drain waited its whole limit on every stop. It ends
// once no counter moves between two readings, with every packet written.
// Readings are counted, not seconds: the drain is 20 s here, at least 20
// readings when it runs out.
func TestCaptureStopOnLoopbackDoesNotWaitDrain(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for tcpdump")
	}
	if _, err := exec.LookPath("tcpdump"); err != nil {
		t.Skip("needs tcpdump")
	}
	const packets = 5
	for _, netdev := range []string{"lo", "any"} {
		t.Run(netdev, func(t *testing.T) {
			c, srv := startAgent(t, Options{CaptureDrain: 20 * time.Second})
			ln, err := net.ListenPacket("udp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			port := ln.LocalAddr().(*net.UDPAddr).Port
			c.mustCall(proto.MethodCaptureStart, proto.CaptureStartParams{Handle: "c", Netdev: netdev, Filter: fmt.Sprintf("udp port %d", port), MaxBytes: 4 << 20}, nil)
			conn, err := net.Dial("udp", ln.LocalAddr().String())
			if err != nil {
				t.Fatal(err)
			}
			for range packets {
				conn.Write([]byte("hi"))
			}
			conn.Close()
			start := time.Now()
			var res proto.CaptureResult
			c.mustCall(proto.MethodCaptureStop, proto.CaptureStopParams{Handle: "c"}, &res)
			srv.mu.Lock()
			reads := srv.captures["c"].counterReads
			srv.mu.Unlock()
			t.Logf("capture.stop on %s: %d counter readings, %s", netdev, reads, time.Since(start).Round(time.Millisecond))
			if res.Captured != packets {
				t.Errorf("captured %d packets, want %d (stderr %q)", res.Captured, packets, res.Stderr)
			}
			// One reading, one to see nothing moved, and one for each
			// packet tcpdump may still write.
			if most := 2 + packets; reads > most {
				t.Errorf("the drain read tcpdump's counters %d times, want at most %d", reads, most)
			}
		})
	}
}
