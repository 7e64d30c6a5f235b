package report

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestLabSourcesBounded: a received run directory's lab/ files are shown
// in report.html cut to maxSource, and the lab's name read from them, at a
// cost bounded by that cut, not by the files (SECURITY 117): each file was
// read whole (up to rundir.MaxFile, 256 MiB) and parsed whole as HCL for its
// `lab` block, some 270 bytes of memory a byte: an 18 MB lab/x.hcl of
// `a = 1` lines took rlab report 23 s and 4.9 GB; a file at MaxFile, or the
// same file linked under many names, took the machine's memory.
func TestLabSourcesBounded(t *testing.T) {
	dir := copyDir(t, fixture)
	var b strings.Builder
	b.WriteString("lab \"big\" {\n")
	for b.Len() < 18<<20 {
		b.WriteString("a = 1\n")
	}
	b.WriteString("}\n")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(dir, "lab", "x.hcl"), []byte(b.String()), 0o644))
	for _, n := range []string{"y.hcl", "z.txt"} {
		must(os.Symlink("x.hcl", filepath.Join(dir, "lab", n)))
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	d, err := Build(dir, Options{NoGraphviz: true})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if made := after.TotalAlloc - before.TotalAlloc; made > 400<<20 {
		t.Errorf("Build allocated %d MiB for a run directory with an 18 MB lab file", made>>20)
	}
	var shown int
	for _, s := range d.Lab.Sources {
		if strings.HasPrefix(s.Path, "lab/x.hcl") || s.Path == "lab/y.hcl" || s.Path == "lab/z.txt" {
			if len(s.Text) > maxSource+100 {
				t.Errorf("%s shown with %d bytes", s.Path, len(s.Text))
			}
			shown++
		}
	}
	if shown == 0 {
		t.Errorf("the big lab file is not listed among the sources")
	}
	if d.Lab.Name != "quickstart" {
		t.Errorf("lab name %q, want the run's", d.Lab.Name)
	}
}
