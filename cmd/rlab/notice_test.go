package main

import (
	"bytes"
	"testing"

	runengine "github.com/rlab-dev/rlab/engine/run"
)

// TestProgressNotice: a notice event (a size that timed out, a data link
// down) is printed as a line of its own at once, also when stderr is not a
// terminal (beside the step lines there: TestStepLogLines).
func TestProgressNotice(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(&b, 2)
	p.event(runengine.Event{Type: "step.start", Workload: "write_bw"})
	p.event(runengine.Event{Type: runengine.EventNotice, Workload: "write_bw", Message: "workload write_bw: size 1MiB, repeat 1 timed out after 5m0s"})
	p.event(runengine.Event{Type: runengine.EventNotice, Message: "data link server ↔ client on eth1 down: ..."})
	want := "[00:00:00] start workload write_bw\nworkload write_bw: size 1MiB, repeat 1 timed out after 5m0s\ndata link server ↔ client on eth1 down: ...\n"
	if got := b.String(); got != want {
		t.Errorf("printed %q, want %q", got, want)
	}
}
