package sectest

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/engine/lab"
)

// factsLiar answers facts with what edit makes of the real answer.
func factsLiar(edit func(f map[string]any)) func(io.Writer, string, *requests) io.Writer {
	return func(w0 io.Writer, _ string, req *requests) io.Writer {
		w := &lockedWriter{w: w0}
		return &lineWriter{fn: func(line []byte) error {
			var env proto.Envelope
			if json.Unmarshal(line, &env) == nil && env.Event == "" && env.ID != 0 && req.method(env.ID) == proto.MethodFacts {
				var f map[string]any
				if json.Unmarshal(env.Result, &f) == nil {
					edit(f)
					res, _ := json.Marshal(f)
					b, _ := json.Marshal(proto.Response{ID: env.ID, Result: res})
					line = append(b, '\n')
				}
			}
			_, err := w.Write(line)
			return err
		}}
	}
}

// TestHostFactsStringsBounded (issue 24, a Known gap of attack round 14,
// medium): a facts answer's other strings — hostname, OS, platform fields,
// RDMA device names, errors — were bounded only by the reply line, and
// kept once per host: a 7 MiB text made facts.json and results.json
// 7.3 MB and report.html 14.7 MB. Every field has its bound now
// (proto.Bounds, checked where the client decodes an answer): a host
// answering one past it is refused, said briefly; an error text (data the
// user wants: why a fact is missing) is cut to 4 KiB and the run goes on.
// The run directory stays under 1 MiB either way.
func TestHostFactsStringsBounded(t *testing.T) {
	big := strings.Repeat("x", 7<<20)
	for _, tc := range []struct {
		name string
		edit func(f map[string]any)
		cut  bool // the field is cut, not refused: the run goes on
	}{
		{"hostname", func(f map[string]any) { f["hostname"] = big }, false},
		{"os", func(f map[string]any) { f["os"] = big }, false},
		{"platform vendor", func(f map[string]any) { f["platform"] = map[string]any{"vendor": big} }, false},
		{"platform cpu model", func(f map[string]any) { f["platform"] = map[string]any{"cpu_model": big} }, false},
		{"rdma device name", func(f map[string]any) {
			f["rdma_devices"] = []any{map[string]any{"name": big, "kind": "hw", "ports": []any{}}}
		}, false},
		{"error", func(f map[string]any) { f["errors"] = []any{big} }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			evil := startHost(t, "evil", factsLiar(tc.edit))
			l := writeLab(t, `lab "facts" {}
`+evil.hcl()+`
workload "e" {
  tool    = "exec"
  host    = host.evil
  command = ["true"]
}
`, lab.LoadOptions{})
			res, peak, took := runWatched(t, l)
			fj, _ := os.Stat(filepath.Join(res.Dir, "hosts", "evil", "facts.json"))
			size := int64(-1)
			if fj != nil {
				size = fj.Size()
			}
			t.Logf("code %d in %v, heap peak %d MiB, facts.json %d bytes; run error %d bytes: %.300s", res.Code, took.Round(time.Millisecond), peak>>20, size, len(fmt.Sprint(res.Err)), fmt.Sprint(res.Err))
			if !tc.cut {
				checkAnswerNotCopied(t, res, "the host's "+tc.name)
				if !strings.Contains(fmt.Sprint(res.Err), "more than") {
					t.Errorf("run error %.300q, want the facts refused naming the bound", fmt.Sprint(res.Err))
				}
				return
			}
			if res.Err != nil {
				t.Errorf("run error %.300q, want the run to go on with the error cut", res.Err)
			}
			if size < 0 || size > 64<<10 {
				t.Errorf("facts.json of %d bytes: the host's error was kept whole", size)
			}
		})
	}
}
