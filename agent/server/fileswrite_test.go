package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
)

// TestFilesWrite: files.write makes the folders on the way, writes a file
// in parts (append), keeps at most 0755 of its mode, and refuses paths out
// of the work dir, through a symlink, and data past the limit; a program
// started with proc.start's dir runs there as ./NAME, and proc.stop's
// interrupt sends SIGINT first.
func TestFilesWrite(t *testing.T) {
	outside := t.TempDir()
	c, srv := startAgent(t, Options{})
	wd := srv.WorkDir()
	if err := os.Symlink(outside, filepath.Join(wd, "escape")); err != nil {
		t.Fatal(err)
	}
	var w proto.FileWritten
	c.mustCall(proto.MethodFilesWrite, proto.FilesWriteParams{Path: "programs/p1/run.sh", Data: []byte("#!/bin/sh\necho in "), Mode: 0o4777}, &w)
	c.mustCall(proto.MethodFilesWrite, proto.FilesWriteParams{Path: "programs/p1/run.sh", Data: []byte("\"$(pwd)\"\n"), Append: true}, &w)
	if w.Size != 27 || w.Path != "programs/p1/run.sh" {
		t.Errorf("written %+v", w)
	}
	fi, err := os.Stat(filepath.Join(wd, "programs/p1/run.sh"))
	if err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("mode %v, %v", fi, err)
	}
	for _, tc := range []proto.FilesWriteParams{
		{Path: "../x", Data: []byte("x")},
		{Path: "/tmp/x", Data: []byte("x")},
		{Path: "escape/x", Data: []byte("x")},
		{Path: "big", Data: make([]byte, proto.FilesWriteLimit+1)},
	} {
		if e := c.call(proto.MethodFilesWrite, tc, nil); e == nil || e.Code != proto.CodeBadRequest {
			t.Errorf("files.write %q: %v, want %s", tc.Path, e, proto.CodeBadRequest)
		}
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("wrote outside the work dir: %v", ents)
	}

	var st proto.ProcStarted
	c.mustCall(proto.MethodProcStart, proto.ProcStartParams{Handle: "in-dir", Argv: []string{"./run.sh"}, Dir: "programs/p1"}, &st)
	var r proto.ProcResult
	c.mustCall(proto.MethodProcWait, proto.ProcWaitParams{Handle: "in-dir", TimeoutMs: 10000}, &r)
	if r.ExitCode != 0 || !strings.HasSuffix(strings.TrimSpace(r.Stdout), "/programs/p1") {
		t.Errorf("ran in %q (exit %d, %s)", r.Stdout, r.ExitCode, r.Stderr)
	}
	if e := c.call(proto.MethodProcStart, proto.ProcStartParams{Handle: "bad-dir", Argv: []string{"true"}, Dir: "../.."}, nil); e == nil || e.Code != proto.CodeBadRequest {
		t.Errorf("dir out of the work dir: %v", e)
	}

	// A server that says so on SIGINT and ignores SIGTERM.
	c.mustCall(proto.MethodFilesWrite, proto.FilesWriteParams{Path: "programs/p1/srv.sh", Mode: 0o755,
		Data: []byte("#!/bin/sh\ntrap 'echo interrupted; exit 0' INT\ntrap '' TERM\necho up\nwhile :; do sleep 0.05; done\n")}, nil)
	c.mustCall(proto.MethodProcStart, proto.ProcStartParams{Handle: "srv", Argv: []string{"./srv.sh"}, Dir: "programs/p1",
		Ready: &proto.Ready{OutputRegex: "up", TimeoutMs: 5000}}, &st)
	start := time.Now()
	c.mustCall(proto.MethodProcStop, proto.ProcStopParams{Handle: "srv", Interrupt: true, GraceMs: 5000}, &r)
	if !strings.Contains(r.Stdout, "interrupted") || time.Since(start) > 4*time.Second {
		t.Errorf("stop with interrupt: %q after %s", r.Stdout, time.Since(start))
	}
}
