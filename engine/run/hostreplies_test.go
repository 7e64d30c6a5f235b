package run

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc"
	"github.com/rlab-dev/rlab/engine/plan"
	"github.com/rlab-dev/rlab/engine/runstate"
)

// TestHostRepliesNotJournaled: what a host answers about a process (its
// boot id, the argv it says it ran) is not copied into state.json and
// results.json as it came (SECURITY 126). Before, a host answering every
// proc.start with a 1 MiB boot_id and every proc.wait with a 1 MiB argv
// grew state.json by 2 MiB a process, and state.json is written whole at
// every process's start and end: a lab's trials made it gigabytes, written
// again and again, and held in the controller's memory.
func TestHostRepliesNotJournaled(t *testing.T) {
	big := strings.Repeat("9", 1<<20)
	tests := []struct {
		name    string
		rewrite func(req *rpc.Request)
		status  string // of workload "w" on the lying host
	}{
		{"boot id", func(req *rpc.Request) {
			if _, res, ok := rpc.Match(req, rpc.ProcStart); ok {
				res.BootID = big
			}
		}, "failed"},
		// An argument at its bound (MAX_ARG_STRLEN, proto.Bounds): taken,
		// not journaled; 8 of them would be 1 MiB.
		{"argv", func(req *rpc.Request) {
			if _, res, ok := rpc.Match(req, rpc.ProcWait); ok {
				res.Argv = []string{"true", big[:proto.Bounds["ProcResult.Argv"].Elem]}
			}
		}, "ok"},
		{"work dir", func(req *rpc.Request) {
			if _, res, ok := rpc.Match(req, rpc.Facts); ok {
				res.WorkDir = "/" + big
			}
		}, "skipped"},
		// Past a file name's 255 bytes: the answer is refused
		// (proto.Bounds); steps TestProcResultHandleIsOurs has one at it.
		{"handle", func(req *rpc.Request) {
			if _, res, ok := rpc.Match(req, rpc.ProcWait); ok {
				res.Handle = big
			}
		}, "failed"},
		{"signal", func(req *rpc.Request) {
			if _, res, ok := rpc.Match(req, rpc.ProcWait); ok {
				res.Signal = big
			}
		}, "failed"},
		{"tool version", func(req *rpc.Request) {
			if _, res, ok := rpc.Match(req, rpc.Facts); ok {
				res.Tools = proto.Tools{"ib_write_bw": {Path: "/usr/bin/ib_write_bw", Version: big}}
			}
		}, "skipped"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bed := newPipeBed(t)
			bed.rewrite = map[string]func(*rpc.Request){"a": tt.rewrite}
			out := filepath.Join(t.TempDir(), "run")
			res := runPlanned(t.Context(), t, loadLab(t, twoHosts+`
workload "w" {
  tool    = "exec"
  host    = host.a
  command = ["true"]
  repeat  = 8
}
workload "honest" {
  tool    = "exec"
  host    = host.b
  command = ["true"]
}
`), plan.Options{}, Options{Connector: bed, Out: out, NoReport: true})
			for _, f := range []string{runstate.File, "results.json"} {
				st, err := os.Stat(filepath.Join(out, f))
				if err != nil {
					t.Fatal(err)
				}
				if st.Size() > 256<<10 {
					t.Errorf("%s is %d bytes: the host's answers were copied into it", f, st.Size())
				}
			}
			r := readRun(t, out)
			for _, w := range r.Workloads {
				want := map[string]string{"w": tt.status, "honest": "ok"}[w.Name]
				if w.Status != want {
					t.Errorf("workload %s: status %q (%s), want %q", w.Name, w.Status, w.Error, want)
				}
				if len(w.Error) > 4096 {
					t.Errorf("workload %s: an error of %d bytes", w.Name, len(w.Error))
				}
			}
			_ = res
		})
	}
}
