package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/engine/results"
	"github.com/rlab-dev/rlab/engine/testbed"
)

// TestExampleNetnsLab runs labs/netns-tcp.hcl as its header says, on a
// netns bed, with the real binary: only -var for the bed's folder and subnet
// (it once pointed at 10.200.0.1-2, the bed's bridge and a free address).
// Both workloads end ok; exec's output and the TCP numbers are there.
func TestExampleNetnsLab(t *testing.T) {
	bed := testbed.Start(t, testbed.Options{Hosts: 2})
	a := strings.Split(bed.Hosts[0].Addr, ".")
	subnet := a[0] + "." + a[1] + ".0.0/17"
	out := filepath.Join(t.TempDir(), "run")
	stdout, stderr, code := runRlab(t, "run", "--out", out, "-var", "bed="+bed.Dir, "-var", "subnet="+subnet, "-var", "user="+bed.User, "../../labs/netns-tcp.hcl")
	if code != 0 {
		t.Fatalf("rlab run labs/netns-tcp.hcl: exit %d\n%s%s", code, stdout, stderr)
	}
	b, err := os.ReadFile(filepath.Join(out, results.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	var r results.Run
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	st := map[string]string{}
	for _, w := range r.Workloads {
		st[w.Name] = w.Status
	}
	if st["addrs"] != results.StatusOK || st["tcp"] != results.StatusOK {
		t.Errorf("workloads %v, want addrs and tcp ok", st)
	}
	tcp := 0
	for _, s := range r.Samples {
		if s.Meta.Workload == "tcp" && s.Metric == "tcp_bw" && s.Value > 0 {
			tcp++
		}
	}
	if tcp == 0 {
		t.Errorf("no tcp_bw sample in results.json")
	}
	addrs, _ := filepath.Glob(filepath.Join(out, "hosts", "*", "logs", "wl.addrs.exec.r0.stdout"))
	if len(addrs) != 1 {
		t.Fatalf("exec output: %v", addrs)
	}
	if b, _ := os.ReadFile(addrs[0]); !strings.Contains(string(b), bed.Hosts[0].Addr+"/") {
		t.Errorf("ip -br addr on h[0] does not show %s:\n%s", bed.Hosts[0].Addr, b)
	}
}
