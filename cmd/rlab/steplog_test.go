package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rlab-dev/rlab/agent/dist"
	runengine "github.com/rlab-dev/rlab/engine/run"
)

var update = flag.Bool("update", false, "rewrite testdata/steplog/*.golden")

// TestStepLogLines: without a TTY each step's start and end is one plain
// line with the time since the run began (host, workload, what, status,
// how long, the error's first line), host text made printable.
func TestStepLogLines(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		at   time.Duration // after the run began
		e    runengine.Event
		want string
	}{
		{"phase start", 0, runengine.Event{Type: "step.start", Step: "connect"}, "[00:00:00] start connect\n"},
		{"host start", time.Second, runengine.Event{Type: "step.start", Step: "connect", Host: "h1"}, "[00:00:01] start connect on host h1\n"},
		{"host end", 9 * time.Second, runengine.Event{Type: "step.end", Step: "connect", Host: "h1", Status: "ok", Seconds: 8.24}, "[00:00:09] ok connect on host h1 after 8.2s\n"},
		{"host named in the step", 0, runengine.Event{Type: "step.start", Step: "fetch artifacts of host h0", Host: "h0"}, "[00:00:00] start fetch artifacts of host h0\n"},
		{"workload start", 61 * time.Second, runengine.Event{Type: "step.start", Workload: "w", Step: "exec w on host h0: echo hi"}, "[00:01:01] start workload w: exec w on host h0: echo hi\n"},
		{"workload ok", 3723 * time.Second, runengine.Event{Type: "step.end", Workload: "w", Step: "exec w on host h0: echo hi", Status: "ok", Seconds: 75.4}, "[01:02:03] ok workload w after 1m15s\n"},
		{"failed workload", 0, runengine.Event{Type: "step.end", Workload: "write_bw", Status: "failed", Seconds: 12.34, Error: "exit 1: Couldn't connect\nmore"},
			"[00:00:00] FAILED workload write_bw after 12.3s: exit 1: Couldn't connect\n"},
		{"timed out", 0, runengine.Event{Type: "step.end", Workload: "write_bw", Status: "timed_out", Seconds: 300}, "[00:00:00] TIMED OUT workload write_bw after 5m0s\n"},
		{"skipped", 0, runengine.Event{Type: "step.end", Workload: "tcp", Status: "skipped", Error: "host h1 unreachable"}, "[00:00:00] SKIPPED workload tcp: host h1 unreachable\n"},
		{"host step failed", 0, runengine.Event{Type: "step.end", Step: "rxe rxe_eth1", Host: "server", Status: "failed", Error: "modprobe: exit 1"},
			"[00:00:00] FAILED rxe rxe_eth1 on host server: modprobe: exit 1\n"},
		{"control characters", 0, runengine.Event{Type: "step.end", Workload: "w\x1b[2J", Status: "failed", Error: "bad\x1b[2J\rx"}, `[00:00:00] FAILED workload w\x1b[2J: bad\x1b[2J\rx` + "\n"},
		{"unit: no line", 0, runengine.Event{Type: runengine.EventTrial, Workload: "w", Message: "repeat 1 (1/1)"}, ""},
		{"run start: no line", 0, runengine.Event{Type: "run.start", Message: "lab x"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := newStepLog(t0)
			l.now = func() time.Time { return t0.Add(tc.at) }
			var b bytes.Buffer
			l.event(&b, tc.e)
			if got := b.String(); got != tc.want {
				t.Errorf("printed %q, want %q", got, tc.want)
			}
		})
	}
}

