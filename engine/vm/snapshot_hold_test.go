package vm

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/rlab-dev/rlab/engine/image"
)

// TestRestoreHoldsSnapshot: the snapshot a VM is to restore from is not
// removed as stale by an rlab built with another agent between the
// moment snapshotFor finds it and the moment its qemu has the files open
// (image.InUse cannot see it yet: nothing has it open). snapshotFor
// found it without a hold, and removeStaleSnapshots, after that other
// rlab built its own, removed it: the VM's start then failed at its
// overlay or saved state. Held (shared lock), it is kept until released,
// then removed as before. "true" stands for qemu: no VM is booted.
func TestRestoreHoldsSnapshot(t *testing.T) {
	s := &Set{opts: Options{QEMU: "true"}}
	m := Machine{Image: &image.Image{Dir: filepath.Join(t.TempDir(), "debian-trixie-0123456789ab")}}
	k, err := s.keyFor(m)
	must(t, err)
	root := filepath.Join(m.Image.Dir, "snapshots")
	dir := filepath.Join(root, k.id())
	writeSnapshot(t, dir, k)

	sn, err := s.snapshotFor(context.Background(), m)
	if err != nil {
		t.Fatalf("snapshotFor: %v", err)
	}
	// Another rlab, its agent another build, has built its own snapshot.
	other := k
	other.Agent = "ffff"
	nobodyHasItOpen := func(string) bool { return false }
	if gone := removeStaleSnapshots(root, other, 0, nobodyHasItOpen); len(gone) != 0 {
		t.Errorf("removed %v while a VM was starting from it", gone)
	}
	if _, err := os.Stat(sn.Disk); err != nil {
		t.Fatalf("the disk the VM restores from: %v", err)
	}
	sn.release()
	if gone := removeStaleSnapshots(root, other, 0, nobodyHasItOpen); len(gone) != 1 || gone[0] != k.id() {
		t.Errorf("released: removed %v, want %s", gone, k.id())
	}
	// Being removed (its lock held exclusive), it is not restored from.
	if _, err := holdSnapshot(dir, k); err == nil {
		t.Error("a removed snapshot was held")
	}
}
