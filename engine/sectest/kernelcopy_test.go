package sectest

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/engine/lab"
)

// kernelLiar says its kernel (uname -r) is kernel, that it has rping and a
// loaded rdma_rxe, answers rxe.ensure with an iWARP device on lo, starts
// every process it is asked to and never ends one: an rping that stalls
// as rping over siw does (kinds/rping siwStall), whose error names the
// server's kernel.
func kernelLiar(kernel string) func(io.Writer, string, *requests) io.Writer {
	return func(w0 io.Writer, _ string, req *requests) io.Writer {
		w := &lockedWriter{w: w0}
		answer := func(id uint64, v any) error {
			res, _ := json.Marshal(v)
			b, _ := json.Marshal(proto.Response{ID: id, Result: res})
			_, err := w.Write(append(b, '\n'))
			return err
		}
		return &lineWriter{fn: func(line []byte) error {
			var env proto.Envelope
			if json.Unmarshal(line, &env) != nil || env.Event != "" || env.ID == 0 {
				_, err := w.Write(line)
				return err
			}
			switch req.method(env.ID) {
			case proto.MethodFacts:
				var f map[string]any
				if json.Unmarshal(env.Result, &f) == nil {
					f["kernel"] = kernel
					f["rxe_module"] = "loaded"
					f["root"] = true
					tools, _ := f["tools"].(map[string]any)
					if tools == nil {
						tools = map[string]any{}
					}
					tools["rping"] = map[string]any{"path": "/usr/bin/rping", "version": "50.0"}
					f["tools"] = tools
					return answer(env.ID, f)
				}
			case proto.MethodDeviceEnsure:
				return answer(env.ID, proto.DeviceInfo{Name: "rxe_lo", Netdev: "lo", Created: true, Port: 1, GIDIndex: 1,
					GID: "::ffff:127.0.0.1", IPv4: "127.0.0.1", ActiveMTU: 1024, Driver: "siw", Transport: "iWARP"})
			case proto.MethodDeviceDelete:
				return answer(env.ID, proto.DeviceDeleteResult{Deleted: true})
			case proto.MethodProcStart:
				return answer(env.ID, proto.ProcStarted{PID: 4242})
			case proto.MethodProcWait:
				return nil // never ends
			case proto.MethodProcStop:
				return answer(env.ID, proto.ProcResult{ExitCode: -1, Signal: "killed", Stopped: true})
			}
			_, err := w.Write(line)
			return err
		}}
	}
}

// TestHostKernelCopiedPerWorkload (attack round 14, host side, high): a
// host's facts kernel, as long as a reply line allowed, was copied into the
// error of every rping workload whose device says iWARP and which runs
// into its timeout (kinds/rping siwStall): two such workloads made a
// 184 MB run directory (results.json 37 MB, report.html 59 MB, junit.xml
// 29 MB, summary.md 22 MB), a 530 MiB heap and 133 s. Facts with such a
// kernel are refused now (proto.MaxKernel): the run directory stays small
// and no workload's error holds the kernel.
func TestHostKernelCopiedPerWorkload(t *testing.T) {
	kernel := "6.1.0-" + strings.Repeat("k", 7<<20)
	evil := startHost(t, "evil", kernelLiar(kernel))
	var ws strings.Builder
	n := 2
	for i := range n {
		fmt.Fprintf(&ws, "workload \"p%d\" {\n  tool = \"rping\"\n  server = rxe.d\n  client = rxe.d\n  timeout = \"2s\"\n}\n", i)
	}
	l := writeLab(t, `lab "kernel" {}
`+evil.hcl()+`
rxe "d" {
  host   = host.evil
  netdev = "lo"
}
`+ws.String(), lab.LoadOptions{})
	res, peak, took := runWatched(t, l)
	t.Logf("code %d in %v, heap peak %d MiB; run error %d bytes: %.600s", res.Code, took.Round(time.Millisecond), peak>>20, len(fmt.Sprint(res.Err)), fmt.Sprint(res.Err))
	checkAnswerNotCopied(t, res, "the host's kernel")
}
