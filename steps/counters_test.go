package steps

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc"
	"github.com/rlab-dev/rlab/engine/results"
	"github.com/rlab-dev/rlab/kinds"
)

// TestCounterSamples: the deltas of two readings become samples named by
// the kernel's counter, on host and device; a counter that went backwards
// (reset or wrapped) is said, not a negative delta; unreadable and absent
// counters become notes, never zero; a host whose reading failed is one
// note; device-wide hw_counters that repeat the port's are left out.
func TestCounterSamples(t *testing.T) {
	w := &Workload{Workload: kinds.Workload{Name: "write_bw", Tool: "ib_write_bw"}}
	v := func(dev string, port int, src, name string, n uint64) proto.CounterValue {
		return proto.CounterValue{Device: dev, Port: port, Source: src, Name: name, Value: n}
	}
	before := []CounterReading{
		{Host: "server", C: &proto.Counters{Values: []proto.CounterValue{
			v("rxe_eth1", 1, "hw_counters", "sent_pkts", 100),
			v("rxe_eth1", 1, "hw_counters", "rcvd_seq_err", 5),
			v("rxe_eth1", 1, "hw_counters", "duplicate_request", 1<<63),
			v("mlx5_0", 0, "device_hw_counters", "out_of_sequence", 1),
			v("mlx5_0", 1, "hw_counters", "out_of_sequence", 1),
			v("eth1", 0, "statistics", "tx_packets", 10),
		}, Unreadable: []proto.CounterUnreadable{
			{Device: "rxe_eth1", Port: 1, Source: "counters", Absent: true, Reason: "the device has no counters folder"},
		}}},
		{Host: "client", Err: errors.New("read counters on host \"client\": unknown_method")},
	}
	after := []CounterReading{
		{Host: "server", C: &proto.Counters{Values: []proto.CounterValue{
			v("rxe_eth1", 1, "hw_counters", "sent_pkts", 1100),
			v("rxe_eth1", 1, "hw_counters", "rcvd_seq_err", 5),
			v("rxe_eth1", 1, "hw_counters", "duplicate_request", 3),
			v("rxe_eth1", 1, "hw_counters", "rdma_sends", 7),
			v("mlx5_0", 0, "device_hw_counters", "out_of_sequence", 4),
			v("mlx5_0", 1, "hw_counters", "out_of_sequence", 4),
			v("eth1", 0, "statistics", "tx_packets", 1010),
		}, Unreadable: []proto.CounterUnreadable{
			{Device: "rxe_eth1", Port: 1, Source: "counters", Absent: true, Reason: "the device has no counters folder"},
			{Device: "eth1", Source: "statistics", Name: "rx_dropped", Reason: "permission denied"},
		}}},
		{Host: "client", C: &proto.Counters{Values: []proto.CounterValue{v("eth1", 0, "statistics", "tx_packets", 1)}}},
	}
	ss, notes := CounterSamples(w, before, after)
	got := map[string]string{}
	for _, s := range ss {
		if !results.IsCounter(s) || s.Meta.Workload != "write_bw" || len(s.Meta.Hosts) != 1 {
			t.Errorf("sample %+v: not a counter sample of one host", s)
		}
		got[s.Meta.Hosts[0]+" "+s.Meta.Devices[0]+" "+s.Metric] = results.FormatValue(s.Value) + " " + s.Unit
	}
	want := map[string]string{
		"server rxe_eth1 sent_pkts":     "1000 packets",
		"server rxe_eth1 rcvd_seq_err":  "0 count",
		"server mlx5_0 out_of_sequence": "3 packets",
		"server eth1 tx_packets":        "1000 packets",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("samples (-want +got):\n%s", diff)
	}
	var kinds []string
	for _, n := range notes {
		kinds = append(kinds, n.Host+" "+n.Device+" "+n.Counter+" "+n.Problem)
	}
	wantNotes := []string{
		"client   unreadable",
		"server rxe_eth1  absent",
		"server eth1 rx_dropped unreadable",
		"server rxe_eth1 duplicate_request reset",
		"server rxe_eth1 rdma_sends unreadable",
	}
	if diff := cmp.Diff(wantNotes, kinds); diff != "" {
		t.Errorf("notes (-want +got):\n%s", diff)
	}
	for _, n := range notes {
		if n.Problem == results.NoteReset && !strings.Contains(n.Reason, "went from 9223372036854775808 to 3") {
			t.Errorf("reset note %q does not say the values", n.Reason)
		}
		if n.Host == "client" && !strings.Contains(n.Reason, "unknown_method") {
			t.Errorf("client note %q does not carry the error", n.Reason)
		}
	}
}

