package sectest

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/engine/lab"
)

// handleLiar answers every proc.wait with a handle of n bytes.
func handleLiar(n int) func(io.Writer, string, *requests) io.Writer {
	return func(w0 io.Writer, _ string, req *requests) io.Writer {
		w := &lockedWriter{w: w0}
		return &lineWriter{fn: func(line []byte) error {
			var env proto.Envelope
			if json.Unmarshal(line, &env) == nil && env.Event == "" && env.ID != 0 && req.method(env.ID) == proto.MethodProcWait {
				var r map[string]any
				if json.Unmarshal(env.Result, &r) == nil {
					r["handle"] = strings.Repeat("h", n)
					res, _ := json.Marshal(r)
					b, _ := json.Marshal(proto.Response{ID: env.ID, Result: res})
					line = append(b, '\n')
				}
			}
			_, err := w.Write(line)
			return err
		}}
	}
}

// TestHostHandleKeptPerTrial (attack round 14, host side, high): a
// trial's record kept the handle the host answered proc.wait with, so a
// host answering each with 7 MiB held 280 MiB of the controller's heap
// after an exec workload of 40 repeats (peak 611 MiB), the run passing.
// The handle kept is the controller's own now (steps WaitProc).
func TestHostHandleKeptPerTrial(t *testing.T) {
	evil := startHost(t, "evil", handleLiar(7<<20))
	l := writeLab(t, `lab "handle" {}
`+evil.hcl()+`
workload "e" {
  tool    = "exec"
  host    = host.evil
  command = ["true"]
  repeat  = 12
}
`, lab.LoadOptions{})
	res, peak, took := runWatched(t, l)
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	held := 0
	for _, o := range res.Outcomes {
		for _, r := range o.Runs {
			if r.Client != nil {
				held += len(r.Client.Handle)
			}
		}
	}
	t.Logf("code %d in %v, heap peak %d MiB, after GC %d MiB; handles held %d bytes; err %.200s", res.Code, took.Round(time.Millisecond), peak>>20, m.HeapAlloc>>20, held, fmt.Sprint(res.Err))
	if held > 64<<10 {
		t.Errorf("the run's records hold %d bytes of handles the host answered with", held)
	}
}
