package run

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/engine/plan"
	"github.com/rlab-dev/rlab/engine/results"
	"github.com/rlab-dev/rlab/kinds"
	"github.com/rlab-dev/rlab/steps"
)

// TestNetnsCounters: on the netns bed (real sshd, the real agent, real
// netdevs with real statistics, no RDMA), a tcp workload's netdev deltas
// are > 0 on both ends; an RDMA device's counters read there are recorded
// as absent, never as zero.
func TestNetnsCounters(t *testing.T) {
	_, hosts := netnsBed(t, 2)
	l := loadLab(t, `lab "netns-counters" {}
`+hosts+`
workload "bulk" {
  tool   = "tcp"
  server = host.h0
  client = host.h1
  bytes  = "8MiB"
  expect {
    condition = result.tx_packets > 0
    message   = "no packet left the netdevs"
  }
}`)
	res := runPlanned(context.Background(), t, l, plan.Options{}, Options{Connector: sshConnector(t), Out: filepath.Join(t.TempDir(), "run")})
	if res.Code != ExitOK {
		t.Fatalf("code %d: %v", res.Code, res.Err)
	}
	r := readRun(t, res.Dir)
	got := map[string]results.Sample{}
	for _, s := range r.Samples {
		if results.IsCounter(s) {
			got[s.Meta.Hosts[0]+" "+s.Metric] = s
		}
	}
	for _, h := range []string{"h0", "h1"} {
		for _, m := range []string{"tx_packets", "rx_packets", "tx_bytes", "rx_bytes"} {
			s, ok := got[h+" "+m]
			if !ok || s.Value <= 0 || len(s.Meta.Devices) != 1 || s.Meta.Devices[0] == "lo" {
				t.Errorf("%s %s = %+v (recorded %v), want > 0 on the bed's data netdev", h, m, s, ok)
			}
		}
	}
	if b := got["h1 tx_bytes"]; b.Value < 8<<20 {
		t.Errorf("h1 sent %g bytes on %v, want at least the 8 MiB of the workload", b.Value, b.Meta.Devices)
	}
	for _, n := range r.Workloads[0].CounterNotes {
		t.Errorf("counter note on a tcp workload's netdevs: %+v", n)
	}

	// An RDMA device on a kernel without RDMA: said absent, no sample.
	c := sshConnector(t)
	hp := planned(t, l, plan.Options{}).HostOf(l.HostByName("h0"))
	h, err := c.Connect(context.Background(), Target{Host: stateHostOf(hp, 0), Plan: hp}, "counters-netns")
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	env := &steps.Env{Hosts: map[string]steps.Host{"h0": h}}
	w := &steps.Workload{Workload: kinds.Workload{Name: "bw", Tool: "ib_write_bw"}}
	sides := []steps.CounterSide{{Host: "h0", RDMA: []string{"rxe_eth0"}, Netdevs: []string{"eth0"}}}
	start := time.Now()
	before := steps.ReadCounters(context.Background(), env, sides)
	t.Logf("one counters.read over SSH (an absent RDMA device and eth0's statistics): %s", time.Since(start))
	after := steps.ReadCounters(context.Background(), env, sides)
	ss, notes := steps.CounterSamples(w, before, after)
	for _, s := range ss {
		if s.Meta.Devices[0] == "rxe_eth0" {
			t.Errorf("a sample of an RDMA device the kernel does not have: %+v", s)
		}
	}
	absent := false
	for _, n := range notes {
		absent = absent || n.Device == "rxe_eth0" && n.Problem == results.NoteAbsent && strings.Contains(n.Reason, "no such RDMA device")
	}
	if !absent || len(ss) == 0 {
		t.Errorf("notes %+v, %d samples: want rxe_eth0 absent and eth0's statistics read", notes, len(ss))
	}
}
