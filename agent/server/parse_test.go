package server

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/rlab-dev/rlab/agent/proto"
)

func TestParseProcNetTCP(t *testing.T) {
	in := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:9ACD 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 105226 1 0000000074b5de12 100 0 0 10 0
   1: 0200000A:0016 0100000A:D431 01 00000000:00000000 02:0009A2E3 00000000     0        0 77 2 0000000000000000 20 4 1 10 -1
   2: garbage
   3: 00000000:ZZZZ 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 9 1
   0: 00000000000000000000000000000000:1451 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 555 1 0 100 0 0 10 0
`
	want := []TCPSocket{
		{LocalAddr: netip.MustParseAddr("127.0.0.1"), LocalPort: 0x9ACD, State: 0x0A, Inode: 105226},
		{LocalAddr: netip.MustParseAddr("10.0.0.2"), LocalPort: 22, State: 1, Inode: 77},
		{LocalAddr: netip.IPv6Unspecified(), LocalPort: 5201, State: 0x0A, Inode: 555},
	}
	if d := cmp.Diff(want, ParseProcNetTCP([]byte(in)), cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

// TestProcNetAddr: /proc/net/tcp{,6} print each 32-bit word of an address
// in the host's (little-endian) order.
func TestProcNetAddr(t *testing.T) {
	for in, want := range map[string]string{
		"0100007F":                         "127.0.0.1",
		"0A00630A":                         "10.99.0.10",
		"00000000":                         "0.0.0.0",
		"00000000000000000000000001000000": "::1",
		"000080FE00000000FF0F02A0FE0E0B52": "fe80::a002:fff:520b:efe",
		"0000000000000000FFFF00000100630A": "::ffff:10.99.0.1",
		"0A00630":                          "invalid IP",
		"ZZ00630A":                         "invalid IP",
	} {
		if got := procNetAddr(in).String(); got != want {
			t.Errorf("%s: got %s, want %s", in, got, want)
		}
	}
}

func TestRDMACMListening(t *testing.T) {
	sample, err := os.ReadFile("testdata/rdma-res-cm_id.json")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		out  string
		pids map[int]bool
		port int
		want bool
	}{
		{"rping listening", string(sample), map[int]bool{4242: true}, 7174, true},
		{"perftest on ipv6 wildcard", string(sample), map[int]bool{4300: true}, 18515, true},
		{"someone else's listener", string(sample), map[int]bool{9999: true}, 7174, false},
		{"connecting is not listening", string(sample), map[int]bool{4250: true}, 40512, false},
		{"other port", string(sample), map[int]bool{4242: true}, 7175, false},
		{"separate src-port", `[{"state":"LISTEN","src-port":7000,"pid":1}]`, map[int]bool{1: true}, 7000, true},
		{"kernel owned, no pid", `[{"state":"LISTEN","src-addr":"0.0.0.0:7000"}]`, map[int]bool{1: true}, 7000, true},
		{"empty", `[]`, nil, 1, false},
		{"not json", `error: no devices`, nil, 1, false},
		{"address without port", `[{"state":"LISTEN","src-addr":"0.0.0.0"}]`, nil, 0, false},
	}
	for _, tt := range tests {
		if got := RDMACMListening([]byte(tt.out), tt.pids, tt.port); got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestRDMACMListener: the listener found names the process that holds it
// (whose netns siw's socket is looked for in) and its address.
func TestRDMACMListener(t *testing.T) {
	sample, err := os.ReadFile("testdata/rdma-res-cm_id.json")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		out  string
		pids map[int]bool
		port int
		want CMListener
	}{
		{"rping on the ipv4 wildcard", string(sample), map[int]bool{4242: true}, 7174, CMListener{PID: 4242, Addr: netip.IPv4Unspecified()}},
		{"perftest on the ipv6 wildcard", string(sample), map[int]bool{4300: true}, 18515, CMListener{PID: 4300, Addr: netip.IPv6Unspecified()}},
		{"a forked child holds it", `[{"state":"LISTEN","src-addr":"10.99.0.1:7174","pid":77}]`, map[int]bool{70: true, 77: true}, 7174, CMListener{PID: 77, Addr: netip.MustParseAddr("10.99.0.1")}},
		{"ipv6 with brackets", `[{"state":"LISTEN","src-addr":"[fe80::1%eth1]:7174","pid":5}]`, nil, 7174, CMListener{PID: 5, Addr: netip.MustParseAddr("fe80::1")}},
		{"kernel owned, no pid", `[{"state":"LISTEN","src-addr":"0.0.0.0:7000"}]`, nil, 7000, CMListener{Addr: netip.IPv4Unspecified()}},
		{"pid out of range", `[{"state":"LISTEN","src-port":7000,"pid":1e300}]`, nil, 7000, CMListener{}},
	}
	for _, tt := range tests {
		got, ok := RDMACMListener([]byte(tt.out), tt.pids, tt.port)
		if !ok || got != tt.want {
			t.Errorf("%s: got %+v %v, want %+v", tt.name, got, ok, tt.want)
		}
	}
}

// TestTCPPortListening: iWARP readiness takes a LISTEN socket of any owner,
// siw's kernel socket included (no process holds it; its inode may be 0).
func TestTCPPortListening(t *testing.T) {
	const head = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
	tests := []struct {
		name string
		in   string
		port int
		want bool
		cm   string // the rdma_cm listener's address; "" none
	}{
		{"kernel socket, inode 0", head + "   0: 0A00630A:1C06 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 0 1 0000000000000000 100 0 0 10 0\n", 7174, true, ""},
		{"on the cm_id's address", head + "   0: 0A00630A:1C06 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 0 1 0000000000000000 100 0 0 10 0\n", 7174, true, "10.99.0.10"},
		{"on another address than the cm_id's", head + "   0: 0B00630A:1C06 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 0 1 0000000000000000 100 0 0 10 0\n", 7174, false, "10.99.0.10"},
		{"unrelated loopback listener, cm_id on the wildcard", head + "   0: 0100007F:1C06 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4242 1 0000000000000000 100 0 0 10 0\n", 7174, false, "0.0.0.0"},
		{"unrelated loopback listener, cm_id on its address", head + "   0: 0100007F:1C06 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4242 1 0000000000000000 100 0 0 10 0\n", 7174, false, "10.99.0.10"},
		{"wildcard socket, cm_id on its address", head + "   0: 00000000:1C06 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 0 1 0000000000000000 100 0 0 10 0\n", 7174, true, "10.99.0.10"},
		{"user socket", head + "   0: 00000000:4853 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 105226 1 0000000074b5de12 100 0 0 10 0\n", 18515, true, ""},
		{"ipv6 wildcard", head + "   0: 00000000000000000000000000000000:1C06 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 0 1 0 100 0 0 10 0\n", 7174, true, ""},
		{"established, not listening", head + "   0: 0A00630A:1C06 0B00630A:D431 01 00000000:00000000 02:0009A2E3 00000000     0        0 0 2 0000000000000000 20 4 1 10 -1\n", 7174, false, ""},
		{"other port", head + "   0: 0A00630A:1C07 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 0 1 0000000000000000 100 0 0 10 0\n", 7174, false, ""},
		{"cm_id up, socket not yet (header only)", head, 7174, false, ""},
		{"empty", "", 7174, false, ""},
		{"garbage", "   0: 0A00630A 0A\n", 7174, false, ""},
	}
	for _, tt := range tests {
		var cm netip.Addr
		if tt.cm != "" {
			cm = netip.MustParseAddr(tt.cm)
		}
		if got := TCPPortListening([]byte(tt.in), tt.port, cm); got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestNetnsTCPListening reads the real /proc/<pid>/net/tcp{,6}: a socket
// another holder opened counts (the kernel's, for siw), a closed one no longer.
// The pid is this thread's (locked): /proc/<pid>/net is the netns of that
// task, and with RLAB_NETNS=1 an earlier test of this package may have left
// the process's main thread in a namespace of its own (enterNetns: a thread
// that entered one is never given back), so the process's pid would read
// another netns than the one this thread's socket is in (CI, 2026-11-28).
func TestNetnsTCPListening(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	self := unix.Gettid()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	lo := netip.MustParseAddr("127.0.0.1")
	if !netnsTCPListening(self, port, lo) {
		t.Errorf("port %d listens in this netns, not seen", port)
	}
	l.Close()
	if netnsTCPListening(self, port, lo) {
		t.Errorf("port %d closed, still seen listening", port)
	}
}

func FuzzTCPPortListening(f *testing.F) {
	for _, p := range []string{"testdata/proc-net-tcp.txt", "testdata/proc-net-tcp6.txt"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, 22)
	}
	// Property: a yes needs a line whose state field is 0A (LISTEN) and
	// whose local address ends in the port in hex, read independently.
	f.Fuzz(func(t *testing.T, b []byte, port int) {
		port &= 0xffff
		if !TCPPortListening(b, port, netip.Addr{}) {
			return
		}
		for _, l := range strings.Split(string(b), "\n") {
			fs := strings.Fields(l)
			if len(fs) < 10 || !strings.EqualFold(fs[3], "0A") && !strings.EqualFold(strings.TrimLeft(fs[3], "0"), "A") {
				continue
			}
			_, ph, ok := strings.Cut(fs[1], ":")
			if p, err := strconv.ParseUint(ph, 16, 64); ok && err == nil && int(p) == port {
				return
			}
		}
		t.Fatalf("listening on port %d with no LISTEN line for it:\n%s", port, b)
	})
}

func FuzzParseProcNetTCP(f *testing.F) {
	for _, p := range []string{"testdata/proc-net-tcp.txt", "testdata/proc-net-tcp6.txt"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, s := range ParseProcNetTCP(b) {
			if s.LocalPort < 0 || s.LocalPort > 65535 || s.State < 0 || s.State > 255 {
				t.Errorf("out of range: %+v", s)
			}
		}
	})
}

func FuzzRDMACMListening(f *testing.F) {
	b, err := os.ReadFile("testdata/rdma-res-cm_id.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b, 7174)
	f.Add([]byte(`[{"state":"LISTEN","src-port":1e300}]`), 0)
	// Properties: the owner filter only narrows (listening for pid 4242
	// implies listening for any owner); a yes needs a JSON array with an
	// entry in state LISTEN, as an independent typed decode sees it; and
	// the verdict is the output's, not its spelling (re-encoded JSON gets
	// the same answer). Ports are real ports (0–65535): the callers' own.
	f.Fuzz(func(t *testing.T, b []byte, port int) {
		port &= 0xffff
		mine := RDMACMListening(b, map[int]bool{4242: true}, port)
		anyOwner := RDMACMListening(b, nil, port)
		if mine && !anyOwner {
			t.Fatalf("listening for pid 4242 but not for any owner on port %d", port)
		}
		var ids []map[string]any
		if err := json.Unmarshal(bytes.TrimSpace(b), &ids); err != nil {
			if anyOwner {
				t.Fatalf("listening on port %d in output that is no JSON array (%v)", port, err)
			}
			return
		}
		var states []struct{ State any }
		json.Unmarshal(bytes.TrimSpace(b), &states)
		if anyOwner && !slices.ContainsFunc(states, func(s struct{ State any }) bool { return s.State == "LISTEN" }) {
			t.Fatalf("listening on port %d with no entry in state LISTEN", port)
		}
		again, err := json.Marshal(ids)
		if err != nil {
			return // a number JSON cannot spell again (none of iproute2's)
		}
		if got := RDMACMListening(again, map[int]bool{4242: true}, port); got != mine {
			t.Fatalf("re-encoded output says %v, the original %v (port %d)\n%s", got, mine, port, again)
		}
	})
}

func FuzzParseOSRelease(f *testing.F) {
	b, err := os.ReadFile("testdata/os-release")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		// A name is one line's value; an assignment appended to any file is
		// read as written (the last one counts, as in a shell).
		if name := parseOSRelease(b); strings.Contains(name, "\n") {
			t.Fatalf("parseOSRelease(%q) = %q", b, name)
		}
		kv := parseOSReleaseKV(append(slices.Clip(b), "\nID_LIKE=\"rhel fedora\"\n"...))
		if kv["ID_LIKE"] != "rhel fedora" {
			t.Fatalf("%q: ID_LIKE %q", b, kv["ID_LIKE"])
		}
	})
}

// safeFuzzMethods may run with any params in a fuzz loop: none starts a
// process, opens a socket or touches the kernel's RDMA state.
var safeFuzzMethods = map[string]bool{
	proto.MethodPing: true, proto.MethodFilesList: true, proto.MethodFilesRead: true,
	proto.MethodProcWait: true, proto.MethodProcStop: true, proto.MethodCaptureStop: true,
	proto.MethodTCPWait: true, proto.MethodCleanup: true,
}

// FuzzRequestLine feeds arbitrary lines to the decoder and dispatcher: every
// line gets exactly one well-formed reply and nothing panics.
func FuzzRequestLine(f *testing.F) {
	for _, s := range []string{
		`{"id":1,"method":"ping"}`,
		`{"id":2,"method":"files.list","params":{"dir":"sub"}}`,
		`{"id":3,"method":"files.read","params":{"path":"../../etc/passwd","max_bytes":10}}`,
		`{"id":4,"method":"proc.wait","params":{"handle":"x","timeout_ms":1}}`,
		`{"id":5,"method":"nope","params":null}`,
		`{"id":6,"method":"cleanup","params":{"keep":["rxe0"]}}`,
		`{"id":7,"method":"files.read","params":{"path":"a.log"}}`,
		`not json`,
		`{"id":18446744073709551615,"method":"ping","params":[]}`,
	} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	if err := os.WriteFile(dir+"/a.log", []byte("alpha\n"), 0o600); err != nil {
		f.Fatal(err)
	}
	srv, err := New(Options{WorkDir: dir, Hash: "fuzz"})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		var req proto.Request
		decoded := json.Unmarshal(line, &req) == nil
		if decoded && !safeFuzzMethods[req.Method] && srv.handlers()[req.Method] != nil {
			t.Skip("method not safe to fuzz")
		}
		var out bytes.Buffer
		srv.out = &out
		srv.handleLine(context.Background(), line)
		lines := bytes.Split(bytes.TrimSuffix(out.Bytes(), []byte("\n")), []byte("\n"))
		if len(lines) != 1 {
			t.Fatalf("%d reply lines for one request: %q", len(lines), out.Bytes())
		}
		var resp proto.Response
		if err := json.Unmarshal(lines[0], &resp); err != nil {
			t.Fatalf("reply is not JSON: %q", lines[0])
		}
		if (resp.Error == nil) == (resp.Result == nil) {
			t.Fatalf("reply must have exactly one of result and error: %q", lines[0])
		}
		if decoded && resp.ID != req.ID {
			t.Fatalf("reply id %d for request id %d", resp.ID, req.ID)
		}
	})
}

func TestParseTcpdumpStats(t *testing.T) {
	tests := []struct {
		in   string
		want TcpdumpStats
		ok   bool
	}{
		{"tcpdump: listening on lo, link-type EN10MB (Ethernet), snapshot length 96 bytes\n" +
			"tcpdump: 3 packets captured, 153 packets received by filter, 0 packets dropped by kernel\n" +
			"tcpdump: 150 packets captured, 153 packets received by filter, 2 packets dropped by kernel\n",
			TcpdumpStats{Captured: 150, Received: 153, Dropped: 2}, true},
		{"tcpdump: listening on eth1\n1 packet captured\n1 packet received by filter\n0 packets dropped by kernel\n",
			TcpdumpStats{Captured: 1, Received: 1}, true},
		{"tcpdump: listening on eth1\n", TcpdumpStats{}, false},
		{"99999999999999999999 packets captured, 1 packets received by filter, 0 packets dropped by kernel", TcpdumpStats{Received: 1}, false},
	}
	for _, tt := range tests {
		got, ok := ParseTcpdumpStats(tt.in)
		if ok != tt.ok || (ok && got != tt.want) {
			t.Errorf("ParseTcpdumpStats(%q) = %+v, %v; want %+v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func FuzzParseTcpdumpStats(f *testing.F) {
	f.Add("tcpdump: 3 packets captured, 153 packets received by filter, 0 packets dropped by kernel\n")
	f.Add("1 packet captured\n1 packet received by filter\n0 packets dropped by kernel\n")
	f.Fuzz(func(t *testing.T, s string) {
		if st, ok := ParseTcpdumpStats(s); ok && (st.Captured < 0 || st.Received < 0 || st.Dropped < 0) {
			t.Errorf("negative counters %+v", st)
		}
	})
}