// TestCounterSides: RDMA tools read each end's rxe device and its netdev,
// tcp the netdev each end reaches the data address by, exec nothing; two
// ends on one host are one call.
func TestCounterSides(t *testing.T) {
	env := &Env{}
	env.SetDevice("srv", &proto.DeviceInfo{Name: "rxe_eth1", Netdev: "eth1"})
	env.SetDevice("cli", &proto.DeviceInfo{Name: "rxe_eth2", Netdev: "eth2"})
	env.SetDevice("data", &proto.DeviceInfo{Name: "rxe_eth1", Netdev: "eth1", IPv4: "10.99.0.1"})
	for _, tc := range []struct {
		name string
		w    Workload
		want []CounterSide
	}{
		{"rdma", Workload{Workload: kinds.Workload{Tool: "ib_write_bw"}, ServerHost: "s", ClientHost: "c", ServerDevice: "srv", ClientDevice: "cli"},
			[]CounterSide{{Host: "s", RDMA: []string{"rxe_eth1"}, Netdevs: []string{"eth1"}}, {Host: "c", RDMA: []string{"rxe_eth2"}, Netdevs: []string{"eth2"}}}},
		{"rdma on one host", Workload{Workload: kinds.Workload{Tool: "ib_write_lat"}, ServerHost: "s", ClientHost: "s", ServerDevice: "srv", ClientDevice: "cli"},
			[]CounterSide{{Host: "s", RDMA: []string{"rxe_eth1", "rxe_eth2"}, Netdevs: []string{"eth1", "eth2"}}}},
		{"tcp", Workload{Workload: kinds.Workload{Tool: "tcp"}, ServerHost: "s", ClientHost: "c", ServerAddr: "10.0.0.1"},
			[]CounterSide{{Host: "s", Route: "10.0.0.1"}, {Host: "c", Route: "10.0.0.1"}}},
		// the tcp step dials the server's data rxe netdev (the quickstart's
		// host name "server" resolves nowhere in the guests: the counters
		// said "lookup server: network is unreachable" before)
		{"tcp over the data rxe", Workload{Workload: kinds.Workload{Tool: "tcp"}, ServerHost: "server", ClientHost: "c", DialDevice: "data"},
			[]CounterSide{{Host: "server", Route: "10.99.0.1"}, {Host: "c", Route: "10.99.0.1"}}},
		{"exec", Workload{Workload: kinds.Workload{Tool: "exec"}, Host: "s"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, CounterSides(env, &tc.w)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestCounterSamplesHostileNames: names from a host that are no counter
// names (control characters, a path) never become metrics or raw text.
func TestCounterSamplesHostileNames(t *testing.T) {
	r := func(n uint64) []CounterReading {
		return []CounterReading{{Host: "h", C: &proto.Counters{Values: []proto.CounterValue{
			{Device: "rxe0", Port: 1, Source: "hw_counters", Name: "\x1b[2Jsent", Value: n},
			{Device: "../etc", Source: "statistics", Name: "tx_packets", Value: n},
			{Device: "eth0", Source: "statistics", Name: "tx_packets", Value: n},
		}, Unreadable: []proto.CounterUnreadable{{Device: "eth0\x1b]0;x\x07", Source: "statistics", Name: "rx\x00", Reason: "x"}}}}}
	}
	ss, notes := CounterSamples(&Workload{Workload: kinds.Workload{Name: "w", Tool: "ib_write_bw"}}, r(1), r(5))
	if len(ss) != 1 || ss[0].Metric != "tx_packets" || ss[0].Meta.Devices[0] != "eth0" {
		t.Errorf("samples %+v: want only eth0's tx_packets", ss)
	}
	for _, n := range notes {
		for _, s := range []string{n.Device, n.Source, n.Counter, n.Reason} {
			if strings.ContainsAny(s, "\x1b\x00\x07") {
				t.Errorf("raw control character in note %+v", n)
			}
		}
	}
	if len(notes) != 3 {
		t.Errorf("notes %+v: want the two bad values and the bad unreadable entry", notes)
	}
}

// FuzzCounterSamples: whatever two readings an agent sent (host text: a
// hostile or broken agent), the samples are plain counter names on plain
// device names, one host each, never more than were read after, each the
// difference of one counter read twice (never negative: a counter that went
// backwards is a note), and no note carries a byte a terminal acts on in
// its device, folder or counter.
func FuzzCounterSamples(f *testing.F) {
	f.Add([]byte(`{"values":[{"device":"rxe_eth1","port":1,"source":"hw_counters","name":"sent_pkts","value":100}],"unreadable":[{"device":"rxe_eth1","port":1,"source":"counters","absent":true,"reason":"no folder"}]}`),
		[]byte(`{"values":[{"device":"rxe_eth1","port":1,"source":"hw_counters","name":"sent_pkts","value":1100},{"device":"rxe_eth1","port":1,"source":"hw_counters","name":"rdma_sends","value":7}]}`))
	f.Add([]byte(`{"values":[{"device":"mlx5_0","source":"device_hw_counters","name":"out_of_sequence","value":9},{"device":"mlx5_0","port":1,"source":"hw_counters","name":"out_of_sequence","value":1}]}`),
		[]byte(`{"values":[{"device":"mlx5_0","source":"device_hw_counters","name":"out_of_sequence","value":4},{"device":"mlx5_0","port":1,"source":"hw_counters","name":"out_of_sequence","value":4}]}`))
	f.Add([]byte(`{"values":[{"device":"eth1","source":"statistics","name":"tx_packets","value":18446744073709551615}]}`),
		[]byte(`{"values":[{"device":"eth1","source":"statistics","name":"tx_packets","value":0},{"device":"\u001b[2J","source":"x","name":"a/b","value":1}],"unreadable":[{"device":"\u001b]0;t\u0007","name":"\"quoted\""}]}`))
	w := &Workload{Workload: kinds.Workload{Name: "w", Tool: "ib_write_bw"}}
	f.Fuzz(func(t *testing.T, beforeJSON, afterJSON []byte) {
		reading := func(b []byte) CounterReading {
			var c proto.Counters
			if err := json.Unmarshal(b, &c); err != nil {
				return CounterReading{Host: "h", Err: err}
			}
			return CounterReading{Host: "h", C: &c}
		}
		before, after := reading(beforeJSON), reading(afterJSON)
		ss, notes := CounterSamples(w, []CounterReading{before}, []CounterReading{after})
		if after.C == nil || before.C == nil {
			if len(ss) > 0 {
				t.Fatalf("%d samples from a reading that failed", len(ss))
			}
			return
		}
		if len(ss) > len(after.C.Values) {
			t.Fatalf("%d samples from %d values read", len(ss), len(after.C.Values))
		}
		for _, s := range ss {
			if !plainName(s.Metric, "_.-") || len(s.Meta.Devices) != 1 || !plainName(s.Meta.Devices[0], "._@:+-") ||
				!slices.Equal(s.Meta.Hosts, []string{"h"}) || !results.IsCounter(s) {
				t.Fatalf("sample %+v", s)
			}
			if s.Value < 0 || math.IsNaN(s.Value) || math.IsInf(s.Value, 0) {
				t.Fatalf("sample value %v", s.Value)
			}
			// The difference of one counter read before and after.
			found := false
			for _, a := range after.C.Values {
				for _, b := range before.C.Values {
					if a.Name == s.Metric && b.Name == a.Name && a.Device == s.Meta.Devices[0] && b.Device == a.Device &&
						a.Source == b.Source && a.Port == b.Port && a.Value >= b.Value && float64(a.Value-b.Value) == s.Value {
						found = true
					}
				}
			}
			if !found {
				t.Fatalf("sample %s %v is no difference of one counter read twice", s.Metric, s.Value)
			}
		}
		for _, n := range notes {
			for _, s := range []string{n.Device, n.Source, n.Counter} {
				for _, r := range s {
					if !strconv.IsPrint(r) {
						t.Fatalf("note %+v: %q in a name", n, r)
					}
				}
			}
		}
	})
}

// countersHost answers counters.read with n counters, as many as one
// reply may hold (proto.MaxValues objects).
type countersHost struct{ n int }

func (h countersHost) Name() string { return "h" }

func (h countersHost) Send(_ context.Context, r *rpc.Request) error {
	if _, res, ok := rpc.Match(r, rpc.CountersRead); ok {
		res.Values = make([]proto.CounterValue, h.n)
		for i := range res.Values {
			res.Values[i] = proto.CounterValue{Device: "eth0", Source: "statistics", Name: "c" + strconv.Itoa(i), Value: 1}
		}
	}
	return nil
}

// TestCountersBounded: a host answering counters.read with as many
// counters as a reply holds made as many samples of every workload, kept
// for the run (SECURITY 128: 99,000 counters, 99,000 samples a workload
// and host); an answer with more than proto.MaxCounters is refused and
// said, an honest one read.
func TestCountersBounded(t *testing.T) {
	w := &Workload{Workload: kinds.Workload{Name: "w", Tool: "ib_write_bw"}}
	for _, tc := range []struct {
		n       int
		samples int
	}{{99_000, 0}, {proto.MaxCounters + 1, 0}, {300, 300}} {
		env := &Env{Hosts: map[string]Host{"h": countersHost{tc.n}}}
		sides := []CounterSide{{Host: "h", Netdevs: []string{"eth0"}}}
		before := ReadCounters(t.Context(), env, sides)
		after := ReadCounters(t.Context(), env, sides)
		ss, notes := CounterSamples(w, before, after)
		if len(ss) != tc.samples {
			t.Errorf("%d counters answered: %d samples, want %d", tc.n, len(ss), tc.samples)
		}
		if tc.samples == 0 && (len(notes) != 1 || !strings.Contains(notes[0].Reason, "counters")) {
			t.Errorf("%d counters answered: notes %+v, want one saying the answer was refused", tc.n, notes)
		}
	}
}

// reasonsHost answers each counters.read with n unreadable counters, each
// with a reason of size bytes, named anew at each call.
type reasonsHost struct {
	n, size int
	calls   *int
}

func (h reasonsHost) Name() string { return "h" }

func (h reasonsHost) Send(_ context.Context, r *rpc.Request) error {
	if _, res, ok := rpc.Match(r, rpc.CountersRead); ok {
		*h.calls++
		res.Unreadable = make([]proto.CounterUnreadable, h.n)
		for i := range res.Unreadable {
			res.Unreadable[i] = proto.CounterUnreadable{Device: "eth0", Source: "statistics",
				Name: "c" + strconv.Itoa(*h.calls) + "_" + strconv.Itoa(i), Reason: strings.Repeat("r", h.size)}
		}
	}
	return nil
}

// TestCounterNotesBounded: each unreadable counter a host names before and
// after a workload became a note of the workload, its reason whole, kept for
// the run (results.json, summary.md): proto.MaxCounters entries with 4 KiB
// reasons fill a reply line, so every workload kept about 16 MB of notes
// per host (SECURITY 153). A host's notes are now at most MaxCounterNotes
// a workload, each reason at most MaxCounterReason bytes, the rest counted;
// an honest reading's notes are kept as they were.
func TestCounterNotesBounded(t *testing.T) {
	w := &Workload{Workload: kinds.Workload{Name: "w", Tool: "ib_write_bw"}}
	for _, tc := range []struct {
		name    string
		n, size int
		notes   int
	}{
		{"a reply line of reasons", 1900, 4000, MaxCounterNotes + 1},
		{"many short ones", proto.MaxCounters, 10, MaxCounterNotes + 1},
		{"an honest reading", 3, 60, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls int
			env := &Env{Hosts: map[string]Host{"h": reasonsHost{tc.n, tc.size, &calls}}}
			sides := []CounterSide{{Host: "h", Netdevs: []string{"eth0"}}}
			before := ReadCounters(t.Context(), env, sides)
			after := ReadCounters(t.Context(), env, sides)
			_, notes := CounterSamples(w, before, after)
			j, _ := json.Marshal(notes)
			if len(notes) != tc.notes {
				t.Errorf("%d notes, want %d", len(notes), tc.notes)
			}
			if len(j) > 256<<10 {
				t.Errorf("%d notes are %d bytes of JSON, kept for the run", len(notes), len(j))
			}
			if tc.notes > MaxCounterNotes && !strings.Contains(notes[len(notes)-1].Reason, "more") {
				t.Errorf("the last note %.200v does not count the rest", notes[len(notes)-1])
			}
		})
	}
}
