package vm

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestSnapshotLockSurvivesRemoval: removeUnlocked unlinks a snapshot's lock
// file while it holds it. A builder (A) that opened the lock file just
// before a remover of another agent build (B) removed the folder and
// unlinked the file then locked the unlinked file, and a third rlab (C)
// opened a new file at the path and locked it at once: two builders of one
// snapshot (C removes A's half-built folder), or a remover of a snapshot
// a VM restores from. Now A's lock is on the file the path names, so C's
// lock, hold and removal all find it held. Files in a temp cache dir; no
// VM.
func TestSnapshotLockSurvivesRemoval(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "snapshots", "0123456789abcdef")
	must(t, os.MkdirAll(dir, 0o700))
	must(t, os.WriteFile(filepath.Join(dir, snapshotMeta), []byte(`{}`), 0o600))
	nobody := func(string) bool { return false }

	removed := false
	lockOpened = func(string) {
		if removed {
			return
		}
		removed = true // B, between A's open and A's lock
		if !removeUnlocked(dir, nobody) {
			t.Error("B did not remove the stale snapshot")
		}
	}
	a, err := lockPath(dir+".lock", syscall.LOCK_EX) // A: about to build
	lockOpened = nil
	if err != nil {
		t.Fatalf("A's build lock: %v", err)
	}
	defer a.Close()
	if !removed {
		t.Fatal("B never ran")
	}
	must(t, os.MkdirAll(dir, 0o700)) // A builds
	must(t, os.WriteFile(filepath.Join(dir, snapshotMeta), []byte(`{}`), 0o600))

	// C: its build lock, a hold to restore from it, a removal as stale.
	if c, err := lockPath(dir+".lock", syscall.LOCK_EX); err == nil {
		c.Close()
		t.Error("C took the build lock A holds")
	} else if !errors.Is(err, syscall.EWOULDBLOCK) {
		t.Errorf("C's build lock: %v, want EWOULDBLOCK", err)
	}
	if _, err := holdSnapshot(dir, snapshotKey{}); err == nil {
		t.Error("C held the snapshot A is building")
	}
	if removeUnlocked(dir, nobody) {
		t.Error("C removed the snapshot A is building")
	}
	if _, err := os.Stat(filepath.Join(dir, snapshotMeta)); err != nil {
		t.Errorf("A's snapshot: %v", err)
	}
}
