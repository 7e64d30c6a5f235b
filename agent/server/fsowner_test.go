package server

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rlab-dev/rlab/agent/proto"
)

// TestFilesAsOwner (issue 24, SECURITY 231): a root agent working for a
// user does every file operation in the work dir with the user's
// filesystem uid, gid and groups, so what the user points it at they could
// not reach is refused by the kernel, whatever the path: a folder of
// root's (0700; a running capture's .capture-* is one) reached through a
// symlink the user made after the agent opened the work dir, a hard link
// to root's 0600 file, a root 0600 file standing for one whose write the
// kernel judges by the writer (a delegated cgroup's cgroup.procs). The
// honest paths work, and what the agent makes is the user's from its
// first instant. Rows marked "root's reach" passed through root before
// (files of the user's own in root's folder, which usersFile let by).
func TestFilesAsOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: a root agent working for a user")
	}
	const nobody = 65534
	base := ownedTempDir(t, nobody)
	wd := filepath.Join(base, "w")
	c, _ := startAgent(t, Options{WorkDir: wd, Owner: &Owner{UID: nobody, GID: nobody}})
	// Made after the agent opened the work dir: root's folder, 0700, with
	// a file and a folder of the user's in it, and a root 0600 file.
	hide := filepath.Join(wd, ".hide")
	mk := func(p string, dir bool, uid int, mode os.FileMode, data string) {
		t.Helper()
		var err error
		if dir {
			err = os.Mkdir(p, mode)
		} else {
			err = os.WriteFile(p, []byte(data), mode)
		}
		if err == nil {
			err = os.Chown(p, uid, uid)
		}
		if err == nil {
			err = os.Chmod(p, mode)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	mk(hide, true, 0, 0o700, "")
	mk(filepath.Join(hide, "mine"), false, nobody, 0o600, "behind root's folder\n")
	mk(filepath.Join(hide, "sub"), true, nobody, 0o700, "")
	mk(filepath.Join(hide, "sub", "f"), false, nobody, 0o600, "x")
	mk(filepath.Join(base, "roots"), false, 0, 0o600, "root's\n")
	mk(filepath.Join(wd, "procs"), false, 0, 0o600, "") // cgroup.procs-like: root's, 0600
	link := func(target, name string) {
		t.Helper()
		if err := os.Symlink(target, filepath.Join(wd, name)); err != nil {
			t.Fatal(err)
		}
		os.Lchown(filepath.Join(wd, name), nobody, nobody)
	}
	link(".hide/mine", "peek")
	link(".hide/sub", "into")
	link(".hide", "hidden")
	if err := os.Link(filepath.Join(base, "roots"), filepath.Join(wd, "hard")); err != nil {
		t.Fatal(err)
	}

	read := func(path string) (string, *proto.Error) {
		var d proto.FileData
		e := c.call(proto.MethodFilesRead, proto.FilesReadParams{Path: path}, &d)
		return string(d.Data), e
	}
	write := func(path, data string, app bool) (string, *proto.Error) {
		return "", c.call(proto.MethodFilesWrite, proto.FilesWriteParams{Path: path, Data: []byte(data), Append: app}, nil)
	}
	list := func(dir string) (string, *proto.Error) {
		var l proto.FilesList
		e := c.call(proto.MethodFilesList, proto.FilesListParams{Dir: dir}, &l)
		var names []string
		for _, f := range l.Files {
			names = append(names, f.Path)
		}
		return strings.Join(names, " "), e
	}
	for _, tc := range []struct {
		name string
		op   func() (string, *proto.Error)
		// refused: the call fails or says nothing of what lies behind.
		refused bool
		check   func(t *testing.T)
	}{
		{name: "files.read through a symlink into root's folder (root's reach)", op: func() (string, *proto.Error) { return read("peek") }, refused: true},
		{name: "files.read through a symlinked folder (root's reach)", op: func() (string, *proto.Error) { return read("into/f") }, refused: true},
		{name: "files.read of a hard link to root's file", op: func() (string, *proto.Error) { return read("hard") }, refused: true},
		{name: "files.read of a root 0600 file", op: func() (string, *proto.Error) { return read("procs") }, refused: true},
		{name: "files.list of a symlinked folder", op: func() (string, *proto.Error) { return list("hidden") }, refused: true},
		{name: "files.list of the work dir passes over root's folder (root's reach)", op: func() (string, *proto.Error) {
			s, e := list(".")
			if e == nil && strings.Contains(s, ".hide") {
				return s, &proto.Error{Code: proto.CodeInternal, Message: "listed what lies behind root's folder: " + s}
			}
			return s, e
		}},
		{name: "files.write into root's folder through a symlinked folder (root's reach)", op: func() (string, *proto.Error) { return write("into/new.c", "int x;", false) }, refused: true,
			check: func(t *testing.T) {
				if _, err := os.Lstat(filepath.Join(hide, "sub", "new.c")); err == nil {
					t.Error("a file was made in a folder behind root's")
				}
			}},
		{name: "files.write append through a symlinked folder (root's reach)", op: func() (string, *proto.Error) { return write("into/f", "y", true) }, refused: true,
			check: func(t *testing.T) {
				if b, _ := os.ReadFile(filepath.Join(hide, "sub", "f")); string(b) != "x" {
					t.Errorf("appended to a file behind root's folder: %q", b)
				}
			}},
		{name: "files.write append to a root 0600 file (a cgroup.procs)", op: func() (string, *proto.Error) { return write("procs", "1\n", true) }, refused: true,
			check: func(t *testing.T) {
				if b, _ := os.ReadFile(filepath.Join(wd, "procs")); len(b) != 0 {
					t.Errorf("wrote root's file: %q", b)
				}
			}},
		{name: "files.write append to a hard link to root's file", op: func() (string, *proto.Error) { return write("hard", "y", true) }, refused: true,
			check: func(t *testing.T) {
				if b, _ := os.ReadFile(filepath.Join(base, "roots")); string(b) != "root's\n" {
					t.Errorf("wrote root's file: %q", b)
				}
			}},
		// The honest paths.
		{name: "files.write makes folders and a file, the user's", op: func() (string, *proto.Error) { return write("p/q/main.c", "int main;", false) },
			check: func(t *testing.T) {
				for _, p := range []string{"p", "p/q", "p/q/main.c"} {
					fi, err := os.Lstat(filepath.Join(wd, p))
					if err != nil {
						t.Fatal(err)
					}
					if st := fi.Sys().(*syscall.Stat_t); st.Uid != nobody || st.Gid != nobody {
						t.Errorf("%s is %d:%d, not the user's", p, st.Uid, st.Gid)
					}
				}
			}},
		{name: "files.write appends to the user's file", op: func() (string, *proto.Error) { return write("p/q/main.c", "int b;", true) },
			check: func(t *testing.T) {
				if b, _ := os.ReadFile(filepath.Join(wd, "p/q/main.c")); string(b) != "int main;int b;" {
					t.Errorf("read %q", b)
				}
			}},
		{name: "files.read of the user's file", op: func() (string, *proto.Error) {
			s, e := read("p/q/main.c")
			if e == nil && s != "int main;int b;" {
				return s, &proto.Error{Code: proto.CodeInternal, Message: "read " + s}
			}
			return s, e
		}},
		{name: "files.list of the user's folder", op: func() (string, *proto.Error) {
			s, e := list("p")
			if e == nil && s != "p/q/main.c" {
				return s, &proto.Error{Code: proto.CodeInternal, Message: "listed " + s}
			}
			return s, e
		}},
		{name: "proc.start's output files are the user's from the start", op: func() (string, *proto.Error) {
			if e := c.call(proto.MethodProcStart, proto.ProcStartParams{Handle: "o", Argv: []string{"echo", "hi"}}, nil); e != nil {
				return "", e
			}
			var r proto.ProcResult
			e := c.call(proto.MethodProcWait, proto.ProcWaitParams{Handle: "o", TimeoutMs: 10000}, &r)
			if e == nil && r.Stdout != "hi\n" {
				return "", &proto.Error{Code: proto.CodeInternal, Message: "stdout " + r.Stdout}
			}
			return r.Stdout, e
		}, check: func(t *testing.T) {
			fi, err := os.Lstat(filepath.Join(wd, "o.stdout"))
			if err != nil {
				t.Fatal(err)
			}
			if st := fi.Sys().(*syscall.Stat_t); st.Uid != nobody || st.Gid != nobody || fi.Mode().Perm() != 0o600 {
				t.Errorf("o.stdout is %d:%d %o, not the user's 0600", st.Uid, st.Gid, fi.Mode().Perm())
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, e := tc.op()
			if tc.refused && (e == nil || strings.Contains(out, "behind root's") || strings.Contains(out, "root's\n")) {
				t.Errorf("not refused: %q, %v", out, e)
			}
			if !tc.refused && e != nil {
				t.Errorf("refused: %v", e)
			}
			if tc.check != nil {
				tc.check(t)
			}
		})
	}
}
