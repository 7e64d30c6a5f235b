package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Run is the document a run writes as results.json: what ran, how each
// workload ended, which expects held, and every sample. It is the input of
// summary.md, junit.xml, `rlab show`, `rlab runs` and `rlab compare`.
type Run struct {
	// Schema versions this document; Read rejects a newer one.
	Schema      int       `json:"schema"`
	Lab         string    `json:"lab"`
	Description string    `json:"description,omitempty"`
	ID          string    `json:"id"`            // the run directory's name, a UTC timestamp
	Dir         string    `json:"dir,omitempty"` // where it was written; set by Read
	Started     time.Time `json:"started"`
	Finished    time.Time `json:"finished"`
	Duration    float64   `json:"duration"` // seconds
	// Status is the run's outcome: RunOK, RunFailed (a workload failed or an
	// expect did not hold: exit 1), RunError (infrastructure: exit 2),
	// RunInterrupted (exit 130).
	Status    string     `json:"status"`
	Error     string     `json:"error,omitempty"`
	Workloads []Workload `json:"workloads"`
	Samples   []Sample   `json:"samples"`
	// Check marks a student check (`rlab check --validate`): only the
	// workloads with expects ran, so it is no baseline for `rlab compare`.
	Check bool `json:"check,omitempty"`
	// Students is the per-student status of a class lab (workloads with
	// for_each keys), in the order the lab lists them; empty otherwise.
	Students []Student `json:"students,omitempty"`
}

// SchemaVersion is the version of Run this package writes.
const SchemaVersion = 1

// Run statuses.
const (
	RunOK          = "ok"
	RunFailed      = "failed"
	RunError       = "error"
	RunInterrupted = "interrupted"
)

// Workload statuses.
const (
	StatusOK       = "ok"
	StatusFailed   = "failed"
	StatusTimedOut = "timed_out"
	StatusSkipped  = "skipped"
)

// Workload is how one workload of the lab ended.
type Workload struct {
	Name     string   `json:"name"`
	Tool     string   `json:"tool"`
	Status   string   `json:"status"` // StatusOK, StatusFailed, StatusTimedOut, StatusSkipped
	Error    string   `json:"error,omitempty"`
	Hosts    []string `json:"hosts,omitempty"` // server first, then client
	Devices  []string `json:"devices,omitempty"`
	Duration float64  `json:"duration"` // seconds
	Expects  []Expect `json:"expects,omitempty"`
	// Thresholds are per-metric regression thresholds in percent (metric
	// name → 10 for 10%) from the lab, read by `rlab compare` unless the
	// command line overrides them.
	Thresholds map[string]float64 `json:"thresholds,omitempty"`
	Logs       []string           `json:"logs,omitempty"` // run-dir-relative paths of its raw outputs
}

// Expect is one evaluated `expect` block. An expect is evaluated per size
// (and repeat) when its condition reads a per-size metric.
type Expect struct {
	Condition string  `json:"condition"` // as written in the lab file
	Message   string  `json:"message,omitempty"`
	Held      bool    `json:"held"`
	Skipped   bool    `json:"skipped,omitempty"` // its workload did not complete: not evaluated, neither held nor failed
	Size      int64   `json:"size,omitempty"`
	Repeat    *int    `json:"repeat,omitempty"`
	Value     *string `json:"value,omitempty"` // the values it read, e.g. "bw_avg_gbps = 0.07"
	Error     string  `json:"error,omitempty"` // evaluation failed (a missing metric)
}

// Files a run directory holds, written by WriteRun.
const (
	ResultsFile = "results.json"
	SummaryFile = "summary.md"
	JUnitFile   = "junit.xml"
)

// WriteRun writes results.json, summary.md and junit.xml into dir (which
// must exist). Each file is written to a temporary name and renamed, so a
// reader never sees half a file.
func WriteRun(dir string, r *Run) error {
	if r.Schema == 0 {
		r.Schema = SchemaVersion
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s of run %q: %w", ResultsFile, r.ID, err)
	}
	if err := writeAtomic(filepath.Join(dir, ResultsFile), append(b, '\n')); err != nil {
		return err
	}
	if err := writeAtomic(filepath.Join(dir, SummaryFile), Summary(r, dir)); err != nil {
		return err
	}
	j, err := JUnit(r)
	if err != nil {
		return fmt.Errorf("render %s of run %q: %w", JUnitFile, r.ID, err)
	}
	return writeAtomic(filepath.Join(dir, JUnitFile), j)
}

// ReadRun reads results.json from a run directory (or the file itself).
func ReadRun(path string) (*Run, error) {
	dir, file := path, filepath.Join(path, ResultsFile)
	if st, err := os.Stat(path); err == nil && !st.IsDir() {
		dir, file = filepath.Dir(path), path
	}
	b, err := os.ReadFile(file)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("read run %s: no %s there (not a run directory, or the run wrote no results)", dir, ResultsFile)
		}
		return nil, fmt.Errorf("read run %s: %w", dir, err)
	}
	var r Run
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("read run %s: decode %s: %w", dir, ResultsFile, err)
	}
	if r.Schema > SchemaVersion {
		return nil, fmt.Errorf("read run %s: %s has schema %d, this rlab reads up to %d (upgrade rlab)", dir, ResultsFile, r.Schema, SchemaVersion)
	}
	r.Dir = dir
	r.Samples = DropRetired(r.Samples)
	return &r, nil
}

func writeAtomic(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
