package rpc_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc"
)

// TestErrorMaskedBeforeCut: an error a host answers with is masked
// (Options.Mask) before Bounded cuts it (found in attack round 12, high:
// a sensitive value the message's 4 KiB cut, the command's 16 KiB or the
// stderr's last 16 KiB fell inside kept a part the run's redactor, given
// the cut text, no longer matched). A value straddles each cut: no part
// of it is left. (A stderr the agent cut itself: lab TestReplaceTail and
// engine/sectest TestSecretsNeverLeakAgentCuts.)
func TestErrorMaskedBeforeCut(t *testing.T) {
	const secret = "TOKEN-0123456789abcdef"
	const end = "9abcdef" // what a cut from the start keeps (a cut at the end keeps TOKEN-)
	pad := func(n int) string { return strings.Repeat("y", n) }
	e := proto.Error{
		Code:     proto.CodeCommand,
		Message:  pad(proto.MaxErrorMessage-10) + secret + " failed",
		Command:  []string{"sh", pad(proto.MaxErrorCommand - 10), secret, "more"},
		Stderr:   "failed: " + secret + pad(proto.MaxErrorStderr-10),
		ExitCode: 3,
	}
	for _, tc := range []struct {
		name string
		mask func(string, bool) string
		leak bool
	}{
		{"unmasked", nil, true},
		{"masked", func(s string, _ bool) string { return strings.ReplaceAll(s, secret, "(sensitive)") }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reqW, repR := answerEach(t, func(req proto.Request) proto.Envelope {
				return proto.Envelope{ID: req.ID, Error: &e}
			})
			c := rpc.New(repR, reqW, rpc.Options{Host: "h1", Timeout: 30 * time.Second, Mask: tc.mask})
			_, err := rpc.Invoke(context.Background(), c, rpc.Facts, proto.FactsParams{})
			var pe *proto.Error
			if !errors.As(err, &pe) {
				t.Fatalf("got %v, want the host's error", err)
			}
			for name, s := range map[string]string{"message": pe.Message, "command": strings.Join(pe.Command, " "), "stderr": pe.Stderr} {
				if got := strings.Contains(s, "TOKEN-") || strings.Contains(s, end); got != tc.leak {
					t.Errorf("%s holds part of the value: %v, want %v (%.60q…%.60q)", name, got, tc.leak, s, s[max(0, len(s)-60):])
				}
			}
		})
	}
}

// answerEach is a fake agent: it answers each request the client writes to
// reqW with the envelope answer makes of it, on repR, until the test ends.
func answerEach(t *testing.T, answer func(proto.Request) proto.Envelope) (reqW io.WriteCloser, repR io.Reader) {
	t.Helper()
	reqR, reqW := io.Pipe()
	repR, repW := io.Pipe()
	t.Cleanup(func() { reqR.Close(); repW.Close() })
	go func() {
		sc := bufio.NewScanner(reqR)
		sc.Buffer(make([]byte, 64<<10), proto.MaxLine)
		for sc.Scan() {
			var req proto.Request
			if json.Unmarshal(sc.Bytes(), &req) != nil {
				continue
			}
			b, _ := json.Marshal(answer(req))
			if _, err := repW.Write(append(b, '\n')); err != nil {
				return
			}
		}
	}()
	return reqW, repR
}