// TestStepLogBeat: the heartbeat names what still runs and for how long,
// the unit a workload is in, and a phase only when nothing of it runs on a
// host; five at most and how many more; nothing when nothing runs.
func TestStepLogBeat(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	now := t0
	l := newStepLog(t0)
	l.now = func() time.Time { return now }
	var b bytes.Buffer
	if got := l.beat(); got != "" {
		t.Errorf("beat with nothing running: %q", got)
	}
	l.event(&b, runengine.Event{Type: "step.start", Step: "connect"})
	now = now.Add(5 * time.Second)
	if got, want := l.beat(), "[00:00:05] still running: connect for 5s"; got != want {
		t.Errorf("beat %q, want %q", got, want)
	}
	l.event(&b, runengine.Event{Type: "step.start", Step: "connect", Host: "h0"})
	now = now.Add(30 * time.Second)
	if got, want := l.beat(), "[00:00:35] still running: connect on host h0 for 30s"; got != want {
		t.Errorf("beat %q, want %q", got, want)
	}
	l.event(&b, runengine.Event{Type: "step.end", Step: "connect", Host: "h0", Status: "ok"})
	l.event(&b, runengine.Event{Type: "step.end", Step: "connect", Status: "ok"})
	l.event(&b, runengine.Event{Type: "step.start", Workload: "bw", Step: "ib_write_bw bw"})
	l.event(&b, runengine.Event{Type: "step.start", Workload: "lat", Step: "ib_write_lat lat"})
	l.event(&b, runengine.Event{Type: runengine.EventTrial, Workload: "bw", Message: "size 64KiB, repeat 1 (2/3)"})
	now = now.Add(95 * time.Second)
	if got, want := l.beat(), "[00:02:10] still running: workload bw for 1m35s (size 64KiB, repeat 1 (2/3)); workload lat for 1m35s"; got != want {
		t.Errorf("beat %q, want %q", got, want)
	}
	for _, w := range []string{"c", "d", "e", "f", "g"} {
		l.event(&b, runengine.Event{Type: "step.start", Workload: w, Step: "exec " + w})
	}
	if got, want := l.beat(), "[00:02:10] still running: workload bw for 1m35s (size 64KiB, repeat 1 (2/3)); workload lat for 1m35s; workload c for 0s; workload d for 0s; workload e for 0s; and 2 more"; got != want {
		t.Errorf("beat %q, want %q", got, want)
	}
	for _, w := range []string{"c", "d", "e", "f", "g"} {
		l.event(&b, runengine.Event{Type: "step.end", Workload: w, Step: "exec " + w, Status: "ok"})
	}
	l.event(&b, runengine.Event{Type: "step.end", Workload: "bw", Step: "ib_write_bw bw", Status: "ok"})
	l.event(&b, runengine.Event{Type: "step.end", Workload: "lat", Step: "ib_write_lat lat", Status: "failed"})
	if got := l.beat(); got != "" {
		t.Errorf("beat after every step ended: %q", got)
	}
}

