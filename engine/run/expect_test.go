package run

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/engine/preflight"
	"github.com/rlab-dev/rlab/engine/report"
	"github.com/rlab-dev/rlab/engine/results"
)

// TestRunSkippedExpect: the expect of a workload that preflight skipped was
// not evaluated, so it is reported as skipped, not as "did not hold": not in
// the run's error (stderr), not under Problems in summary.md, not a JUnit
// failure, and counted apart in the summary table and the report.
func TestRunSkippedExpect(t *testing.T) {
	bed := newPipeBed(t)
	l := loadLab(t, twoHosts+`
workload "x" {
  tool = "exec"
  host = host.a
  command = ["true"]
  expect {
    condition = result.exit_code == 0
    message   = "x exits 0"
  }
}`)
	res := Run(context.Background(), l, Options{Connector: bed, NoReport: true, Out: filepath.Join(t.TempDir(), "r"),
		Preflight: func(*lab.Lab, map[string]*proto.Facts) []preflight.Problem {
			return []preflight.Problem{{Host: "a", Code: preflight.CodeNoRXE, What: "kernel has no rdma_rxe module", Fix: "install linux-modules-extra"}}
		}})
	if res.Code != ExitInfra || res.Err == nil {
		t.Fatalf("code %d err %v, want 2", res.Code, res.Err)
	}
	if strings.Contains(res.Err.Error(), "did not hold") {
		t.Errorf("run error says the skipped expect did not hold: %v", res.Err)
	}
	if len(res.Expects) != 1 || !res.Expects[0].Skipped || res.Expects[0].Held {
		t.Errorf("expects %+v, want one skipped", res.Expects)
	}
	r := readRun(t, res.Dir)
	if len(r.Workloads) != 1 || len(r.Workloads[0].Expects) != 1 || !r.Workloads[0].Expects[0].Skipped {
		t.Fatalf("results.json workloads %+v, want x with its expect skipped", r.Workloads)
	}
	sum, err := os.ReadFile(filepath.Join(res.Dir, results.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(sum), "did not hold") || !strings.Contains(string(sum), "| 1 skipped |") {
		t.Errorf("summary.md reports the skipped expect wrongly:\n%s", sum)
	}
	ju, err := os.ReadFile(filepath.Join(res.Dir, results.JUnitFile))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(ju), "did not hold") || strings.Contains(string(ju), `type="expect"`) || strings.Count(string(ju), "<skipped") != 2 {
		t.Errorf("junit.xml: want the workload and its expect skipped, no expect failure:\n%s", ju)
	}
	d, err := report.Build(res.Dir, report.Options{NoGraphviz: true})
	if err != nil {
		t.Fatal(err)
	}
	if d.Expects.Held != 0 || d.Expects.Failed != 0 || d.Expects.Skipped != 1 {
		t.Errorf("report counts %+v, want 1 skipped", d.Expects)
	}
	for _, p := range d.Problems {
		if strings.Contains(p.What, "did not hold") {
			t.Errorf("report problem %q for a skipped expect", p.What)
		}
	}
}
