package run

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// TestLinkFileCopiesWhenLinkFails: where a student folder cannot hard-link
// the run directory's file (another file system: the link is made to
// fail), linkFile copies it as a stream, 0600, within a small allocation
// however large the file (it read the whole file into memory, 16 MiB for
// 16 MiB, once per folder 16 at a time); a dst already linked to src is
// replaced, src untouched; a symlink is not followed and a FIFO not waited
// on (the whole-file read copied the symlink's target and blocked forever
// on the FIFO).
func TestLinkFileCopiesWhenLinkFails(t *testing.T) {
	old := hardLink
	hardLink = func(src, dst string) error { return &os.LinkError{Op: "link", Old: src, New: dst, Err: syscall.EXDEV} }
	t.Cleanup(func() { hardLink = old })

	big := make([]byte, 16<<20)
	copy(big, "head")
	copy(big[len(big)-4:], "tail")
	for _, tc := range []struct {
		name    string
		content []byte
		setup   func(t *testing.T, src, dst string) // makes src (and dst)
		wantErr bool
		maxHeap uint64 // bytes linkFile may allocate; 0: no bound
	}{
		{name: "small", content: []byte("facts\n")},
		{name: "larger than memory should hold", content: big, maxHeap: 1 << 20},
		{name: "dst already a link to src", content: []byte("shared log\n"), setup: func(t *testing.T, src, dst string) {
			if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := old(src, dst); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "symlink", wantErr: true, setup: func(t *testing.T, src, dst string) {
			secret := filepath.Join(t.TempDir(), "id_ed25519")
			if err := os.WriteFile(secret, []byte("PRIVATE KEY"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(secret, src); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "fifo", wantErr: true, setup: func(t *testing.T, src, dst string) {
			if err := syscall.Mkfifo(src, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			src, dst := filepath.Join(dir, "run", "f"), filepath.Join(dir, "students", "s1", "hosts", "h", "f")
			if err := os.MkdirAll(filepath.Dir(src), 0o700); err != nil {
				t.Fatal(err)
			}
			if tc.content != nil {
				if err := os.WriteFile(src, tc.content, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if tc.setup != nil {
				tc.setup(t, src, dst)
			}
			done := make(chan error, 1)
			var m0, m1 runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&m0)
			go func() { done <- linkFile(src, dst) }()
			var err error
			select {
			case err = <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("linkFile still running after 20 s")
			}
			runtime.ReadMemStats(&m1)
			if tc.wantErr {
				if err == nil {
					got, _ := os.ReadFile(dst)
					t.Fatalf("copied (%q), want an error", got)
				}
				if _, serr := os.Lstat(dst); serr == nil {
					t.Errorf("%s made after the error %v", dst, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if a := m1.TotalAlloc - m0.TotalAlloc; tc.maxHeap > 0 && a > tc.maxHeap {
				t.Errorf("copying %d bytes allocated %d bytes", len(tc.content), a)
			}
			for _, f := range []string{src, dst} {
				if got, err := os.ReadFile(f); err != nil || !bytes.Equal(got, tc.content) {
					t.Errorf("%s: %d bytes (%v), want the %d of src", f, len(got), err, len(tc.content))
				}
			}
			si, _ := os.Stat(src)
			di, err := os.Stat(dst)
			if err != nil {
				t.Fatal(err)
			}
			if di.Mode().Perm() != 0o600 || os.SameFile(si, di) {
				t.Errorf("dst mode %v, same file as src %v; want a copy, 0600", di.Mode().Perm(), os.SameFile(si, di))
			}
			if ents, _ := os.ReadDir(filepath.Dir(dst)); len(ents) != 1 {
				t.Errorf("dst's folder holds %d entries, want 1 (no temporary copy left)", len(ents))
			}
		})
	}
}
