package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/engine/lab"
)

// TestFmtGuardMessage: rlab fmt ran without the evaluation guard, so a
// folder of costly files took minutes and gigabytes (attack round 16); it
// now runs under the guard once for the whole command, whose message
// speaks of formatting (nothing is evaluated, connected to or run) and
// says which files are left as they were.
func TestFmtGuardMessage(t *testing.T) {
	fired := make(chan string, 1)
	g := startGuard("labs/", guardLimits{memory: 1 << 40, time: 50 * time.Millisecond, soft: 1 << 40,
		say:  fmtGuardMessage,
		over: func(m string) { fired <- m }})
	var msg string
	select {
	case msg = <-fired:
	case <-time.After(2 * time.Minute):
		t.Fatal("the guard never fired")
	}
	g.stop()
	for _, want := range []string{`formatting "labs/" took longer than 50ms`, "rlab fmt stopped there", "files it named above", lab.TokensSummary} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q:\n%s", want, msg)
		}
	}
	for _, bad := range []string{"evaluating", "expressions", "connected"} {
		if strings.Contains(msg, bad) {
			t.Errorf("message speaks of %q:\n%s", bad, msg)
		}
	}
}

// TestEvalGuardMessageNamesFileSize: the evaluation guard cannot tell
// what cost the memory, and its message blamed expressions only; a lab
// file's size costs memory too (attack round 16: validate of 4 MiB of
// newlines was stopped by the 1 GiB bound, the message pointing at
// expressions). It names both.
func TestEvalGuardMessageNamesFileSize(t *testing.T) {
	msg := guardMessage("labs/x.hcl", "held 1.1 GiB of memory", time.Second)
	for _, want := range []string{"cannot tell", "size of the lab's files", "expressions that make large values"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q:\n%s", want, msg)
		}
	}
}

// TestLongFileRefusedAlike: a lab file past lab.MaxTokens gets the same
// diagnostic, at the same place, from every command that reads it (fmt,
// validate, plan, and validate of its folder), before any of them lexes
// it: no command accepts what another refuses. 4 MiB of empty lines
// took validate to the 1 GiB guard and fmt 15 s and 1.9 GB before.
func TestLongFileRefusedAlike(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "lab.hcl")
	if err := os.WriteFile(p, []byte("lab \"t\" {}\n"+strings.Repeat("\n", 4<<20-20)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"fmt", "-check", p}, {"fmt", dir}, {"validate", p}, {"validate", dir}, {"plan", p}} {
		_, errs, code := rlab(t, args...)
		if code != exitFail || !strings.Contains(errs, lab.TokensSummary) || !strings.Contains(errs, "lab.hcl:249995,1") {
			t.Errorf("rlab %s: exit %d, want %d and %q at lab.hcl:249995,1:\n%.2000s", strings.Join(args, " "), code, exitFail, lab.TokensSummary, errs)
		}
	}
}

// TestFmtRunsGuarded: rlab fmt starts the guard once, for all its paths,
// before it reads a file, and stops it when done.
func TestFmtRunsGuarded(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"a.hcl", "b.hcl"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("lab \"x\" {\ndescription=\"d\"\n}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var started [][]string
	var guards []*evalGuard
	old := fmtGuard
	defer func() { fmtGuard = old }()
	fmtGuard = func(w io.Writer, paths []string) *evalGuard {
		started = append(started, paths)
		g := old(w, paths)
		guards = append(guards, g)
		return g
	}
	if _, errs, code := rlab(t, "fmt", "-check", dir, filepath.Join(dir, "a.hcl")); code != exitFail {
		t.Fatalf("fmt -check: exit %d, want %d (unformatted):\n%s", code, exitFail, errs)
	}
	if len(started) != 1 || strings.Join(started[0], " ") != dir+" "+filepath.Join(dir, "a.hcl") {
		t.Fatalf("guards started for %q, want one for both paths", started)
	}
	select {
	case <-guards[0].finished:
	default:
		t.Error("the guard still runs after fmt returned")
	}
}
