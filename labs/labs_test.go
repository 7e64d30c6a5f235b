// Package labs holds the example lab files; its tests check that what an
// example's comments promise is what it does, where that needs no hosts.
// (Every example validates in engine/lab's tests and runs on VMs in
// engine/vm's TestE2EExampleLabs.)
package labs

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/engine/lab"
)

// TestWalkthroughCaptureFilters runs the walkthrough's two capture filters
// through tcpdump over an rping capture recorded on real rxe (RDMA-CM
// connect, SENDs, disconnect): "control" must keep exactly the five
// connection-management MADs (REQ REP RTU DREQ DREP) and "data" every other
// RoCEv2 packet. (The lab once filtered TCP port 18515, which rlab's
// perftest runs never use, so its control capture was empty.)
func TestWalkthroughCaptureFilters(t *testing.T) {
	tcpdump, err := exec.LookPath("tcpdump")
	if err != nil {
		t.Skip("tcpdump not installed")
	}
	l, diags := lab.Load([]string{"walkthrough.hcl"}, lab.LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	const fixture = "../testdata/pcap/recorded/rdma-cm-rping-2.pcap" // 29 frames, 5 of them CM
	count := func(filter string) int {
		out, err := exec.Command(tcpdump, "-n", "-r", fixture, filter).Output()
		if err != nil {
			t.Fatalf("tcpdump -r %s %q: %v", fixture, filter, err)
		}
		return strings.Count(string(out), "\n")
	}
	want := map[string]int{"control": 5, "data": 24}
	for _, c := range l.Captures {
		n, ok := want[c.Name]
		if !ok {
			t.Errorf("capture %q: not checked here", c.Name)
			continue
		}
		if got := count(c.Filter); got != n {
			t.Errorf("capture %q (filter %q) keeps %d of the fixture's frames, want %d", c.Name, c.Filter, got, n)
		}
		delete(want, c.Name)
	}
	for name := range want {
		t.Errorf("walkthrough has no capture %q", name)
	}
	for _, w := range l.Workloads {
		if strings.HasPrefix(w.Tool, "ib_") && !strings.Contains(strings.Join(w.Args, " "), "-R") {
			t.Errorf("workload %s: no -R, so it connects over TCP and the control capture misses it", w.Name)
		}
	}
}

// TestEveryExampleRuns: each example lab is run end to end by a test (on
// VMs or the netns bed), which names it in its source; a new example needs
// its line here and its run there.
func TestEveryExampleRuns(t *testing.T) {
	runBy := map[string]string{ // lab → the test file that runs it
		"quickstart":      "../engine/vm/e2e_rlab_test.go",  // TestE2ERlabRun: boots its own VMs
		"operations-tour": "../engine/vm/e2e_rlab_test.go",  // TestE2ERlabRun
		"walkthrough":     "../engine/vm/e2e_labs_test.go",  // TestE2EExampleLabs: one VM pair for the SSH examples
		"nightly":         "../engine/vm/e2e_labs_test.go",  // TestE2EExampleLabs
		"cloud-bastion":   "../engine/vm/e2e_labs_test.go",  // TestE2EExampleLabs
		"class":           "../engine/vm/e2e_labs_test.go",  // TestE2EExampleLabs
		"iwarp":           "../engine/vm/e2e_labs_test.go",  // TestE2EExampleLabs (siw)
		"found":           "../engine/vm/e2e_labs_test.go",  // TestE2EExampleLabs (rdma blocks over an admin's rxe)
		"lossy":           "../engine/vm/e2e_labs_test.go",  // TestE2EExampleLabs
		"netns-tcp":       "../cmd/rlab/labs_netns_test.go", // TestExampleNetnsLab
		"ring":            "../engine/vm/e2e_ring_test.go",  // TestE2ERing: boots its three VMs
		"incast":          "../engine/vm/e2e_ring_test.go",  // TestE2ERing, on ring's three VMs
		"transports":      "../engine/vm/e2e_labs_test.go",  // TestE2EExampleLabs (rxe on a VLAN, siw, tcp)
		"class-vms":       "../engine/vm/e2e_class_test.go", // TestE2EClassVMs: two pairs, each on its own network
	}
	files, _ := filepath.Glob("*.hcl")
	if len(files) == 0 {
		t.Fatal("no example labs")
	}
	for _, f := range files {
		name := strings.TrimSuffix(f, ".hcl")
		src, ok := runBy[name]
		if !ok {
			t.Errorf("%s: no test runs it (add it to a VM or netns test and here)", f)
			continue
		}
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), `"`+name+`"`) && !strings.Contains(string(b), name+".hcl") {
			t.Errorf("%s: %s does not name it", f, src)
		}
		delete(runBy, name)
	}
	for name := range runBy {
		t.Errorf("runBy has %s, which labs/ no longer holds", name)
	}
}

// TestReadmeTableNamesEveryLab: the example table of README.md has a row for
// every lab file of this folder, and no row for one that is gone.
func TestReadmeTableNamesEveryLab(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]bool{}
	for _, l := range strings.Split(string(b), "\n") {
		if f, ok := strings.CutPrefix(l, "| `"); ok {
			if name, _, ok := strings.Cut(f, "`"); ok && strings.HasSuffix(name, ".hcl") && !strings.Contains(name, "/") {
				rows[name] = true
			}
		}
	}
	files, err := filepath.Glob("*.hcl")
	if err != nil || len(files) == 0 {
		t.Fatalf("no labs: %v", err)
	}
	for _, f := range files {
		if !rows[f] {
			t.Errorf("README.md's example table has no row for %s", f)
		}
		delete(rows, f)
	}
	for f := range rows {
		t.Errorf("README.md's example table names %s, which is not in labs/", f)
	}
}
