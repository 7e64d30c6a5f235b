package server

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOwnerWorkDirOnCgroupFSRefused: a root agent working for a user refuses
// a work dir on a kernel filesystem. With systemd the user owns a cgroup
// (user@UID.service is delegated to them), and the sudoers rule's * with a
// symlink of theirs made a cgroup of it the work dir: files.write then wrote
// a root process's pid to its cgroup.procs as root, which the kernel checks
// by the writer's credentials, and the user froze or killed that process
// with the cgroup's cgroup.kill (attack round 16, host side, high; the
// user's own write was refused: Permission denied).
func TestOwnerWorkDirOnCgroupFSRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown")
	}
	mnt := cgroup2Mount()
	if mnt == "" {
		t.Skip("no cgroup2 mount")
	}
	const uid, gid = 65534, 65534
	deleg := filepath.Join(mnt, fmt.Sprintf("rlab-test-deleg-%d", os.Getpid()))
	if err := os.Mkdir(deleg, 0o755); err != nil {
		t.Skipf("cannot make a cgroup: %v", err)
	}
	sub := filepath.Join(deleg, "sub")
	t.Cleanup(func() {
		os.Remove(sub)
		os.Remove(deleg)
	})
	// As systemd delegates user@UID.service: the folder and its
	// cgroup.procs are the user's.
	for _, p := range []string{deleg, filepath.Join(deleg, "cgroup.procs")} {
		if err := os.Chown(p, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	for _, wd := range []string{deleg, sub} {
		s, err := New(Options{WorkDir: wd, Hash: "h", Owner: &Owner{UID: uid, GID: gid}})
		if err == nil {
			s.wd.close()
			t.Errorf("New(work dir %s, a cgroup of the owner's) accepted: root's writes there are kernel requests (cgroup.procs moves any process)", wd)
			continue
		}
		if !strings.Contains(err.Error(), "cgroup") {
			t.Errorf("New(work dir %s): %v, want it to name the cgroup filesystem", wd, err)
		}
	}
}
