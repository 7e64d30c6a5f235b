package server

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/rlab-dev/rlab/agent/proto"
)

// TestRenamedIntoWorkDir: a root agent working for a user gives to the user
// only the files it made itself, checked on the open file. Before, any
// root-owned file with one name passed as "one the agent made": the user
// could rename a root file they can move (one root left in their home)
// into the work dir, over a file the agent had made, between two parts of
// a files.write, or over a capture's file before its stop, and root then
// appended to it, chmodded it and chowned it to the user (issue 24, round
// 3 lows, item 4). A folder files.write makes is given to the user through
// the open folder, not by name.
func TestRenamedIntoWorkDir(t *testing.T) {
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
	owner := &Owner{UID: uid, GID: gid}
	c, _ := startAgent(t, Options{WorkDir: wd, Owner: owner})
	const secret = "root's own\n"
	victim := filepath.Join(base, "roots") // root's, 0600, one name, in the user's folder
	// renameIn puts root's file at name in the work dir, as the user would.
	renameIn := func(t *testing.T, name string) string {
		t.Helper()
		if err := os.WriteFile(victim, []byte(secret), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(victim, 0, 0); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(wd, name)
		if err := os.Rename(victim, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	intact := func(t *testing.T, p string) {
		t.Helper()
		b, err := os.ReadFile(p)
		fi, serr := os.Stat(p)
		if err != nil || serr != nil {
			t.Fatalf("%v %v", err, serr)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if string(b) != secret || st.Uid != 0 || fi.Mode().Perm() != 0o600 {
			t.Errorf("root's file renamed in was changed: uid %d mode %o content %q", st.Uid, fi.Mode().Perm(), b)
		}
	}

	t.Run("files.write append", func(t *testing.T) {
		c.mustCall(proto.MethodFilesWrite, proto.FilesWriteParams{Path: "programs/p/a.c", Data: []byte("int a;")}, nil)
		p := renameIn(t, "programs/p/a.c")
		if e := c.call(proto.MethodFilesWrite, proto.FilesWriteParams{Path: "programs/p/a.c", Data: []byte("int b;"), Append: true}, nil); e == nil {
			t.Error("files.write appended to a root file the user renamed in")
		}
		intact(t, p)
	})
	t.Run("files.write append to its own part", func(t *testing.T) {
		c.mustCall(proto.MethodFilesWrite, proto.FilesWriteParams{Path: "programs/p/b.c", Data: []byte("int a;")}, nil)
		c.mustCall(proto.MethodFilesWrite, proto.FilesWriteParams{Path: "programs/p/b.c", Data: []byte("int b;"), Append: true}, nil)
		if b, _ := os.ReadFile(filepath.Join(wd, "programs/p/b.c")); string(b) != "int a;int b;" {
			t.Errorf("the agent's own file in two parts reads %q", b)
		}
	})
	w, err := openWorkDir(wd, owner)
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	t.Run("a capture's file given to the user", func(t *testing.T) {
		p := renameIn(t, "cap.pcap")
		if err := w.own("cap.pcap", owner); err == nil {
			t.Error("own gave the user a root file renamed in")
		}
		intact(t, p)
	})
	t.Run("a file the agent made is given to the user", func(t *testing.T) {
		f, err := w.createNew("made.pcap", 0o644)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		if err := w.own("made.pcap", owner); err != nil {
			t.Fatal(err)
		}
		fi, _ := os.Stat(filepath.Join(wd, "made.pcap"))
		if st := fi.Sys().(*syscall.Stat_t); st.Uid != uid || fi.Mode().Perm() != 0o600 {
			t.Errorf("the agent's own file: uid %d mode %o, want the user's, 0600", st.Uid, fi.Mode().Perm())
		}
	})
	t.Run("a file given to the user is no longer one the agent made", func(t *testing.T) {
		// Else, once the user removes it, a new file of root's that gets
		// its inode number passes for the agent's own (agentMade): the
		// user appended to a root agent's capture record that way (attack
		// round 15). Each way the agent gives a file away forgets it.
		made := func(name string) bool {
			fi, err := os.Stat(filepath.Join(wd, name))
			if err != nil {
				t.Fatal(err)
			}
			st := fi.Sys().(*syscall.Stat_t)
			w.mu.Lock()
			defer w.mu.Unlock()
			return w.made[[2]uint64{uint64(st.Dev), st.Ino}]
		}
		f, err := w.create("given.log", owner)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		if made("given.log") {
			t.Error("create for the user: the file is still listed as the agent's")
		}
		f, err = w.createNew("owned.pcap", 0o644)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		if !made("owned.pcap") {
			t.Fatal("createNew: the agent's new file is not listed as its own")
		}
		if err := w.own("owned.pcap", owner); err != nil {
			t.Fatal(err)
		}
		if made("owned.pcap") {
			t.Error("own: the file given to the user is still listed as the agent's")
		}
	})
	t.Run("a folder's chown goes through the open folder", func(t *testing.T) {
		p := renameIn(t, "dir")
		if err := w.ownMadeDir("dir", owner); err == nil {
			t.Error("ownMadeDir gave the user a root file put where the folder was")
		}
		intact(t, p)
		if err := os.Mkdir(filepath.Join(wd, "d2"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := w.ownMadeDir("d2", owner); err != nil {
			t.Fatal(err)
		}
		if fi, _ := os.Stat(filepath.Join(wd, "d2")); fi.Sys().(*syscall.Stat_t).Uid != uid {
			t.Error("a folder the agent made is not the user's")
		}
	})
}
