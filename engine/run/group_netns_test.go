package run

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/rlab-dev/rlab/engine/plan"
	"github.com/rlab-dev/rlab/kinds"
)

// TestNetnsGroupIncast: an incast on the netns bed, real sshd, agents and
// tcpdump: two tcp clients (h1, h2) send into one server host (h0) at the
// same time because a group says so. From the recorded start and end of each
// (results.json's workloads) the two overlapped (a structural check: one after the
// other they could not), each has its own samples, and a capture scoped to
// each on the shared server holds that workload's port and not the other's.
func TestNetnsGroupIncast(t *testing.T) {
	_, hosts := netnsBed(t, 3)
	// Ports: each workload owns a block (kinds.PortFor); one repeat each.
	p1 := kinds.BasePort
	p2 := kinds.BasePort + kinds.PortsPerWorkload
	l := loadLab(t, `lab "incast" {}
`+hosts+`
workload "from_h1" {
  tool     = "tcp"
  server   = host.h0
  client   = host.h1
  duration = "2s"
}
workload "from_h2" {
  tool     = "tcp"
  server   = host.h0
  client   = host.h2
  duration = "2s"
}
group "incast" {
  workloads = [workload.from_h1, workload.from_h2]
}
capture "c1" {
  host   = host.h0
  netdev = "eth0"
  filter = "tcp port `+strconv.Itoa(p1)+`"
  during = [workload.from_h1]
}
capture "c2" {
  host   = host.h0
  netdev = "eth0"
  filter = "tcp port `+strconv.Itoa(p2)+`"
  during = [workload.from_h2]
}
`)
	res := runPlanned(context.Background(), t, l, plan.Options{}, Options{Connector: sshConnector(t), Out: filepath.Join(t.TempDir(), "run")})
	if res.Code != ExitOK {
		t.Fatalf("code %d: %v", res.Code, res.Err)
	}
	out := readWorkloads(t, res.Dir)
	a, b := out["from_h1"], out["from_h2"]
	if a == nil || b == nil {
		t.Fatalf("workloads %v: want from_h1 and from_h2", out)
	}
	if !(a.Started.Before(b.Finished) && b.Started.Before(a.Finished)) {
		t.Errorf("from_h1 ran %s–%s, from_h2 %s–%s: they did not overlap", a.Started, a.Finished, b.Started, b.Finished)
	}
	per := map[string]int{}
	for _, s := range readRun(t, res.Dir).Samples {
		if s.Metric == "tcp_bw" && s.Value > 0 {
			per[s.Meta.Workload]++
		}
	}
	if per["from_h1"] != 1 || per["from_h2"] != 1 {
		t.Errorf("tcp_bw samples per workload %v, want one each", per)
	}
	for _, c := range []struct {
		capture    string
		own, other int
	}{{"c1", p1, p2}, {"c2", p2, p1}} {
		files, _ := filepath.Glob(filepath.Join(res.Dir, "hosts", "h0", "captures", "cap."+c.capture+"*.pcap*"))
		own, other := 0, 0
		for _, f := range files {
			own += countTCP(t, f, c.own)
			other += countTCP(t, f, c.other)
		}
		if own < 100 || other != 0 {
			stderr, _ := os.ReadFile(filepath.Join(res.Dir, "hosts", "h0", "logs", "cap."+c.capture+".tcpdump.stderr"))
			t.Errorf("capture %s (%v): %d packets on its workload's port %d, %d on the other's %d; want many and none; tcpdump: %s", c.capture, files, own, c.own, other, c.other, stderr)
		}
	}
}
