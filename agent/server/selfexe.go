package server

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/rlab-dev/rlab/agent/proto"
)

// SystemAgentDir is proto.SystemAgentDir, the root-owned install the
// refusals name.
const SystemAgentDir = proto.SystemAgentDir

// selfExe is the running executable as the kernel names it; a variable so
// tests can point it elsewhere.
var selfExe = "/proc/self/exe"

// ErrUnsafeExecutable is wrapped by CheckRootExecutable's refusals.
var ErrUnsafeExecutable = errors.New("unsafe executable for a root agent")

// CheckRootExecutable refuses a root agent working for a user (become,
// --owner) that runs from a file someone other than root can write, or from
// a folder (any folder above it) someone other than root can write in.
//
// Such an agent was started by a sudoers rule naming a file the login user
// can change: the old rule of SECURITY.md named the agent in the user's own
// cache with its sha256, and sudo checks the digest and only then executes
// the file, which the user rewrites in between (sudoers(5) says the digest
// is no defence for a file the user can write; attack round 11 got uid 0
// three times in three tries, SECURITY 176). The check cannot stop a user's
// own binary (that never runs it); it makes the unsafe rule fail loudly, so
// an honest admin replaces it instead of keeping it.
func CheckRootExecutable() error {
	f, err := os.Open(selfExe)
	if err != nil {
		return fmt.Errorf("check own executable %s: %w", selfExe, err)
	}
	defer f.Close()
	target, err := os.Readlink(selfExe)
	if err != nil {
		return fmt.Errorf("check own executable %s: %w", selfExe, err)
	}
	return checkRootExecutable(f, target)
}

// checkRootExecutable checks the executable open as f, found at path (the
// link /proc/self/exe names), and every folder above path.
func checkRootExecutable(f *os.File, path string) error {
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("check own executable %s: %w", path, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("check own executable %s: no owner to check", path)
	}
	// The kernel marks an executable replaced or removed since it ran.
	path = strings.TrimSuffix(path, " (deleted)")
	if !filepath.IsAbs(path) {
		return fmt.Errorf("check own executable %q: not an absolute path", path)
	}
	if err := safeForRoot(path, fi, st, false); err != nil {
		return err
	}
	// The file at the path now must be the one running: the folders
	// checked below are then the ones it was started from.
	pfi, err := os.Lstat(path)
	if err != nil {
		return fmt.Errorf("check own executable %s: %w", path, err)
	}
	if pst, ok := pfi.Sys().(*syscall.Stat_t); !ok || pst.Dev != st.Dev || pst.Ino != st.Ino {
		return fmt.Errorf("%w: %s is no longer the file this agent runs from (replaced since it started)%s", ErrUnsafeExecutable, path, unsafeFix)
	}
	for d := filepath.Dir(path); ; d = filepath.Dir(d) {
		dfi, err := os.Lstat(d)
		if err != nil {
			return fmt.Errorf("check own executable %s: folder %s: %w", path, d, err)
		}
		dst, ok := dfi.Sys().(*syscall.Stat_t)
		if !ok {
			return fmt.Errorf("check own executable %s: folder %s: no owner to check", path, d)
		}
		if err := safeForRoot(d, dfi, dst, true); err != nil {
			return err
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// unsafeFix is what every refusal tells the admin to do.
const unsafeFix = ": refusing to run as root for a user (become) from it, since whoever can change it could run their own program as root through the sudoers rule that started this agent; install the root-owned copy (`rlab agent export`, then `install -D -o root -g root -m 0755 FILE " + SystemAgentDir + "/<sha256>/rlab-agent`) and name that path in the sudoers rule (SECURITY.md, \"Running as non-root: sudoers\")"

// safeForRoot reports why a root agent must not trust name: not owned by
// root, writable by group or others, or (for a folder) not a folder.
func safeForRoot(name string, fi os.FileInfo, st *syscall.Stat_t, dir bool) error {
	what := "executable"
	if dir {
		what = "folder above the executable"
		if !fi.IsDir() {
			return fmt.Errorf("%w: %s %s is not a folder (mode %s)%s", ErrUnsafeExecutable, what, name, fi.Mode(), unsafeFix)
		}
	} else if !fi.Mode().IsRegular() {
		return fmt.Errorf("%w: %s %s is not a regular file (mode %s)%s", ErrUnsafeExecutable, what, name, fi.Mode(), unsafeFix)
	}
	if st.Uid != 0 {
		return fmt.Errorf("%w: %s %s belongs to uid %d, not root%s", ErrUnsafeExecutable, what, name, st.Uid, unsafeFix)
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return fmt.Errorf("%w: %s %s is writable by its group or others (mode %04o)%s", ErrUnsafeExecutable, what, name, perm, unsafeFix)
	}
	return nil
}
