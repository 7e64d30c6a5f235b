package lab

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLabFolderSpecialFiles: a lab folder (a course repository, a tarball)
// holding a *.hcl that is a FIFO hung `rlab validate DIR` for good, and one
// that is a symlink to /dev/zero (git keeps symlinks) took 6 GB in 8 s
// and on until the machine ran out. Each is now refused by name at once,
// the folder's other files still read.
func TestLabFolderSpecialFiles(t *testing.T) {
	tests := []struct {
		name string
		make func(p string) error
		want string
	}{
		{"fifo", func(p string) error { return syscall.Mkfifo(p, 0o644) }, "not a regular file"},
		// Out of the folder, it is refused as such (TestLabFilesConfined).
		{"symlink to /dev/zero", func(p string) error { return os.Symlink("/dev/zero", p) }, "symlink out of the lab's folder"},
		{"too large", func(p string) error {
			return os.WriteFile(p, []byte("# "+strings.Repeat("a", MaxFileBytes)+"\n"), 0o644)
		}, "Lab file too large"},
	}
	src, err := os.ReadFile(filepath.Join("..", "..", "labs", "found.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			must(t, os.WriteFile(filepath.Join(dir, "found.hcl"), src, 0o644))
			if err := tt.make(filepath.Join(dir, "zz.hcl")); err != nil {
				t.Fatal(err)
			}
			done := make(chan string, 1)
			go func() {
				// rlab validate DIR first splits the folder into labs
				// (Units), reading each file's lab blocks: the FIFO hung
				// there too.
				Split(dir)
				_, diags := Load([]string{dir}, LoadOptions{})
				done <- diagLines(diags)
			}()
			select {
			case got := <-done:
				if !strings.Contains(got, "zz.hcl") || !strings.Contains(got, tt.want) {
					t.Errorf("want zz.hcl refused (%q), got:\n%s", tt.want, got)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("loading the folder did not end within 10 s")
			}
		})
	}
}
