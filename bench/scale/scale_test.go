package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/rlab-dev/rlab/engine/results"
	"github.com/rlab-dev/rlab/engine/testbed"
)

var (
	binOnce sync.Once
	bin     string
	binErr  error
)

// rlabBin is the rlab under test: $RLAB_BIN (make test-netns builds it with
// the agent embedded), else built here.
func rlabBin(t *testing.T) string {
	t.Helper()
	if b := os.Getenv("RLAB_BIN"); b != "" {
		return b
	}
	binOnce.Do(func() {
		bin = filepath.Join(os.TempDir(), "rlab-scale-test")
		out, err := exec.Command("go", "build", "-o", bin, "github.com/rlab-dev/rlab/cmd/rlab").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("build rlab: %v: %s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return bin
}

// TestBastion200 is issue 7's scale promise: 200 hosts behind ONE bastion,
// every sshd (the bastion's included) with sshd's default MaxStartups
// 10:30:100, and not one host fails, for `rlab facts` and for `rlab run` of
// the class lab (100 pairs, an exec and a TCP transfer each).
func TestBastion200(t *testing.T) {
	bed := testbed.Start(t, testbed.Options{BehindBastion: 200, MaxStartups: "10:30:100"})
	if len(bed.Hosts) != 200 || bed.Bastion == nil {
		t.Fatalf("bed: %d hosts, bastion %v; want 200 behind a bastion", len(bed.Hosts), bed.Bastion)
	}
	rlab := rlabBin(t)
	dir := t.TempDir()
	lab, vars, err := classLab(bed, dir)
	if err != nil {
		t.Fatal(err)
	}
	bedFile, err := writeBed(bed, dir, 100)
	if err != nil {
		t.Fatal(err)
	}
	args := append(vars, "--var", "bed="+bedFile)

	m, err := measure(rlab, append(append([]string{"facts", "--json"}, args...), lab)...)
	if err != nil {
		t.Fatal(err)
	}
	failed, first, err := factsErrors(m.Stdout, 200)
	if err != nil {
		t.Fatalf("%v\n%s", err, m.Stderr)
	}
	if failed != 0 || m.Exit != 0 {
		t.Errorf("rlab facts on 200 hosts behind one bastion: exit %d, %d hosts failed: %v\n%s", m.Exit, failed, first, m.Stderr)
	}
	t.Logf("facts: %.1fs, peak RSS %.0f MiB, peak fds %d", m.Wall, m.MaxRSSMB, m.PeakFDs)

	runDir := filepath.Join(dir, "run")
	m, err = measure(rlab, append(append([]string{"run", "--out", runDir}, args...), lab)...)
	if err != nil {
		t.Fatal(err)
	}
	if m.Exit != 0 {
		t.Errorf("rlab run of 100 pairs behind one bastion: exit %d\n%s", m.Exit, m.Stderr)
	}
	t.Logf("run: %.1fs, peak RSS %.0f MiB, peak fds %d", m.Wall, m.MaxRSSMB, m.PeakFDs)
	b, err := os.ReadFile(filepath.Join(runDir, results.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Workloads []results.Workload `json:"workloads"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", results.ResultsFile, err)
	}
	status := map[string]int{}
	var bad []string
	for _, w := range doc.Workloads {
		status[w.Status]++
		if w.Status != results.StatusOK && len(bad) < 5 {
			bad = append(bad, w.Name+": "+w.Status+" "+w.Error)
		}
	}
	sort.Strings(bad)
	if len(doc.Workloads) != 200 || status[results.StatusOK] != 200 {
		t.Errorf("workloads: %d, by status %v (want 200 ok); first: %v", len(doc.Workloads), status, bad)
	}
}

// TestClassLabDirect checks the lab the harness derives for directly
// reachable hosts: class-scale.hcl without its jump line.
func TestClassLabDirect(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		bed      *testbed.Bed
		wantVars int
		wantJump bool
	}{
		{&testbed.Bed{User: "u"}, 0, false},
		{&testbed.Bed{User: "u", Bastion: &testbed.Host{Addr: "10.0.0.2"}}, 2, true},
	} {
		path, vars, err := classLab(c.bed, dir)
		if err != nil {
			t.Fatal(err)
		}
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := containsLine(string(src), "jump "); got != c.wantJump || len(vars) != c.wantVars {
			t.Errorf("bastion %v: jump line %v, vars %v", c.bed.Bastion, got, vars)
		}
	}
}

func containsLine(src, prefix string) bool {
	for _, l := range strings.Split(src, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), prefix) {
			return true
		}
	}
	return false
}
