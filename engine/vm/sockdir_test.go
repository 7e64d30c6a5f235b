package vm

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestStopFromStateSockDir: the state rlab down reads may come from a
// received run directory; its sock_dir is removed only when it is a
// socket folder rlab makes (rlab-vm-* directly in the temp folder, 0700,
// the user's, no symlink), never another folder of that name.
func TestStopFromStateSockDir(t *testing.T) {
	elsewhere := filepath.Join(t.TempDir(), "rlab-vm-notes") // a folder of the user's, not in the temp folder itself
	ours, err := os.MkdirTemp("", "rlab-vm-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(ours) })
	loose, err := os.MkdirTemp("", "rlab-vm-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(loose) })
	os.Chmod(loose, 0o755)
	target := t.TempDir()
	link := filepath.Join(os.TempDir(), "rlab-vm-link-"+filepath.Base(target))
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(link) })
	if err := os.MkdirAll(elsewhere, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		dir    string
		remove bool
	}{
		{elsewhere, false}, {loose, false}, {link, false}, {ours, true},
	} {
		os.WriteFile(filepath.Join(tc.dir, "keep"), []byte("x"), 0o600)
		if err := StopFromState(context.Background(), State{SockDir: tc.dir}, 0); err != nil {
			t.Fatal(err)
		}
		_, err := os.Lstat(tc.dir)
		if gone := os.IsNotExist(err); gone != tc.remove {
			t.Errorf("sock_dir %s: removed %v, want %v", tc.dir, gone, tc.remove)
		}
	}
	if _, err := os.Stat(filepath.Join(target, "keep")); err != nil {
		t.Errorf("the folder behind a symlink lost its file: %v", err)
	}
}
