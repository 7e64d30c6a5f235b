package run

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc/rpctest"
	"github.com/rlab-dev/rlab/engine/plan"
	"github.com/rlab-dev/rlab/engine/runstate"
)

// TestHostErrorsBounded: a host answering a call with an error of
// megabytes (its message, the command it names, its stderr) does not grow
// what the run keeps of each failed step by that much: every file of the
// run directory stays small, the workload fails naming the host, and the
// honest host's workload runs (SECURITY 136: each file took 2 MB per
// failed workload before, 16 MB at the line limit).
func TestHostErrorsBounded(t *testing.T) {
	for _, m := range []string{proto.MethodProcStart, proto.MethodProcWait} {
		t.Run(m, func(t *testing.T) {
			bed := newPipeBed(t)
			bed.lie = map[string]rpctest.Lie{"a": func(method string) string {
				if method == m {
					return rpctest.HugeError
				}
				return rpctest.Answer
			}}
			out := filepath.Join(t.TempDir(), "run")
			runPlanned(t.Context(), t, loadLab(t, twoHosts+`
workload "w" {
  tool    = "exec"
  host    = host.a
  command = ["true"]
  repeat  = 4
}
workload "honest" {
  tool    = "exec"
  host    = host.b
  command = ["true"]
}
`), plan.Options{}, Options{Connector: bed, Out: out})
			for _, f := range []string{runstate.File, "results.json", "events.jsonl", "junit.xml", "summary.md", "report.html"} {
				st, err := os.Stat(filepath.Join(out, f))
				if err != nil {
					t.Fatal(err)
				}
				limit := int64(256 << 10)
				if f == "report.html" {
					limit = 1 << 20 // 300 KB of its own
				}
				if st.Size() > limit {
					t.Errorf("%s is %d bytes: the host's error was copied into it", f, st.Size())
				}
			}
			r := readRun(t, out)
			for _, w := range r.Workloads {
				want := map[string]string{"w": "failed", "honest": "ok"}[w.Name]
				if w.Status != want {
					t.Errorf("workload %s: status %q, want %q", w.Name, w.Status, want)
				}
				if len(w.Error) > 64<<10 {
					t.Errorf("workload %s: an error of %d bytes", w.Name, len(w.Error))
				}
			}
		})
	}
}

// TestHostOutputErrorsBounded: a workload's metric is read from the host's
// output, and a line that fails the metric is quoted in the trial's error,
// which is kept for the run (events.jsonl, results.json, junit.xml,
// summary.md, report.html, the terminal's line), as an agent's own error
// was before rpc bounded it (SECURITY 136). A host printing a line of a
// megabyte made each failed trial's error 2 MB and every one of those files
// past it (SECURITY 152). Each file stays small now; the whole output is
// still in the run's logs.
func TestHostOutputErrorsBounded(t *testing.T) {
	bed := newPipeBed(t)
	out := filepath.Join(t.TempDir(), "run")
	runPlanned(t.Context(), t, loadLab(t, twoHosts+`
workload "w" {
  tool    = "exec"
  host    = host.a
  command = ["sh", "-c", "printf 'rate: '; head -c 600000 /dev/zero | tr '\\0' x; echo"]
  repeat  = 2
  metric "rate" { pattern = "^rate: (?P<value>.*)$" }
}
`), plan.Options{}, Options{Connector: bed, Out: out})
	for _, f := range []string{"results.json", "events.jsonl", "junit.xml", "summary.md", "report.html"} {
		st, err := os.Stat(filepath.Join(out, f))
		if err != nil {
			t.Fatal(err)
		}
		limit := int64(256 << 10)
		if f == "report.html" {
			limit = 1 << 20 // 300 KB of its own
		}
		if st.Size() > limit {
			t.Errorf("%s is %d bytes: the host's output was copied into it", f, st.Size())
		}
	}
	r := readRun(t, out)
	for _, w := range r.Workloads {
		if w.Status != "failed" || !strings.Contains(w.Error, "is not a number") {
			t.Errorf("workload %s: status %q, error %.200q: want failed, the metric not a number", w.Name, w.Status, w.Error)
		}
		if len(w.Error) > 16<<10 {
			t.Errorf("workload %s: an error of %d bytes", w.Name, len(w.Error))
		}
	}
}
