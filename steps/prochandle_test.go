package steps

import (
	"context"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc"
)

// handleHost answers proc.wait and proc.stop with a handle of its own.
type handleHost struct{ handle string }

func (h *handleHost) Name() string { return "h" }

func (h *handleHost) Send(ctx context.Context, r *rpc.Request) error {
	if _, res, ok := rpc.Match(r, rpc.ProcWait); ok {
		*res = proto.ProcResult{Handle: h.handle}
	} else if _, res, ok := rpc.Match(r, rpc.ProcStop); ok {
		*res = proto.ProcResult{Handle: h.handle, Stopped: true}
	}
	return nil
}

// TestProcResultHandleIsOurs: the handle of a finished process is the
// controller's own, not the one the host answers with: a trial's record
// (RunRecord, Ref) keeps it for the rest of the run, so a host answering
// each proc.wait with a 7 MiB handle held 280 MiB after an exec workload of
// 40 repeats, and a lab may run 100,000 trials (attack round 14, host
// side, high). A handle past a file name's 255 bytes is refused where the
// answer is decoded (proto.Bounds); one at that bound is still not ours.
func TestProcResultHandleIsOurs(t *testing.T) {
	for _, answered := range []string{strings.Repeat("h", 255), "another"} {
		env := &Env{Hosts: map[string]Host{"h": &handleHost{handle: answered}}}
		var p Procs
		r, err := WaitProc(context.Background(), env, &p, "h", "wl.e.exec.r0", 0)
		if err != nil {
			t.Fatal(err)
		}
		if r.Handle != "wl.e.exec.r0" || Ref("h", r).Handle != "wl.e.exec.r0" {
			t.Errorf("proc.wait answered with a handle of %d bytes: the result keeps %.40q (%d bytes), want the handle waited for", len(answered), r.Handle, len(r.Handle))
		}
		r, err = stopProc(context.Background(), env, &p, "h", "wl.e.server.r0")
		if err != nil {
			t.Fatal(err)
		}
		if r.Handle != "wl.e.server.r0" {
			t.Errorf("proc.stop answered with a handle of %d bytes: the result keeps %.40q (%d bytes), want the handle stopped", len(answered), r.Handle, len(r.Handle))
		}
	}
}
