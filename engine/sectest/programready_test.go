package sectest

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/engine/run"
	"github.com/rlab-dev/rlab/engine/sshx"
)

// TestSecretsNeverLeakProgramNotReady: a program's server that never gets
// ready is named in the error with what it printed, and that was the first
// 4,096 bytes of its output read raw from the host, cut to their last 600:
// a sensitive value the read's end fell inside kept its first part, which
// the run's redactor, given the cut text, no longer matched (found in
// attack round 13: 20 bytes of the value in results.json, events.jsonl,
// junit.xml, report.html, the run's error and its status line). The
// output is now read whole and masked before it is cut.
func TestSecretsNeverLeakProgramNotReady(t *testing.T) {
	tokenID := canary("TOKEN")
	for _, tt := range []struct {
		name, script string
		part         string // the part of the value a cut would keep
		quoted       string // what the error quotes of the output, masked
	}{
		// 4,070 bytes and "token ", then the token: the first 4,096
		// bytes end 20 bytes into it.
		{"stdout's head", "head -c 4069 /dev/zero | tr '\\0' x; echo; printf 'token %s\\n' \"$1\"; exit 1\n", tokenID[:20], "it printed:"},
		// The token, then 4,086 bytes, on stderr: the agent's error for a
		// process that ended before it was ready quotes the last 4,096
		// bytes of its stderr, which start 10 bytes before the token's
		// end (attack round 13; masked by rpc.Options.Mask, SECURITY 195).
		{"stderr's tail in the agent's error", "printf 'token %s' \"$1\" >&2; head -c 4086 /dev/zero | tr '\\0' y >&2; exit 1\n", tokenID[len(tokenID)-10:], ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			programNotReady(t, tokenID, tt.script, tt.part, tt.quoted)
		})
	}
}

// programNotReady runs a program whose server, given the sensitive value,
// runs script and never gets ready, and checks no file of the run, its
// error or a status line holds part of the value.
func programNotReady(t *testing.T, tokenID, script, part, quoted string) {
	head := part
	a := startHost(t, "a", nil)
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "srv"), 0o755)
	os.WriteFile(filepath.Join(dir, "srv", "server.sh"), []byte(script), 0o644)
	src := tokenLab + a.hcl() + `
program "p" {
  source = "srv"
}
workload "w" {
  tool           = "program"
  program        = program.p
  server         = host.a
  client         = host.a
  server_command = ["sh", "server.sh", var.token]
  client_command = ["true"]
  ready          = "never-printed"
}
`
	p := filepath.Join(dir, "lab.hcl")
	os.WriteFile(p, []byte(src), 0o644)
	l, diags := lab.Load([]string{p}, lab.LoadOptions{Vars: map[string]string{"token": tokenID}})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res := runLab(ctx, t, l, run.Options{Connector: connector(t, sshx.Options{}), Out: filepath.Join(t.TempDir(), "run")})
	if res.Code != run.ExitFailed || res.Err == nil {
		t.Fatalf("code %d, want 1 (the server exits before it is ready): %v", res.Code, res.Err)
	}
	texts := runTexts(t, res)
	for name, b := range texts {
		if n := bytes.Count(b, []byte(head)); n > 0 {
			i := bytes.Index(b, []byte(head))
			t.Errorf("%s holds part of the sensitive value (%q) %d times: %q", name, head, n, b[max(0, i-60):min(len(b), i+40)])
		}
	}
	// What it printed is still quoted, masked.
	if e := res.Err.Error(); quoted != "" && (!strings.Contains(e, quoted) || !strings.Contains(e, "token (sensitive)")) {
		t.Errorf("the error does not quote the server's output, masked: %q", e[max(0, len(e)-200):])
	}
}
