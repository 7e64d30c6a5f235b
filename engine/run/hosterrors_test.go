package run

import (
	"os"
	"path/filepath"
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
