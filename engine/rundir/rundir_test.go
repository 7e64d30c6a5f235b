package rundir

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestConfined: Open and ReadFile read a run directory's own regular files
// (through a symlink that stays inside too) and refuse, without blocking,
// a path or symlink out of it, a FIFO, a device and a file over MaxFile.
func TestConfined(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "run")
	must(t, os.MkdirAll(filepath.Join(dir, "lab"), 0o755))
	must(t, os.WriteFile(filepath.Join(base, "secret"), []byte("SECRET"), 0o600))
	must(t, os.WriteFile(filepath.Join(dir, "results.json"), []byte("{}"), 0o644))
	must(t, os.Symlink("../results.json", filepath.Join(dir, "lab", "in.hcl")))
	must(t, os.Symlink(filepath.Join(base, "secret"), filepath.Join(dir, "lab", "abs.hcl")))
	must(t, os.Symlink("../../secret", filepath.Join(dir, "lab", "rel.hcl")))
	must(t, os.Symlink(base, filepath.Join(dir, "up")))
	must(t, syscall.Mkfifo(filepath.Join(dir, "cap.pcap"), 0o600))
	must(t, os.Symlink("/dev/zero", filepath.Join(dir, "zero.pcap")))
	big, err := os.Create(filepath.Join(dir, "big.json"))
	must(t, err)
	must(t, big.Truncate(MaxFile+1)) // sparse
	big.Close()
	tests := []struct {
		rel  string
		want string
		err  error
	}{
		{"results.json", "{}", nil},
		{"lab/in.hcl", "{}", nil},
		{"lab/abs.hcl", "", ErrOutside},
		{"lab/rel.hcl", "", ErrOutside},
		{"up/secret", "", ErrOutside},
		{"../secret", "", ErrOutside},
		{"cap.pcap", "", ErrNotRegular},
		{"lab", "", ErrNotRegular},
		{"zero.pcap", "", ErrOutside},
		{"missing", "", os.ErrNotExist},
	}
	for _, tc := range tests {
		t.Run(tc.rel, func(t *testing.T) {
			b, err := ReadFile(dir, tc.rel)
			if tc.err == nil {
				if err != nil || string(b) != tc.want {
					t.Fatalf("ReadFile = %q, %v; want %q", b, err, tc.want)
				}
				return
			}
			if !errors.Is(err, tc.err) {
				t.Fatalf("ReadFile = %q, %v; want %v", b, err, tc.err)
			}
		})
	}
	if _, err := ReadFile(dir, "big.json"); err == nil {
		t.Errorf("ReadFile of a file over MaxFile: want an error")
	}
	if _, err := OpenFile(filepath.Join(dir, "cap.pcap")); !errors.Is(err, ErrNotRegular) {
		t.Errorf("OpenFile of a FIFO: %v, want %v", err, ErrNotRegular)
	}
	if _, err := OpenFile("/dev/zero"); !errors.Is(err, ErrNotRegular) {
		t.Errorf("OpenFile of a device: %v, want %v", err, ErrNotRegular)
	}
	if f, err := OpenFile(filepath.Join(dir, "lab", "abs.hcl")); err != nil {
		t.Errorf("OpenFile of a path the user names follows its symlinks: %v", err)
	} else {
		f.Close()
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