// syncBuffer is a bytes.Buffer the heartbeat's goroutine and the test may
// use at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestProgressHeartbeat: without a TTY the progress prints a heartbeat
// every period (injected: 20 ms here, 30 s in rlab) while a step runs, and
// none once it ended or after finish.
func TestProgressHeartbeat(t *testing.T) {
	var buf syncBuffer
	p := newProgressEvery(&buf, 1, 20*time.Millisecond)
	p.event(runengine.Event{Type: "step.start", Workload: "long", Step: "exec long on host h0: sleep 300"})
	p.event(runengine.Event{Type: runengine.EventTrial, Workload: "long", Message: "repeat 1 (1/1)"})
	deadline := time.Now().Add(10 * time.Second)
	for strings.Count(buf.String(), "still running") < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("no two heartbeats in 10 s:\n%s", buf.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	p.event(runengine.Event{Type: "step.end", Workload: "long", Status: "ok", Seconds: 0.1})
	ended := buf.String()
	time.Sleep(100 * time.Millisecond) // five periods with nothing running
	p.finish()
	time.Sleep(50 * time.Millisecond)
	if got := buf.String(); got != ended {
		t.Errorf("printed after the step ended:\n%s", strings.TrimPrefix(got, ended))
	}
	beat := regexp.MustCompile(`^\[00:00:0\d\] still running: workload long for \d+ms \(repeat 1 \(1/1\)\)$|^\[00:00:0\d\] still running: workload long for 0s \(repeat 1 \(1/1\)\)$`)
	lines := strings.Split(strings.TrimSpace(ended), "\n")
	if lines[0] != "[00:00:00] start workload long: exec long on host h0: sleep 300" || lines[len(lines)-1] != "[00:00:00] ok workload long after 100ms" {
		t.Errorf("first or last line:\n%s", ended)
	}
	for _, l := range lines[1 : len(lines)-1] {
		if !beat.MatchString(l) {
			t.Errorf("heartbeat line %q", l)
		}
	}
}

// normalRun makes a run's stderr comparable from run to run: the times
// since the start, the steps' durations, the run directory, and the
// heartbeats: only those about the workload named beat in its unit are
// kept (others depend on how fast the machine connects), once for a row
// of equal ones.
func normalRun(s, dir, beat string) string {
	s = strings.ReplaceAll(s, dir, "RUNDIR")
	s = regexp.MustCompile(`\[\d\d:\d\d:\d\d\]`).ReplaceAllString(s, "[hh:mm:ss]")
	s = regexp.MustCompile(`(after|for) [0-9.]+(ns|µs|ms|s|m[0-9.]+s)`).ReplaceAllString(s, "$1 T")
	var out []string
	for _, l := range strings.SplitAfter(s, "\n") {
		if strings.Contains(l, " still running: ") {
			// (one before the workload's first unit began has no unit)
			if !strings.Contains(l, "workload "+beat+" ") || !strings.Contains(l, "(repeat") || (len(out) > 0 && out[len(out)-1] == l) {
				continue
			}
		}
		out = append(out, l)
	}
	return strings.Join(out, "")
}

// TestRunCmdStepLog: `rlab run` without a TTY (stderr a pipe, as in CI)
// prints the run's estimate, then one line per step start and end, a
// heartbeat while a workload runs (every 50 ms here), a failing
// workload's end with its error; the golden is the whole stderr of a run
// on a real SSH server with times normalised
// (go test -run TestRunCmdStepLog ./cmd/rlab -update rewrites it).
func TestRunCmdStepLog(t *testing.T) {
	if _, err := dist.Binary("linux", "amd64"); err != nil {
		t.Skipf("agent not embedded (make agent): %v", err)
	}
	defer func(d time.Duration) { heartbeat = d }(heartbeat)
	heartbeat = 50 * time.Millisecond
	p := writeLab(t, sshLab(t, 1)+`
workload "wait" {
  tool    = "exec"
  host    = host.h0
  command = ["sleep", "1"]
}
workload "hi" {
  tool    = "exec"
  host    = host.h0
  command = ["echo", "hi"]
}
workload "boom" {
  tool    = "exec"
  host    = host.h0
  command = ["sh", "-c", "echo no >&2; exit 3"]
}`)
	out := filepath.Join(t.TempDir(), "run")
	_, stderr, code := rlab(t, "run", "--out", out, p)
	if code != exitFail {
		t.Fatalf("exit %d, want 1 (boom fails)\n%s", code, stderr)
	}
	got := normalRun(stderr, out, "wait")
	if n := strings.Count(stderr, "still running: workload wait for "); n < 5 {
		t.Errorf("%d heartbeats during a 1 s workload at 50 ms, want at least 5:\n%s", n, stderr)
	}
	golden := filepath.Join("testdata", "steplog", "run.golden")
	if *update {
		if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("stderr (-golden +got):\n%s\nraw:\n%s", diff, stderr)
	}
	if strings.ContainsRune(stderr, '\x1b') || strings.ContainsRune(stderr, '\r') {
		t.Errorf("stderr holds terminal escapes:\n%q", stderr)
	}
}
