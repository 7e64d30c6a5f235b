package sectest

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/engine/results"
	"github.com/rlab-dev/rlab/engine/run"
	"github.com/rlab-dev/rlab/engine/sshx"
)

// escapes is what a hostile host puts in every text it sends: a window
// title (OSC 0), a screen clear (CSI 2J), a clipboard write (OSC 52), an
// 8-bit CSI and a bidi override.
const escapes = "\x1b]0;pwned\x07\x1b[2J\x1b]52;c;cm0gLXJmIH4=\x07\u009b2J\u202eevil"

// escapeLiar answers proc.wait with an agent error whose message, command
// and stderr are full of terminal escapes, and reports a patched kernel
// string in facts.
func escapeLiar(w0 io.Writer, _ string, req *requests) io.Writer {
	w := &lockedWriter{w: w0}
	return &lineWriter{fn: func(line []byte) error {
		var env proto.Envelope
		if json.Unmarshal(line, &env) != nil || env.Event != "" || env.ID == 0 {
			_, err := w.Write(line)
			return err
		}
		switch req.method(env.ID) {
		case proto.MethodProcWait:
			b, _ := json.Marshal(proto.Response{ID: env.ID, Error: &proto.Error{
				Code: "internal", Message: "wait failed " + escapes,
				Command: []string{"sh", escapes}, ExitCode: 3, Stderr: "stderr " + escapes + "\n",
			}})
			line = append(b, '\n')
		case proto.MethodFacts:
			var f map[string]any
			if json.Unmarshal(env.Result, &f) == nil {
				f["kernel"] = "6.1.0" + escapes
				res, _ := json.Marshal(f)
				b, _ := json.Marshal(proto.Response{ID: env.ID, Result: res})
				line = append(b, '\n')
			}
		}
		_, err := w.Write(line)
		return err
	}}
}

// TestHostTextNeutralised: a host that answers with terminal escapes (in an
// agent error, its stderr and its facts) does not get one raw control
// character to the user: not in the run's error, the status lines, the
// events the CLI prints, nor summary.md (which `rlab show` prints). The
// CLI's own printing is proven in cmd/rlab TestHostTextNeutralisedCLI.
func TestHostTextNeutralised(t *testing.T) {
	evil := startHost(t, "evil", escapeLiar)
	l := writeLab(t, `lab "escapes" {}
`+evil.hcl()+`
workload "on_evil" {
  tool    = "exec"
  host    = host.evil
  command = ["sh", "-c", "printf 'out \\033]0;title\\007\\n'; printf 'err \\033[2J\\n' >&2; exit 3"]
  timeout = "20s"
}
`, lab.LoadOptions{})
	var mu sync.Mutex
	var printed []string
	res := runLab(context.Background(), t, l, run.Options{
		Connector: connector(t, sshx.Options{}), Out: filepath.Join(t.TempDir(), "r"), TeardownTimeout: 20 * time.Second,
		OnEvent: func(e run.Event) {
			mu.Lock()
			defer mu.Unlock()
			printed = append(printed, e.Step, e.Host, e.Workload, e.Status, e.Error, e.Message)
		},
	})
	if res.Code == run.ExitOK || res.Err == nil {
		t.Fatalf("the run passed against a host whose wait failed: code %d", res.Code)
	}
	// The host's text is there, escaped, so the user sees what it sent.
	if !strings.Contains(res.Err.Error(), `wait failed \x1b]0;pwned\x07`) {
		t.Errorf("run error does not show the host's text escaped:\n%s", res.Err)
	}
	texts := map[string]string{"run error": res.Err.Error()}
	for _, o := range res.Outcomes {
		texts["status line of "+o.Workload] = o.Error
	}
	for i, u := range res.Unreachable {
		texts["unreachable "+string(rune('0'+i))] = u
	}
	mu.Lock()
	texts["events printed"] = strings.Join(printed, "\n")
	mu.Unlock()
	summary, err := os.ReadFile(filepath.Join(res.Dir, results.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	texts["summary.md"] = string(summary)
	r, err := results.ReadRun(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	texts["summary rendered by rlab show --render"] = string(results.Summary(r, r.Dir))
	if !strings.Contains(texts["summary.md"], `\x1b\]0;pwned`) {
		t.Errorf("summary.md does not carry the host's error (escaped):\n%s", summary)
	}
	for where, s := range texts {
		if i := strings.IndexFunc(s, rawControl); i >= 0 {
			t.Errorf("%s holds a raw control character %q at %d:\n%q", where, s[i:min(i+8, len(s))], i, s)
		}
	}
}

// rawControl is a character a terminal would act on (newlines and tabs are
// layout, kept in blocks).
func rawControl(r rune) bool {
	return (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f || (r >= 0x80 && r <= 0x9f) || (r >= 0x202a && r <= 0x202e) || r == 0xfffd
}
