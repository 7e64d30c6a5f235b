package vm

import (
	"crypto/ed25519"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/rlab-dev/rlab/engine/image"
)

// TestRemoveStaleSnapshots: once a snapshot is built, the image's
// snapshots of the same kind made for an older format are removed, and
// those made for another agent build past the keep most recently restored
// (snapshot.json's mtime); nothing else: another kind of VM, one a process
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
	// restored: how many hours ago each was last restored (its
	// snapshot.json's mtime); the two most recent other builds are kept.
	snaps := map[string]struct {
		k        snapshotKey
		restored int
	}{
		"new":           {cur, 0},
		"recent-agent":  {with(func(k *snapshotKey) { k.Agent = "bbbb" }), 1},
		"no-agent":      {with(func(k *snapshotKey) { k.Agent = "" }), 2},
		"stale-agent":   {with(func(k *snapshotKey) { k.Agent = "9999" }), 3},
		"staler-agent":  {with(func(k *snapshotKey) { k.Agent = "8888" }), 30},
		"older-format":  {with(func(k *snapshotKey) { k.Format, k.Agent = snapshotFormat-1, "" }), 0},
		"newer-format":  {with(func(k *snapshotKey) { k.Format = snapshotFormat + 1 }), 40},
		"other-memory":  {with(func(k *snapshotKey) { k.MemoryMiB, k.Agent = 2048, "bbbb" }), 40},
		"other-qemu":    {with(func(k *snapshotKey) { k.QEMUVersion, k.Agent = "QEMU emulator version 10.0.0", "bbbb" }), 40},
		"in-use":        {with(func(k *snapshotKey) { k.Agent = "cccc" }), 40},
		"build-locked":  {with(func(k *snapshotKey) { k.Agent = "dddd" }), 40},
		"half-built":    {with(func(k *snapshotKey) { k.Agent = "eeee" }), 40},
		"unlike-an-id/": {with(func(k *snapshotKey) { k.Agent = "ffff" }), 40},
	}
	dirOf := map[string]string{}
	now := time.Now()
	for name, sn := range snaps {
		id := sn.k.id()
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
		b, err := json.Marshal(sn.k)
		must(t, err)
		meta := filepath.Join(d, snapshotMeta)
		must(t, os.WriteFile(meta, b, 0o600))
		at := now.Add(-time.Duration(sn.restored) * time.Hour)
		must(t, os.Chtimes(meta, at, at))
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

	gone := removeStaleSnapshots(root, cur, keepOtherBuilds, image.InUse)
	want := []string{snaps["stale-agent"].k.id(), snaps["staler-agent"].k.id(), snaps["older-format"].k.id()}
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
	if gone := removeStaleSnapshots(root, cur, keepOtherBuilds, image.InUse); len(gone) != 0 {
		t.Errorf("second pass removed %v", gone)
	}
	if gone := removeStaleSnapshots(filepath.Join(root, "none"), cur, keepOtherBuilds, image.InUse); len(gone) != 0 {
		t.Errorf("missing root: removed %v", gone)
	}
	// With none kept, the other builds go too (in use and locked stay).
	gone = removeStaleSnapshots(root, cur, 0, image.InUse)
	want = []string{snaps["recent-agent"].k.id(), snaps["no-agent"].k.id()}
	slices.Sort(gone)
	slices.Sort(want)
	if !slices.Equal(gone, want) {
		t.Errorf("keep 0: removed %v, want %v", gone, want)
	}
}

// TestAlternatingBuildsKeepTheirSnapshots: two rlab builds restoring in
// turn on one cache (make test-vm: go test's binaries and bin/rlab) each
// keep theirs; a restore marks its snapshot the most recent, so the one
// the other build removes is the least recently restored. Before, each
// build removed the other's and every switch rebuilt one (a boot).
func TestAlternatingBuildsKeepTheirSnapshots(t *testing.T) {
	s := &Set{opts: Options{QEMU: "true"}}
	m := Machine{Image: &image.Image{Dir: filepath.Join(t.TempDir(), "debian-trixie-0123456789ab")}}
	base, err := s.keyFor(m)
	must(t, err)
	root := filepath.Join(m.Image.Dir, "snapshots")
	keys := map[string]snapshotKey{}
	for i, agent := range []string{"", "aaaa", "bbbb"} {
		k := base
		k.Agent = agent
		keys[agent] = k
		writeSnapshot(t, filepath.Join(root, k.id()), k)
		at := time.Now().Add(-time.Duration(10-i) * time.Hour)
		must(t, os.Chtimes(filepath.Join(root, k.id(), snapshotMeta), at, at))
	}
	// "" (the oldest) is restored: now the most recent.
	sn, err := holdSnapshot(filepath.Join(root, keys[""].id()), keys[""])
	must(t, err)
	sn.release()
	// A fourth build is made: of the three others, the least recently
	// restored goes ("aaaa"), the two most recent stay.
	k4 := base
	k4.Agent = "cccc"
	writeSnapshot(t, filepath.Join(root, k4.id()), k4)
	nobody := func(string) bool { return false }
	if gone := removeStaleSnapshots(root, k4, keepOtherBuilds, nobody); !slices.Equal(gone, []string{keys["aaaa"].id()}) {
		t.Errorf("removed %v, want [%s]", gone, keys["aaaa"].id())
	}
	for _, a := range []string{"", "bbbb"} {
		if _, err := os.Stat(filepath.Join(root, keys[a].id(), snapshotMeta)); err != nil {
			t.Errorf("agent %q: %v", a, err)
		}
	}
}

// writeSnapshot writes the files loadSnapshot reads for k into dir.
func writeSnapshot(t *testing.T, dir string, k snapshotKey) {
	t.Helper()
	must(t, os.MkdirAll(dir, 0o700))
	for _, f := range []string{"disk.qcow2", "state.bin", "login"} {
		must(t, os.WriteFile(filepath.Join(dir, f), []byte(f), 0o600))
	}
	pub, _, err := ed25519.GenerateKey(nil)
	must(t, err)
	sp, err := ssh.NewPublicKey(pub)
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, "host_key.pub"), ssh.MarshalAuthorizedKey(sp), 0o600))
	b, err := json.Marshal(k)
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, snapshotMeta), b, 0o600))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
