package run

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/rlab-dev/rlab/engine/results"
)

// TestRunDiskFull: the controller's disk fills up while the run writes its
// results (a real tmpfs of 8 MiB, filled to leave a few pages at the moment
// results.json is about to be written). Before, such a run left a 0-byte
// manifest.json and a stray junit.xml.tmp, and `rlab runs` listed it ok 1/1.
// Now a run directory is complete only with complete.json, written last
// after every file is synced; without it the run exits 2 and reads back as
// incomplete; no temporary file is left behind. With room enough, the run is
// complete and every file the manifest lists is intact.
func TestRunDiskFull(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs")
	}
	const page = 4096
	for _, free := range []int64{0, 1 * page, 4 * page, 16 * page, 64 * page, 4 << 20} {
		t.Run(strconv.FormatInt(free, 10)+"B_free", func(t *testing.T) {
			mnt := t.TempDir()
			if err := syscall.Mount("rlab-diskfull", mnt, "tmpfs", 0, "size=8m,mode=0700"); err != nil {
				t.Skipf("mount tmpfs: %v", err)
			}
			t.Cleanup(func() { syscall.Unmount(mnt, syscall.MNT_DETACH) })
			filled := false
			opts := Options{Out: filepath.Join(mnt, "run"), WriteResults: func(dir string, r *results.Run) error {
				if !filled {
					filled = true
					fill(t, filepath.Join(mnt, "filler"), free)
				}
				return results.WriteRun(dir, r)
			}}
			res, _ := runLab(t, twoHosts+`
workload "hello" {
  tool    = "exec"
  host    = host.a
  command = ["echo", "hello"]
}
`, opts, true)
			_, markErr := os.Stat(filepath.Join(res.Dir, results.CompleteFile))
			complete := markErr == nil
			t.Logf("free %d: code %d, complete %v, err %v", free, res.Code, complete, res.Err)
			if free == 0 && complete {
				t.Fatal("a run on a full disk was marked complete")
			}
			filepath.WalkDir(res.Dir, func(p string, d os.DirEntry, err error) error {
				if err == nil && strings.HasSuffix(p, ".tmp") {
					t.Errorf("stray temporary file %s", p)
				}
				return nil
			})
			if !complete {
				if res.Code != ExitInfra || res.Err == nil || !strings.Contains(res.Err.Error(), "is incomplete") {
					t.Errorf("incomplete run: code %d, error %v; want 2 and the error saying the run directory is incomplete", res.Code, res.Err)
				}
				if r, err := results.ReadRun(res.Dir); err == nil && r.Incomplete == "" {
					t.Errorf("read back as complete (status %q)", r.Status)
				}
				runs, errs := results.ListRuns(mnt)
				for _, r := range runs {
					if r.Incomplete == "" {
						t.Errorf("rlab runs would list %s as %s", r.Dir, r.Status)
					}
				}
				if len(runs) == 0 && (len(errs) == 0 || !strings.Contains(errors.Join(errs...).Error(), "incomplete")) {
					t.Errorf("rlab runs would not say the run is incomplete: %v", errs)
				}
				return
			}
			if res.Code != ExitOK {
				t.Errorf("complete run: code %d: %v", res.Code, res.Err)
			}
			r, err := results.ReadRun(res.Dir)
			if err != nil || r.Incomplete != "" {
				t.Fatalf("complete run reads back as %v, %q", err, r.Incomplete)
			}
			for _, f := range []string{results.ResultsFile, results.SummaryFile, results.JUnitFile, "report.html", ManifestFile, EventsFile, "plan.json", "state.json"} {
				if st, err := os.Stat(filepath.Join(res.Dir, f)); err != nil || st.Size() == 0 {
					t.Errorf("complete run: %s: %v", f, err)
				}
			}
		})
	}
}

// fill writes to path until the filesystem is full, then gives back free
// bytes.
func fill(t *testing.T, path string, free int64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	var n int64
	for {
		m, err := f.Write(buf)
		n += int64(m)
		if errors.Is(err, syscall.ENOSPC) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Truncate(max(n-free, 0)); err != nil {
		t.Fatal(err)
	}
}
