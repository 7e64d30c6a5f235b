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

// TestAgentLogLongLineRedacted: a line of the agent's log longer than the
// 64 KiB a line is held for is written in pieces, and a sensitive value cut
// across two pieces is still replaced (found in attack round 11: the piece
// was written up to the end of what had arrived, so a value cut there was
// written as its two halves, one after the other: whole in agent.log). The
// agent logs a workload's argv on one line; an argv of 6,000 copies of a
// sensitive value, arriving in the 32 KiB reads io.Copy makes of the SSH
// channel, had copies cut at each flush.
func TestAgentLogLongLineRedacted(t *testing.T) {
	const secret = "hunter2-0123456789abcdef"
	line := "level=INFO msg=started argv=\"[sh -c x" + strings.Repeat(" "+secret, 6000) + "]\"\n"
	for _, chunk := range []int{32 << 10, 32<<10 + 7, 4093, 1} {
		var out bytes.Buffer
		rw := &redactingWriter{w: &out, c: io.NopCloser(nil), r: newRedactor([]string{secret})}
		for p := 0; p < len(line); p += chunk {
			rw.Write([]byte(line[p:min(len(line), p+chunk)]))
		}
		rw.Close()
		got := out.String()
		if n := strings.Count(got, secret); n > 0 {
			t.Errorf("writes of %d bytes: the value is in agent.log %d times", chunk, n)
		}
		if want := strings.ReplaceAll(line, secret, "(sensitive)"); got != want {
			t.Errorf("writes of %d bytes: agent.log is not the line redacted whole (%d bytes, want %d)", chunk, len(got), len(want))
		}
	}
}

// countingWriter counts the writes made to it (io.WriteString's too: it
// has no WriteString of its own).
type countingWriter struct {
	buf    bytes.Buffer
	writes int
}

func (c *countingWriter) Write(p []byte) (int, error) { c.writes++; return c.buf.Write(p) }

// TestAgentLogFewBytesAtATime: a long line of the agent's log arriving a
// few bytes at a time is cut into pieces of at least 64 KiB, whatever the
// longest sensitive form (found in attack round 11: with a form past 64 KiB
// kept back, every write cut a piece again, reading all that was kept).
// The pieces are counted, not timed.
func TestAgentLogFewBytesAtATime(t *testing.T) {
	secret := strings.Repeat("<", 30000)
	// Its longest form (HTML, then JSON with Go's escaping): 270 KB.
	form := strings.Repeat(`\u0026lt;`, 30000)
	line := "level=INFO msg=started argv=\"[" + strings.Repeat(form+" x ", 4) + "]\"\n"
	var out countingWriter
	rw := &redactingWriter{w: &out, c: io.NopCloser(nil), r: newRedactor([]string{secret})}
	for p := 0; p < len(line); p += 16 {
		rw.Write([]byte(line[p:min(len(line), p+16)]))
	}
	rw.Close()
	if most := 2*len(line)/(64<<10) + 2; out.writes > most {
		t.Errorf("a %d-byte line written 16 bytes at a time went out in %d pieces, want at most %d", len(line), out.writes, most)
	}
	if want := strings.ReplaceAll(line, form, "(sensitive)"); out.buf.String() != want {
		t.Errorf("agent.log is not the line redacted whole (%d bytes, want %d)", out.buf.Len(), len(want))
	}
}
