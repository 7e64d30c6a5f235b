package results

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/rlab-dev/rlab/engine/rundir"
	"github.com/rlab-dev/rlab/kinds"
)

// ListRuns finds the run directories under root (a directory holding
// results.json, at most three levels down: runs/<lab>/<timestamp>/) and reads
// them, oldest first, keeping of each what a listing shows (listed). Directories whose results.json cannot be read are
// returned as errors beside the runs that could.
func ListRuns(root string) ([]*Run, []error) {
	var (
		runs []*Run
		errs []error
	)
	base := strings.Count(filepath.Clean(root), string(filepath.Separator))
	// A received folder of runs may name one results.json many times
	// (hard links; a tar stores each as a header only): each file is read
	// once, by identity (SECURITY 118).
	seen := map[[2]uint64]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == root {
				return err
			}
			errs = append(errs, err)
			return nil
		}
		if !d.IsDir() {
			return nil
		}
		if strings.Count(filepath.Clean(path), string(filepath.Separator))-base > 3 {
			return filepath.SkipDir
		}
		if _, err := os.Stat(filepath.Join(path, ResultsFile)); err != nil {
			if _, perr := os.Stat(filepath.Join(path, "plan.json")); perr == nil && path != root {
				// A run directory that never got its results: a run still
				// going, or one stopped (or out of disk) before them.
				errs = append(errs, fmt.Errorf("run %s: incomplete: no %s (still running, or it stopped before writing its results)", path, ResultsFile))
				return filepath.SkipDir
			}
			return nil
		}
		if id, ok := rundir.FileID(filepath.Join(path, ResultsFile)); ok {
			if other, dup := seen[id]; dup {
				errs = append(errs, fmt.Errorf("run %s: its %s is the same file as run %s's (a link): not read again", path, ResultsFile, other))
				return filepath.SkipDir
			}
			seen[id] = path
		}
		r, err := ReadRun(path)
		if err != nil {
			errs = append(errs, err)
		} else {
			// Listed runs keep their headline, not their samples, nor
			// anything else of a size with them (SECURITY 166): every run
			// of the folder is held until the listing ends, and 100 run
			// directories of a 5.6 MB results.json each (562 MB) held 3
			// GB; a folder of received runs has as many as it likes.
			runs = append(runs, listed(r))
		}
		return filepath.SkipDir // a run directory holds no other runs
	})
	if err != nil {
		return nil, []error{fmt.Errorf("list runs under %s: %w", root, err)}
	}
	sort.SliceStable(runs, func(i, j int) bool {
		if !runs[i].Started.Equal(runs[j].Started) {
			return runs[i].Started.Before(runs[j].Started)
		}
		return runs[i].Dir < runs[j].Dir
	})
	return runs, errs
}

// listed is what a listing keeps of r: its names (cut to a KiB, copied
// from the document), status, times and Glance, Listed and ListedOK.
func listed(r *Run) *Run {
	short := func(s string) string { return strings.Clone(s[:min(len(s), 1<<10)]) }
	l := &Run{Schema: r.Schema, Lab: short(r.Lab), ID: short(r.ID), Dir: r.Dir, Started: r.Started, Finished: r.Finished,
		Duration: r.Duration, Status: short(r.Status), Check: r.Check, CompleteMarker: r.CompleteMarker,
		Incomplete: short(r.Incomplete), Glance: Headline(r), Listed: len(r.Workloads)}
	for _, w := range r.Workloads {
		if w.Status == StatusOK {
			l.ListedOK++
		}
	}
	return l
}

// Headline picks a run's figures worth a glance, one per workload that has
// one: the Glance figure its tool's View declares (bandwidth at the largest
// size, typical latency at the smallest), medians over repeats.
func Headline(r *Run) []string {
	glances := kinds.Glances()
	rank := func(m string) int {
		for i, f := range glances {
			if f.Metric == m {
				return i
			}
		}
		return -1
	}
	aggs := Aggregate(r.Samples)
	var order []string
	pick := map[string]Agg{}
	for _, a := range aggs {
		ra := rank(a.Metric)
		if ra < 0 {
			continue
		}
		cur, ok := pick[a.Workload]
		if !ok {
			order = append(order, a.Workload)
			pick[a.Workload] = a
			continue
		}
		rc := rank(cur.Metric)
		smallest := glances[ra].At == kinds.Smallest
		switch {
		case ra < rc:
			pick[a.Workload] = a
		case ra == rc && smallest && a.Size < cur.Size:
			pick[a.Workload] = a
		case ra == rc && !smallest && a.Size > cur.Size:
			pick[a.Workload] = a
		}
	}
	var out []string
	for _, wl := range order {
		a := pick[wl]
		out = append(out, wl+" "+figureValue(glances[rank(a.Metric)], a))
	}
	return out
}

// DefaultRunsRoot is where rlab run writes run directories.
const DefaultRunsRoot = "runs"

// ResolveRun finds the run directory ref names, as people give it: a run
// directory; a folder of runs (runs/, runs/<lab>/: its newest run); a name
// as `rlab runs` prints it, relative to root (nightly/2026-11-20T020000Z); a
// run id alone (2026-11-20T020000Z) or a lab name (nightly: its newest run);
// or nothing (the newest run under root). Student checks are never picked
// as "the newest". The note says which run was picked when ref did not name
// one exactly ("" otherwise).
func ResolveRun(root, ref string) (dir, note string, err error) {
	if root == "" {
		root = DefaultRunsRoot
	}
	// A run directory has its results, or (a run that stopped before
	// writing them) at least its plan: it is named, and shown as incomplete.
	isRun := func(d string) bool {
		for _, f := range []string{ResultsFile, "plan.json"} {
			if _, err := os.Stat(filepath.Join(d, f)); err == nil {
				return true
			}
		}
		return false
	}
	newest := func(under string) string {
		runs, _ := ListRuns(under)
		for i := len(runs) - 1; i >= 0; i-- {
			if !runs[i].Check {
				return runs[i].Dir
			}
		}
		return ""
	}
	if ref == "" {
		if d := newest(root); d != "" {
			return d, "the newest run under " + root + ": " + d, nil
		}
		return "", "", fmt.Errorf("no runs under %s/: give a run directory (rlab runs DIR lists them)", root)
	}
	for _, cand := range []string{ref, filepath.Join(root, ref)} {
		if isRun(cand) {
			return cand, "", nil
		}
		if st, err := os.Stat(cand); err == nil && st.IsDir() {
			if d := newest(cand); d != "" {
				return d, "the newest run under " + cand + ": " + d, nil
			}
		}
	}
	if !strings.ContainsRune(ref, filepath.Separator) {
		runs, _ := ListRuns(root)
		var byID []*Run
		for _, r := range runs {
			if r.ID == ref || filepath.Base(r.Dir) == ref {
				byID = append(byID, r)
			}
		}
		switch len(byID) {
		case 1:
			return byID[0].Dir, "", nil
		case 0:
		default:
			var ds []string
			for _, r := range byID {
				ds = append(ds, r.Dir)
			}
			return "", "", fmt.Errorf("run %q is ambiguous: %s; give the lab too (LAB/%s)", ref, strings.Join(ds, ", "), ref)
		}
	}
	if _, err := os.Stat(ref); err == nil {
		return "", "", fmt.Errorf("%s is not a run directory (no %s) and holds no runs", ref, ResultsFile)
	}
	return "", "", fmt.Errorf("run %q not found: not a run directory, nor a run, run id or lab under %s/ (rlab runs lists them)", ref, root)
}
