package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/schollz/progressbar/v3"

	runengine "github.com/rlab-dev/rlab/engine/run"
)

// TestProgressFailLine: on a terminal, a failing, timed-out or skipped
// workload or step gets a line of its own above the bar at once, with host
// text made printable; ok steps print nothing (without a TTY the step's
// end line says it: TestStepLogLines).
func TestProgressFailLine(t *testing.T) {
	tests := []struct {
		name string
		e    runengine.Event
		want string // "" for no line
	}{
		{"ok", runengine.Event{Type: "step.end", Workload: "w", Status: "ok"}, ""},
		{"start", runengine.Event{Type: "step.start", Workload: "w"}, ""},
		{"failed workload", runengine.Event{Type: "step.end", Workload: "write_bw", Status: "failed", Seconds: 12.34, Error: "exit 1: Couldn't connect\nmore"},
			"FAILED write_bw after 12.3s: exit 1: Couldn't connect\n"},
		{"timed out", runengine.Event{Type: "step.end", Workload: "write_bw", Status: "timed_out", Seconds: 300}, "TIMED OUT write_bw after 5m0s\n"},
		{"skipped", runengine.Event{Type: "step.end", Workload: "tcp", Status: "skipped", Error: "host h1 unreachable"}, "SKIPPED tcp: host h1 unreachable\n"},
		{"host step", runengine.Event{Type: "step.end", Step: "rxe rxe_eth1", Host: "server", Status: "failed", Error: "modprobe: exit 1"},
			"FAILED rxe rxe_eth1 on host server: modprobe: exit 1\n"},
		{"control characters", runengine.Event{Type: "step.end", Workload: "w", Status: "failed", Error: "bad\x1b[2J\rx"}, `FAILED w: bad\x1b[2J\rx` + "\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			p := &progress{w: &buf, tty: true} // a terminal's, without its bar
			p.event(tc.e)
			p.finish()
			if got := buf.String(); got != tc.want {
				t.Errorf("printed %q, want %q", got, tc.want)
			}
		})
	}
}

// TestProgressBar: on a terminal the bar names the running workload with
// its step (sizes) and time, counts the others, and moves on at each end.
func TestProgressBar(t *testing.T) {
	var buf bytes.Buffer
	p := &progress{w: &buf, tty: true}
	p.bar = progressbar.NewOptions(3, progressbar.OptionSetWriter(&buf), progressbar.OptionShowCount(),
		progressbar.OptionSetElapsedTime(true), progressbar.OptionSetPredictTime(false), progressbar.OptionSetWidth(10))
	p.event(runengine.Event{Type: "step.start", Workload: "write_bw", Step: "workload-client write_bw: ib_write_bw client on rxe_eth1, sizes 4KiB, 64KiB, 1MiB, 2000 iterations"})
	p.event(runengine.Event{Type: "step.start", Workload: "tcp", Step: "workload-client tcp: tcp client"})
	if d := p.running.describe(); !strings.HasPrefix(d, "write_bw: ib_write_bw client on rxe_eth1, sizes 4KiB, 64KiB, 1MiB, 20… (") || !strings.HasSuffix(d, "+1 running") {
		t.Errorf("description %q", d)
	}
	p.event(runengine.Event{Type: runengine.EventTrial, Workload: "write_bw", Message: "size 1MiB, repeat 2 (4/6)"})
	if d := p.running.describe(); !strings.HasPrefix(d, "write_bw: size 1MiB, repeat 2 (4/6) (") {
		t.Errorf("description with a unit under way: %q", d)
	}
	p.event(runengine.Event{Type: "step.end", Workload: "write_bw", Status: "failed", Error: "boom"})
	if d := p.running.describe(); !strings.HasPrefix(d, "tcp: tcp client (") || strings.Contains(d, "running") {
		t.Errorf("description after write_bw ended: %q", d)
	}
	p.event(runengine.Event{Type: "step.end", Workload: "tcp", Status: "ok"})
	if d := p.running.describe(); d != "between workloads" {
		t.Errorf("description with nothing running: %q", d)
	}
	p.finish()
	out := buf.String()
	for _, w := range []string{"write_bw: ib_write_bw", "write_bw: size 1MiB, repeat 2 (4/6)", "FAILED write_bw: boom\n", "(2/3", "[0s]"} {
		if !strings.Contains(out, w) {
			t.Errorf("terminal output lacks %q:\n%q", w, out)
		}
	}
}
