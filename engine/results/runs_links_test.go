package results

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestListRunsLinkedResults: a received folder of runs whose results.json
// files are one file under many names (hard links: a tar stores each as a
// header only) is read once, not once per name (SECURITY 118): ten links to
// a 200 MB results.json took rlab runs 40 s and 3.2 GB, a hundred far more
// than the machine has. The first run is listed; the others are errors
// that say why.
func TestListRunsLinkedResults(t *testing.T) {
	root := t.TempDir()
	b, err := json.Marshal(map[string]any{"schema": 2, "lab": "l", "id": "r0", "status": "ok",
		"started": "2026-11-25T21:02:11Z", "description": strings.Repeat("x", 16<<20), "workloads": []any{}})
	if err != nil {
		t.Fatal(err)
	}
	first := filepath.Join(root, "l", "r00", ResultsFile)
	for i := range 20 {
		d := filepath.Join(root, "l", fmt.Sprintf("r%02d", i))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			err = os.WriteFile(first, b, 0o644)
		} else {
			err = os.Link(first, filepath.Join(d, ResultsFile))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	// One more run of its own file still counts.
	own := filepath.Join(root, "l", "own")
	if err := os.MkdirAll(own, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(own, ResultsFile), []byte(`{"schema":2,"lab":"l","id":"own","status":"ok","started":"2026-11-25T21:02:12Z"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	runs, errs := ListRuns(root)
	runtime.ReadMemStats(&after)
	if made := after.TotalAlloc - before.TotalAlloc; made > 150<<20 {
		t.Errorf("ListRuns allocated %d MiB for one 16 MiB results.json under 20 names", made>>20)
	}
	if len(runs) != 2 {
		t.Errorf("%d runs listed, want the first of the linked ones and own", len(runs))
	}
	if len(errs) != 19 {
		t.Fatalf("%d errors, want one per extra link: %v", len(errs), errs)
	}
	if !strings.Contains(errs[0].Error(), "same file") {
		t.Errorf("error %q does not say why", errs[0])
	}
}

// TestListRunsKeepsListing: ListRuns keeps of each run what a listing shows,
// not its samples (found in attack round 10, medium: every run of the
// folder was held whole until the listing ended, so 100 run directories of
// a 5.6 MB results.json each took rlab runs 3 GB). Here 20 runs of 20,000
// samples each: all held before.
func TestListRunsKeepsListing(t *testing.T) {
	root := t.TempDir()
	r := &Run{Schema: SchemaVersion, Lab: "l", Status: RunOK, Workloads: []Workload{{Name: "w", Tool: "ib_write_bw", Status: StatusOK}}}
	for i := range 20_000 {
		s := Sample{Metric: "bw_avg", Value: 1.5, Unit: "Gb/s"}
		s.Meta.Workload, s.Meta.Tool, s.Meta.Size, s.Meta.Repeat = "w", "ib_write_bw", 4096, i
		r.Samples = append(r.Samples, s)
	}
	for i := range 20 {
		r.ID = fmt.Sprintf("r%02d", i)
		d := filepath.Join(root, "l", r.ID)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := WriteRun(d, r); err != nil {
			t.Fatal(err)
		}
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	runs, errs := ListRuns(root)
	runtime.GC()
	runtime.ReadMemStats(&after)
	if len(runs) != 20 || len(errs) != 0 {
		t.Fatalf("%d runs, errors %v", len(runs), errs)
	}
	if held := int64(after.HeapAlloc) - int64(before.HeapAlloc); held > 16<<20 {
		t.Errorf("the listing of 20 runs of 20,000 samples holds %d MiB", held>>20)
	}
	if runs[0].Samples != nil || runs[0].Listed != 1 || runs[0].ListedOK != 1 || len(runs[0].Glance) != 1 {
		t.Errorf("listed run: %d samples, %d workloads (%d ok), headline %q", len(runs[0].Samples), runs[0].Listed, runs[0].ListedOK, runs[0].Glance)
	}
	runtime.KeepAlive(runs)
}
