package vm

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/rlab-dev/rlab/engine/image"
)

// TestRemoveStaleSnapshots: once a snapshot is built, the image's
// snapshots of the same kind made for another agent build or an older
// format are removed, and nothing else: another kind of VM, one a process
// has open (a restored VM's qemu, checked through /proc as image prune
// does), one whose build lock is held, a folder without a readable
// snapshot.json, a newer format, and the new one itself. Files in a temp
// cache dir; no VM is booted.
func TestRemoveStaleSnapshots(t *testing.T) {
	root := filepath.Join(t.TempDir(), "debian-trixie-0123456789ab", "snapshots")
	cur := snapshotKey{Format: snapshotFormat, QEMU: "/usr/bin/qemu-system-x86_64", QEMUVersion: "QEMU emulator version 9.2.0",
		QEMUBinary: "1 bytes", Image: "debian-trixie-0123456789ab", Accel: "tcg", MemoryMiB: 1024, CPUs: 1, NICs: 1, Agent: "aaaa"}
	with := func(f func(k *snapshotKey)) snapshotKey {
		k := cur
		f(&k)
		return k
	}
	snaps := map[string]snapshotKey{
		"new":           cur,
		"other-agent":   with(func(k *snapshotKey) { k.Agent = "bbbb" }),
		"no-agent":      with(func(k *snapshotKey) { k.Agent = "" }),
		"older-format":  with(func(k *snapshotKey) { k.Format, k.Agent = snapshotFormat-1, "" }),
		"newer-format":  with(func(k *snapshotKey) { k.Format = snapshotFormat + 1 }),
		"other-memory":  with(func(k *snapshotKey) { k.MemoryMiB, k.Agent = 2048, "bbbb" }),
		"other-qemu":    with(func(k *snapshotKey) { k.QEMUVersion, k.Agent = "QEMU emulator version 10.0.0", "bbbb" }),
		"in-use":        with(func(k *snapshotKey) { k.Agent = "cccc" }),
		"build-locked":  with(func(k *snapshotKey) { k.Agent = "dddd" }),
		"half-built":    with(func(k *snapshotKey) { k.Agent = "eeee" }),
		"unlike-an-id/": with(func(k *snapshotKey) { k.Agent = "ffff" }),
	}
	dirOf := map[string]string{}
	for name, k := range snaps {
		id := k.id()
		if name == "unlike-an-id/" {
			id = "keep-me"
		}
		d := filepath.Join(root, id)
		dirOf[name] = d
		must(t, os.MkdirAll(d, 0o700))
		must(t, os.WriteFile(filepath.Join(d, "disk.qcow2"), []byte("disk"), 0o400))
		if name == "half-built" {
			continue
		}
		b, err := json.Marshal(k)
		must(t, err)
		must(t, os.WriteFile(filepath.Join(d, snapshotMeta), b, 0o600))
	}
	// A restored VM's qemu holds the disk open: this process, through /proc.
	f, err := os.Open(filepath.Join(dirOf["in-use"], "disk.qcow2"))
	must(t, err)
	defer f.Close()
	// Another rlab building that key holds its lock.
	lf, err := os.OpenFile(dirOf["build-locked"]+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	must(t, err)
	defer lf.Close()
	must(t, syscall.Flock(int(lf.Fd()), syscall.LOCK_EX))

	gone := removeStaleSnapshots(root, cur, image.InUse)
	want := []string{snaps["other-agent"].id(), snaps["no-agent"].id(), snaps["older-format"].id()}
	slices.Sort(gone)
	slices.Sort(want)
	if !slices.Equal(gone, want) {
		t.Errorf("removed %v, want %v", gone, want)
	}
	for name, d := range dirOf {
		_, err := os.Stat(d)
		removed := slices.Contains(want, filepath.Base(d))
		if removed != os.IsNotExist(err) {
			t.Errorf("%s (%s): removed %v, stat %v", name, filepath.Base(d), removed, err)
		}
		if _, err := os.Stat(d + ".lock"); removed && err == nil {
			t.Errorf("%s: its lock file is left", name)
		}
	}
	// Nothing is left to remove; a missing folder is nothing to do.
	if gone := removeStaleSnapshots(root, cur, image.InUse); len(gone) != 0 {
		t.Errorf("second pass removed %v", gone)
	}
	if gone := removeStaleSnapshots(filepath.Join(root, "none"), cur, image.InUse); len(gone) != 0 {
		t.Errorf("missing root: removed %v", gone)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
