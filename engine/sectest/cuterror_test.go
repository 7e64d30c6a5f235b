package sectest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/engine/run"
	"github.com/rlab-dev/rlab/engine/sshx"
)

// TestSecretsNeverLeakAgentCuts: an error a host answers with is cut to
// its first 4 KiB of message, 16 KiB of command and last 16 KiB of stderr
// (proto.Error.Bounded), and a stderr the agent sends is often a tail it
// cut itself (a start error's last 4 KiB), or a head (provision's first 64 KiB): a sensitive value a cut fell
// inside kept a part the run's redactor, given the cut text, no longer
// matched (found in attack round 12, high). Here the host answers each of
// three proc.start calls with such an error, as an agent whose process
// printed the value and failed does: a value straddling the message's,
// the command's and the stderr's cut, a stderr starting with the end of a
// value (a tail the agent kept), one ending with a value's start (a
// head). No part of the value is left anywhere: the run's error, the
// status lines, every file of the run directory and its report.
func TestSecretsNeverLeakAgentCuts(t *testing.T) {
	tokenID := canary("TOKEN")                 // CANARY-TOKEN- and 12 hex digits
	head, tail := tokenID[13:19], tokenID[19:] // what a cut keeps of it
	pad := func(n int) string { return strings.Repeat("y", n) }
	errs := []proto.Error{{
		Code:     proto.CodeCommand,
		Message:  pad(proto.MaxErrorMessage-19) + tokenID + " refused",
		Command:  []string{"sh", pad(proto.MaxErrorCommand - 2 - 19), tokenID, "more"},
		ExitCode: 3,
		Stderr:   "auth failed for " + tokenID + pad(proto.MaxErrorStderr-6),
	}, {
		Code:     proto.CodeCommand,
		Message:  "start: exited with code 3 before output matching \"ready\"",
		Command:  []string{"sh", "-c", "x"},
		ExitCode: 3,
		Stderr:   tail + " (the end of a value the agent's 4 KiB tail cut)",
	}, {
		Code:     proto.CodeCommand,
		Message:  "provision: exited with code 3",
		Command:  []string{"sh", "-c", "x"},
		ExitCode: 3,
		Stderr:   "(the start of a value the agent's 64 KiB head cut) " + tokenID[:19],
	}}
	var calls atomic.Int32
	liar := func(w0 io.Writer, _ string, req *requests) io.Writer {
		w := &lockedWriter{w: w0}
		return &lineWriter{fn: func(line []byte) error {
			var env proto.Envelope
			if json.Unmarshal(line, &env) != nil || env.Event != "" || env.ID == 0 || req.method(env.ID) != proto.MethodProcStart {
				_, err := w.Write(line)
				return err
			}
			e := errs[int(calls.Add(1)-1)%len(errs)]
			b, _ := json.Marshal(proto.Envelope{ID: env.ID, Error: &e})
			_, err := w.Write(append(b, '\n'))
			return err
		}}
	}
	a := startHost(t, "a", liar)
	src := tokenLab + a.hcl() + `
workload "cut1" {
  tool    = "exec"
  host    = host.a
  command = ["echo", var.token]
}
workload "cut2" {
  tool    = "exec"
  host    = host.a
  command = ["echo", var.token]
}
workload "cut3" {
  tool    = "exec"
  host    = host.a
  command = ["echo", var.token]
}
`
	l := writeLab(t, src, lab.LoadOptions{Vars: map[string]string{"token": tokenID}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res := runLab(ctx, t, l, run.Options{
		Connector: connector(t, sshx.Options{}),
		Out:       filepath.Join(t.TempDir(), "run"),
	})
	if res.Code != run.ExitFailed || res.Err == nil {
		t.Fatalf("code %d, want 1 (the host fails each start): %v", res.Code, res.Err)
	}
	if n := calls.Load(); n < 3 {
		t.Fatalf("%d proc.start calls answered with the error, want 3 or more", n)
	}
	texts := runTexts(t, res)
	for _, q := range []string{"yyyy", "the agent's 4 KiB tail cut", "the agent's 64 KiB head cut"} {
		if !strings.Contains(string(texts["results.json"]), q) {
			t.Errorf("results.json does not quote the host's error holding %q", q)
		}
	}
	for name, b := range texts {
		for _, part := range []string{head, tail} {
			if bytes.Contains(b, []byte(part)) {
				t.Errorf("%s holds part of the sensitive value (%s)", name, part)
			}
		}
	}
}
