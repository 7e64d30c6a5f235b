package rundir

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestCheckCaptureHoles: a capture with a hole is read below sparseMin (it
// reads as at most that many bytes, and a file system may keep a real
// capture's zero blocks as holes) and refused from it.
func TestCheckCaptureHoles(t *testing.T) {
	hdr := []byte{0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0, 1, 0, 0, 0}
	for _, c := range []struct {
		name    string
		size    int64
		refused bool
	}{
		{name: "hole under 16 MiB read", size: sparseMin / 2},
		{name: "hole from 16 MiB refused", size: 2 * sparseMin, refused: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "cap.pcap")
			must(t, os.WriteFile(p, hdr, 0o600))
			must(t, os.Truncate(p, c.size))
			f, err := os.Open(p)
			must(t, err)
			defer f.Close()
			if hole, ok := firstHole(f); !ok || hole >= c.size {
				t.Skip("this file system reports no hole (SEEK_HOLE)")
			}
			err = CheckCapture(f)
			if got := errors.Is(err, ErrNotACapture); got != c.refused {
				t.Errorf("CheckCapture = %v, refused %v, want %v", err, got, c.refused)
			}
		})
	}
}
