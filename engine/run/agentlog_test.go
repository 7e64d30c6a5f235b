package run

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// agent.log is redacted line by line and bounded: a host flooding its
// stderr gets max bytes of it and one line saying the rest was dropped.
func TestAgentLogRedactedAndBounded(t *testing.T) {
	var out bytes.Buffer
	rw := &redactingWriter{w: &out, c: io.NopCloser(nil), r: newRedactor([]string{"hunter2"}), max: 100}
	rw.Write([]byte("level=INFO msg=start token=hun"))
	rw.Write([]byte("ter2\n"))
	for range 20 {
		rw.Write([]byte("level=INFO msg=flood 0123456789\n"))
	}
	rw.Write([]byte("tail hunter2"))
	rw.Close()
	got := out.String()
	if strings.Contains(got, "hunter2") {
		t.Errorf("secret in agent.log:\n%s", got)
	}
	if !strings.HasPrefix(got, "level=INFO msg=start token=(sensitive)\n") {
		t.Errorf("first line not redacted as one line:\n%s", got)
	}
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	last := lines[len(lines)-1]
	if !strings.Contains(last, "reached 100 bytes") || strings.Count(got, "reached") != 1 {
		t.Errorf("no single truncation note at the end:\n%s", got)
	}
	if n := len(got) - len(last) - 1; n > 100 {
		t.Errorf("%d bytes of log kept, want at most 100", n)
	}
}
