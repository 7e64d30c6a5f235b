package server

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rlab-dev/rlab/agent/proto"
)

// TestHardLinkInWorkDir: a root agent working for a user (become, the
// sudoers rule of SECURITY.md) neither reads, hashes, writes, truncates,
// chmods nor chowns a file of the user's work dir that is not the user's
// own. The user may put a hard link to a file they do not own there: to any
// file where fs.protected_hardlinks is 0 (the kernel's default; systemd
// sets 1), to one they can read and write where it is 1. O_NOFOLLOW and
// os.Root stop symlinks, not hard links: before, files.read returned the
// root-only file, proc.start truncated it and chowned it to the user
// (their /etc/shadow), files.write wrote it.
func TestHardLinkInWorkDir(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: a root agent working for a user")
	}
	const uid, gid = 65534, 65534 // nobody
	base := t.TempDir()
	for _, d := range []string{filepath.Dir(base), base} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(base, uid, gid); err != nil {
		t.Fatal(err)
	}
	wd := filepath.Join(base, "r1")
	c, _ := startAgent(t, Options{WorkDir: wd, Owner: &Owner{UID: uid, GID: gid}})
	const secret = "root:$6$secret-hash:19000:0:99999:7:::\n"
	victim := filepath.Join(base, "shadow") // root's file, 0600, beside the work dir (same file system)
	plant := func(t *testing.T, name string) {
		t.Helper()
		if err := os.WriteFile(victim, []byte(secret), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(victim, 0, 0); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(wd, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.Remove(p)
		if err := os.Link(victim, p); err != nil { // what the user does (protected_hardlinks=0)
			t.Fatal(err)
		}
	}
	intact := func(t *testing.T, what string) {
		t.Helper()
		b, err := os.ReadFile(victim)
		fi, serr := os.Stat(victim)
		if err != nil || serr != nil {
			t.Fatalf("%s: %v %v", what, err, serr)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if string(b) != secret || st.Uid != 0 || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: root's file changed through the hard link: uid %d mode %o content %q", what, st.Uid, fi.Mode().Perm(), b)
		}
	}

	t.Run("files.read", func(t *testing.T) {
		plant(t, "shadow")
		var d proto.FileData
		e := c.call(proto.MethodFilesRead, proto.FilesReadParams{Path: "shadow"}, &d)
		if e == nil || strings.Contains(string(d.Data), "secret-hash") {
			t.Errorf("files.read of a hard link to root's file: %v, data %q", e, d.Data)
		}
		intact(t, "files.read")
	})
	t.Run("files.list", func(t *testing.T) {
		plant(t, "shadow")
		var l proto.FilesList
		e := c.call(proto.MethodFilesList, proto.FilesListParams{}, &l)
		for _, f := range l.Files {
			if f.Path == "shadow" && f.SHA256 != "" {
				t.Errorf("files.list hashed root's file for the user: %+v", f)
			}
		}
		_ = e
		intact(t, "files.list")
	})
	t.Run("proc.start output", func(t *testing.T) {
		plant(t, "link-out.stdout")
		c.call(proto.MethodProcStart, proto.ProcStartParams{Handle: "link-out", Argv: []string{"echo", "hi"}}, nil)
		c.call(proto.MethodProcWait, proto.ProcWaitParams{Handle: "link-out", TimeoutMs: 10000}, nil)
		intact(t, "proc.start")
	})
	t.Run("files.write", func(t *testing.T) {
		plant(t, "programs/p/main.c")
		c.call(proto.MethodFilesWrite, proto.FilesWriteParams{Path: "programs/p/main.c", Data: []byte("int main;"), Mode: 0o755}, nil)
		intact(t, "files.write")
		plant(t, "programs/p/more.c")
		c.call(proto.MethodFilesWrite, proto.FilesWriteParams{Path: "programs/p/more.c", Data: []byte("x"), Append: true}, nil)
		intact(t, "files.write append")
	})
	t.Run("the user's own hard links still work", func(t *testing.T) {
		var w proto.FileWritten
		c.mustCall(proto.MethodFilesWrite, proto.FilesWriteParams{Path: "own.txt", Data: []byte("mine")}, &w)
		if err := os.Link(filepath.Join(wd, "own.txt"), filepath.Join(wd, "own2.txt")); err != nil {
			t.Fatal(err)
		}
		var d proto.FileData
		c.mustCall(proto.MethodFilesRead, proto.FilesReadParams{Path: "own2.txt"}, &d)
		if string(d.Data) != "mine" {
			t.Errorf("the user's own hard-linked file read %q", d.Data)
		}
	})
}
