package server

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rlab-dev/rlab/agent/proto"
)

// counterKey names one counter of a reading: "rxe_eth1/1/hw_counters/sent_pkts".
func counterKey(dev string, port int, source, name string) string {
	return dev + "/" + string(rune('0'+port)) + "/" + source + "/" + name
}

func readingMap(c proto.Counters) map[string]uint64 {
	m := map[string]uint64{}
	for _, v := range c.Values {
		m[counterKey(v.Device, v.Port, v.Source, v.Name)] = v.Value
	}
	return m
}

// TestReadCountersRecorded reads the recorded sysfs trees of testdata/counters
// (rxe: names from the kernel's rxe_hw_counters.c, values from a VM of the
// rlab VM bed; mlx5: names from the kernel's mlx5 counters.c and the core's
// IB PortCounters; see testdata/counters/README).
func TestReadCountersRecorded(t *testing.T) {
	for _, tc := range []struct {
		name       string
		root       string
		rdma, nets []string
		want       map[string]uint64 // a few counters with their values
		count      int               // how many counters in all
		absent     []string          // "dev/port/source" folders said absent
	}{
		{
			name: "rxe", root: "testdata/counters/rxe", rdma: []string{"rxe_eth1"}, nets: []string{"eth1"},
			want: map[string]uint64{
				"rxe_eth1/1/hw_counters/sent_pkts":           70337,
				"rxe_eth1/1/hw_counters/rcvd_pkts":           196370,
				"rxe_eth1/1/hw_counters/duplicate_request":   140,
				"rxe_eth1/1/hw_counters/rcvd_seq_err":        0,
				"rxe_eth1/1/hw_counters/completer_retry_err": 11,
				"eth1/0/statistics/tx_packets":               70440,
				"eth1/0/statistics/rx_bytes":                 209509616,
			},
			count:  15 + 12, // rxe_counter_descs, and eth1's statistics; lifespan is no counter
			absent: []string{"rxe_eth1/1/counters"},
		},
		{
			name: "mlx5", root: "testdata/counters/mlx5", rdma: []string{"mlx5_0"}, nets: []string{"enp1s0f0np0"},
			want: map[string]uint64{
				"mlx5_0/1/counters/port_xmit_packets":        400000,
				"mlx5_0/1/counters/VL15_dropped":             0,
				"mlx5_0/1/hw_counters/out_of_sequence":       3,
				"mlx5_0/1/hw_counters/np_cnp_sent":           7,
				"mlx5_0/0/device_hw_counters/packet_seq_err": 2,
				"enp1s0f0np0/0/statistics/tx_packets":        20,
			},
			count: 20 + 25 + 5 + 6,
		},
		{
			name: "no such device", root: "testdata/counters/rxe", rdma: []string{"rxe_eth9"}, nets: []string{"eth9"},
			absent: []string{"rxe_eth9/0/hw_counters", "eth9/0/statistics"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := readCounters(tc.root, tc.rdma, tc.nets)
			m := readingMap(got)
			for k, v := range tc.want {
				if gv, ok := m[k]; !ok || gv != v {
					t.Errorf("%s = %d (read: %v), want %d", k, gv, ok, v)
				}
			}
			if len(got.Values) != tc.count {
				t.Errorf("read %d counters, want %d: %v", len(got.Values), tc.count, m)
			}
			if _, ok := m["rxe_eth1/1/hw_counters/lifespan"]; ok {
				t.Error("hw_counters/lifespan (the cache time) read as a counter")
			}
			var absent []string
			for _, u := range got.Unreadable {
				if !u.Absent || u.Reason == "" {
					t.Errorf("unexpected unreadable %+v", u)
				}
				absent = append(absent, u.Device+"/"+string(rune('0'+u.Port))+"/"+u.Source)
			}
			if diff := cmp.Diff(tc.absent, absent); diff != "" {
				t.Errorf("absent (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReadCountersUnreadable: a counter that cannot be read is recorded as
// unreadable with the reason, never as zero, and its neighbours are read.
func TestReadCountersUnreadable(t *testing.T) {
	root := t.TempDir()
	hw := filepath.Join(root, "class", "infiniband", "rxe0", "ports", "1", "hw_counters")
	writeTree(t, hw, map[string]string{
		"sent_pkts":    "12",
		"rcvd_seq_err": "n/a",
		"send_err":     "",
		"rdma_sends":   strings.Repeat("9", 80),
		"bad name\x1b": "3",
		"negative":     "-1",
	})
	if err := os.Symlink("nowhere", filepath.Join(hw, "dangling")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(hw, "secret"), []byte("5\n"), 0); err != nil {
		t.Fatal(err)
	}
	// A folder it cannot list: ports/1/counters as a file.
	writeTree(t, filepath.Join(root, "class", "infiniband", "rxe0", "ports", "1"), map[string]string{"counters": "x"})
	got := readCounters(root, []string{"rxe0"}, nil)
	want := map[string]uint64{"rxe0/1/hw_counters/sent_pkts": 12}
	if os.Geteuid() == 0 {
		want["rxe0/1/hw_counters/secret"] = 5 // root reads a 0000 file
	}
	if diff := cmp.Diff(want, readingMap(got)); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
	reasons := map[string]string{}
	for _, u := range got.Unreadable {
		if u.Absent {
			t.Errorf("%+v said absent: it is there", u)
		}
		reasons[u.Source+"/"+u.Name] = u.Reason
	}
	for name, want := range map[string]string{
		"hw_counters/rcvd_seq_err":   `not a counter: "n/a"`,
		"hw_counters/send_err":       "empty",
		"hw_counters/rdma_sends":     "longer than 64 bytes",
		"hw_counters/negative":       `not a counter: "-1"`,
		`hw_counters/"bad name\x1b"`: "not a counter name",
		"hw_counters/dangling":       "no such file or directory",
		"counters/":                  "not a directory",
		"hw_counters/secret":         "permission denied",
	} {
		if name == "hw_counters/secret" && os.Geteuid() == 0 {
			continue // root reads a 0000 file
		}
		if r, ok := reasons[name]; !ok || !strings.Contains(r, want) {
			t.Errorf("%s: reason %q (listed: %v), want it to say %q; all: %v", name, r, ok, want, reasons)
		}
	}
	for _, v := range got.Values {
		if v.Name != "sent_pkts" && v.Name != "secret" {
			t.Errorf("an unreadable counter got a value: %+v", v)
		}
	}
}

// TestCountersReadOverWire: counters.read through the protocol on this
// machine, which has netdevs and no RDMA: lo's statistics are read, the RDMA
// device is said absent, a name that is not one path element is refused.
func TestCountersReadOverWire(t *testing.T) {
	c, _ := startAgent(t, Options{})
	var got proto.Counters
	c.mustCall(proto.MethodCountersRead, proto.CountersReadParams{RDMA: []string{"rxe_eth1"}, Netdevs: []string{"lo"}, Route: "127.0.0.1"}, &got)
	m := readingMap(got)
	if _, ok := m["lo/0/statistics/rx_packets"]; !ok {
		t.Errorf("lo's rx_packets not read: %v", m)
	}
	if got.RouteNetdev != "lo" {
		t.Errorf("route to 127.0.0.1 resolved to %q, want lo", got.RouteNetdev)
	}
	var rdmaAbsent bool
	for _, u := range got.Unreadable {
		rdmaAbsent = rdmaAbsent || u.Device == "rxe_eth1" && u.Absent
	}
	for k := range m {
		if strings.HasPrefix(k, "rxe_eth1/") {
			t.Errorf("a counter of a device this machine does not have: %s", k)
		}
	}
	if !rdmaAbsent {
		t.Errorf("rxe_eth1 not said absent: %+v", got.Unreadable)
	}
	var none proto.Counters
	if perr := c.call(proto.MethodCountersRead, proto.CountersReadParams{Netdevs: []string{"../../etc"}}, &none); perr == nil || perr.Code != proto.CodeBadRequest {
		t.Errorf("a netdev name with a path: %+v", perr)
	}
}

func FuzzParseCounter(f *testing.F) {
	for _, s := range []string{"0\n", "70337\n", "18446744073709551615\n", "18446744073709551616\n", "-1\n", "n/a\n", "", "1 2\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := ParseCounter(b)
		// A value read is the file's digits, nothing else of it.
		if digits := strings.TrimLeft(strings.TrimRight(string(b), "\n"), "0"); err == nil && digits != strconv.FormatUint(v, 10) && !(v == 0 && digits == "") {
			t.Errorf("%q parsed as %d", b, v)
		}
		if err != nil && v != 0 {
			t.Errorf("%q: error with a value %d", b, v)
		}
	})
}

func FuzzValidCounterName(f *testing.F) {
	for _, s := range []string{"sent_pkts", "VL15_dropped", "..", "a/b", "\x1b[2J", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if ValidCounterName(s) && (strings.ContainsAny(s, "/\x00 \n\x1b") || s == ".." || s == ".") {
			t.Errorf("%q accepted", s)
		}
	})
}

// BenchmarkReadCounters: one reading of an rxe device and its netdev (the
// recorded tree: 27 files), what a workload costs each host twice.
func BenchmarkReadCounters(b *testing.B) {
	for b.Loop() {
		readCounters("testdata/counters/rxe", []string{"rxe_eth1"}, []string{"eth1"})
	}
}
