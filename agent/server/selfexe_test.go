package server

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// safeBase makes a folder only root can write in, whose every parent is
// root's and not writable by others (t.TempDir is under /tmp, mode 1777,
// which the check refuses by itself).
func safeBase(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the files must belong to root")
	}
	for d := "/var/lib"; ; d = filepath.Dir(d) {
		if fi, err := os.Stat(d); err != nil || fi.Mode().Perm()&0o022 != 0 {
			t.Skipf("%s is not a root-only folder to make the test tree in", d)
		}
		if d == "/" {
			break
		}
	}
	base, err := os.MkdirTemp("/var/lib", "rlab-selfexe-test-")
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	return base
}

// TestCheckRootExecutable: a root agent working for a user runs only from
// a root-owned file, not writable by group or others, in folders that are
// all root's and not writable by others. Each case below is a sudoers rule
// an admin could write whose file the login user can change (SECURITY
// 176); the first is the safe install.
func TestCheckRootExecutable(t *testing.T) {
	base := safeBase(t)
	cases := []struct {
		name  string
		setup func(t *testing.T, exe string) // exe is base/<case>/agent/HASH/rlab-agent, root 0755
		want  string                         // "" is no refusal
	}{
		{"root-owned install", func(*testing.T, string) {}, ""},
		{"the user's own file", func(t *testing.T, exe string) { chown(t, exe, 65534) }, "executable " + "%EXE% belongs to uid 65534, not root"},
		{"group-writable file", func(t *testing.T, exe string) { chmod(t, exe, 0o775) }, "writable by its group or others (mode 0775)"},
		{"world-writable file", func(t *testing.T, exe string) { chmod(t, exe, 0o757) }, "(mode 0757)"},
		{"the user's hash folder", func(t *testing.T, exe string) { chown(t, filepath.Dir(exe), 65534) }, "folder above the executable %DIR% belongs to uid 65534"},
		{"the user's folder higher up (a home)", func(t *testing.T, exe string) { chown(t, filepath.Dir(filepath.Dir(filepath.Dir(exe))), 65534) }, "belongs to uid 65534, not root"},
		{"world-writable folder", func(t *testing.T, exe string) { chmod(t, filepath.Dir(exe), 0o777) }, "writable by its group or others (mode 0777)"},
		{"sticky world-writable folder (/tmp)", func(t *testing.T, exe string) { chmod(t, filepath.Dir(exe), 0o1777) }, "writable by its group or others"},
		{"group-writable folder", func(t *testing.T, exe string) { chmod(t, filepath.Dir(filepath.Dir(exe)), 0o775) }, "(mode 0775)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			exe := filepath.Join(base, strings.ReplaceAll(c.name, " ", "_"), "agent", "HASH", "rlab-agent")
			if err := os.MkdirAll(filepath.Dir(exe), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(exe, []byte("#!/bin/false\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			c.setup(t, exe)
			f, err := os.Open(exe)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			err = checkRootExecutable(f, exe)
			want := strings.NewReplacer("%EXE%", exe, "%DIR%", filepath.Dir(exe)).Replace(c.want)
			switch {
			case want == "" && err != nil:
				t.Fatalf("refused the safe install: %v", err)
			case want != "" && err == nil:
				t.Fatalf("not refused, want %q", want)
			case want != "" && (!strings.Contains(err.Error(), want) || !errors.Is(err, ErrUnsafeExecutable)):
				t.Fatalf("error %q, want ErrUnsafeExecutable saying %q", err, want)
			case want != "" && !strings.Contains(err.Error(), SystemAgentDir) || want != "" && !strings.Contains(err.Error(), "SECURITY.md"):
				t.Errorf("error %q does not say what to do (install under %s, the rule in SECURITY.md)", err, SystemAgentDir)
			}
		})
	}
}

// TestCheckRootExecutableReplaced: the file at the path is no longer the
// one running (renamed away and another put there): the folders checked
// would not be the ones it ran from.
func TestCheckRootExecutableReplaced(t *testing.T) {
	base := safeBase(t)
	exe := filepath.Join(base, "rlab-agent")
	if err := os.WriteFile(exe, []byte("#!/bin/false\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := os.Rename(exe, exe+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exe, []byte("#!/bin/false\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := checkRootExecutable(f, exe); err == nil || !strings.Contains(err.Error(), "no longer the file this agent runs from") {
		t.Fatalf("replaced executable: %v, want a refusal", err)
	}
}

// TestCheckRootExecutableSelf checks the real /proc/self/exe: this test
// binary, built under $TMPDIR (/tmp, mode 1777, or some other folder
// others can write in), is refused naming that folder; one built in a
// safe place is accepted.
func TestCheckRootExecutableSelf(t *testing.T) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Skip(err)
	}
	var unsafe string // the first element an independent walk finds unsafe
	for p := exe; ; p = filepath.Dir(p) {
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		if uid := fileUID(fi); uid != 0 || fi.Mode().Perm()&0o022 != 0 {
			unsafe = p
		}
		if p == "/" {
			break
		}
	}
	err = CheckRootExecutable()
	switch {
	case unsafe == "" && err != nil:
		t.Fatalf("test binary %s in root's folders refused: %v", exe, err)
	case unsafe != "" && err == nil:
		t.Fatalf("test binary %s accepted, though %s is not root's alone", exe, unsafe)
	case unsafe != "" && !errors.Is(err, ErrUnsafeExecutable):
		t.Fatalf("test binary %s: %v, want ErrUnsafeExecutable", exe, err)
	}
	t.Logf("%s: %v", exe, err)
}

func chown(t *testing.T, p string, uid int) {
	t.Helper()
	if err := os.Chown(p, uid, uid); err != nil {
		t.Fatal(err)
	}
}

func chmod(t *testing.T, p string, m os.FileMode) {
	t.Helper()
	if m&0o1000 != 0 {
		m = m&0o777 | os.ModeSticky
	}
	if err := os.Chmod(p, m); err != nil {
		t.Fatal(err)
	}
}

func fileUID(fi os.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}
