package run

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestRunDirTakenOnce: of two runs given the same --out at once (an empty
// directory both find), exactly one takes it; the other refuses it saying
// why. Without --out the other takes the next suffix.
func TestRunDirTakenOnce(t *testing.T) {
	for _, exact := range []bool{true, false} {
		for i := range 50 {
			dir := filepath.Join(t.TempDir(), "run")
			if i%2 == 0 {
				os.Mkdir(dir, 0o700) // both find it there, empty
			}
			var wg sync.WaitGroup
			got := make([]string, 2)
			errs := make([]error, 2)
			locks := make([]*os.File, 2)
			for k := range 2 {
				wg.Go(func() {
					got[k], locks[k], errs[k] = makeRunDir(dir, exact)
					if errs[k] == nil {
						os.WriteFile(filepath.Join(got[k], "events.jsonl"), nil, 0o600) // the run starts writing
					}
				})
			}
			wg.Wait()
			for _, l := range locks {
				if l != nil {
					l.Close()
				}
			}
			switch {
			case exact && (errs[0] == nil) == (errs[1] == nil):
				t.Fatalf("exact, try %d: errors %v and %v: want exactly one run to take %s", i, errs[0], errs[1], dir)
			case exact:
				e := errs[0]
				if e == nil {
					e = errs[1]
				}
				if !strings.Contains(e.Error(), "another rlab run") && !strings.Contains(e.Error(), "not empty") {
					t.Errorf("exact, try %d: %v", i, e)
				}
			case errs[0] != nil || errs[1] != nil || got[0] == got[1]:
				t.Fatalf("try %d: %q (%v) and %q (%v): want two directories", i, got[0], errs[0], got[1], errs[1])
			}
		}
	}
}

// TestRunDirHeldRefused: --out naming a directory another run holds is
// refused with a clear message.
func TestRunDirHeldRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	_, lock, err := makeRunDir(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if _, _, err := makeRunDir(dir, true); err == nil || !strings.Contains(err.Error(), "being written by another rlab run") {
		t.Fatalf("second run on a held directory: %v", err)
	}
	lock.Close()
	if d, l, err := makeRunDir(dir, true); err != nil {
		t.Fatalf("the directory, released and still empty: %v", err)
	} else if d != dir {
		t.Fatalf("took %s", d)
	} else {
		l.Close()
	}
}
