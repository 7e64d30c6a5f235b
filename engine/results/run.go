package results

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/engine/rundir"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
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
	// Platforms is what each host ran on, from its facts, keyed by the
	// host's name as samples and workloads name it (Meta.Hosts): once per
	// host, not once per sample.
	Platforms map[string]Platform `json:"platforms,omitempty"`
	Samples   []Sample            `json:"samples"`
	// Check marks a student check (`rlab check --validate`): only the
	// workloads with expects ran, so it is no baseline for `rlab compare`.
	Check bool `json:"check,omitempty"`
	// Students is the per-student status of a class lab (hosts keyed per
	// student), in the order the lab lists them; empty otherwise.
	Students []Student `json:"students,omitempty"`
	// CompleteMarker says the run writes CompleteFile last, once every other
	// file of its directory is written and synced (runs of this rlab on). A
	// run directory of such a run without it is incomplete.
	CompleteMarker bool `json:"complete_marker,omitempty"`
	// Artifacts are the files the run's fetch steps pulled from its hosts
	// (steps.Fetch), as the step recorded them: what `rlab report` and
	// `rlab pcap RUN` read to find captures and logs. Absent in runs older
	// than it: readers then look in hosts/*/captures/ (CapturesOf).
	Artifacts []Artifact `json:"artifacts,omitempty"`
	// Incomplete, set by ReadRun, says why the run directory is not
	// complete (a full disk, a controller killed while writing); empty when
	// it is, or when the run is older than the marker.
	Incomplete string `json:"-"`
	// Glance, Listed and ListedOK are set by ListRuns, which keeps of a
	// run only what a listing shows (SECURITY 166): Headline's figures,
	// how many workloads it has and how many of them are ok.
	Glance           []string `json:"-"`
	Listed, ListedOK int      `json:"-"`
}

// SchemaVersion is the version of Run this package writes: 2 since host
// platforms are kept once (Run.Platforms), samples carry a Kind and tcp's
// bytes, perftest's interval and the impairment's loss are numbers (Decode
// reads version 1 too).
const SchemaVersion = 2

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
	// Started and Finished bound its steps (absent when it never started).
	Started  time.Time `json:"started,omitzero"`
	Finished time.Time `json:"finished,omitzero"`
	Expects  []Expect  `json:"expects,omitempty"`
	// Thresholds are per-metric regression thresholds in percent (metric
	// name → 10 for 10%) from the lab, read by `rlab compare` unless the
	// command line overrides them.
	Thresholds map[string]float64 `json:"thresholds,omitempty"`
	Logs       []string           `json:"logs,omitempty"` // run-dir-relative paths of its raw outputs
	// Captures are the run-dir-relative paths of the capture files taken
	// during this workload alone (a capture scoped to it and to no other
	// workload: `during = [workload.x]`), so their analysis is its own.
	Captures []string `json:"captures,omitempty"`
	// CounterNotes are its kernel counters that are not deltas among the
	// samples: unreadable (never recorded as zero), absent on the device,
	// or reset during the workload (counters.go).
	CounterNotes []CounterNote `json:"counter_notes,omitempty"`
	// Parse is what the output parser said besides the samples, one entry
	// per run (size × repeat) that had something to say: the lines the
	// tool printed that it did not read, its own notes (a value dropped),
	// and whether the numbers are the sum of both directions (perftest
	// -b). Lines are kept as printed (JSON escapes control characters);
	// summary.md, the terminal and report.html neutralise them.
	Parse []ParseNote `json:"parse,omitempty"`
	// RDMA is how its devices carry RDMA, the port's transport and the
	// device's kind: "RoCE (rxe)", "iWARP (siw)", "InfiniBand (hw)"; both
	// ends, server first, joined by " → " when they differ. Empty for tcp
	// and exec.
	RDMA string `json:"rdma,omitempty"`
	// Group is the group it ran in, together with the group's other
	// workloads (a `group` block); empty when it ran alone.
	Group string `json:"group,omitempty"`
	// Metrics are the names of its own metric blocks (program, exec), in
	// the order the lab declares them: its headline when its tool's View
	// is Declared (kinds.DeclaredHeadline).
	Metrics []string `json:"metrics,omitempty"`
}

// Artifact is one file a step made and the run pulled into its directory.
type Artifact struct {
	Host string `json:"host"` // the host it came from, as the lab names it
	Path string `json:"path"` // slash-separated, relative to the run directory
	Type string `json:"kind"` // ArtifactCapture or ArtifactLog
	// Size and SHA256 are the file's as the host listed them and the pull
	// verified; absent when the file was rewritten on the way (a log with
	// the lab's sensitive values masked) or hashed only while it was sent.
	Size   int64  `json:"size,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
}

// Artifact kinds.
const (
	ArtifactCapture = "capture" // a packet capture (one file of a ring is one artifact)
	ArtifactLog     = "log"     // anything else the host's work dir held: outputs, logs
)

// CaptureArtifacts is the run's artifacts of kind capture whose path stays
// in the run directory, each path cleaned and listed once: a received
// results.json that names one capture many times (or under other
// spellings: "a/./b", "a//b", "a/x/../b") must not have it read once per
// listing, as one more file of a ring.
func (r *Run) CaptureArtifacts() []Artifact {
	var out []Artifact
	seen := map[string]bool{}
	for _, a := range r.Artifacts {
		if a.Type != ArtifactCapture || !filepath.IsLocal(filepath.FromSlash(a.Path)) {
			continue
		}
		a.Path = path.Clean(a.Path)
		if seen[a.Path] {
			continue
		}
		seen[a.Path] = true
		out = append(out, a)
	}
	return out
}

// CapturesOf is the run-dir-relative paths of the run's capture files: the
// artifacts of kind capture when the run recorded them, else (a run older
// than Run.Artifacts) the files of hosts/*/captures/ that isCapture
// accepts by name. A listed path that leaves dir is not one.
func CapturesOf(r *Run, dir string, isCapture func(base string) bool) ([]string, error) {
	// One file named many times (links inside the run directory) is one
	// capture, read once.
	seen := rundir.Files{}
	if r != nil && r.Artifacts != nil {
		var out []string
		for _, a := range r.CaptureArtifacts() {
			if seen.First(filepath.Join(dir, filepath.FromSlash(a.Path))) {
				out = append(out, a.Path)
			}
		}
		return out, nil
	}
	hosts, err := filepath.Glob(filepath.Join(dir, "hosts", "*", "captures"))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, h := range hosts {
		ents, err := os.ReadDir(h)
		if err != nil {
			return nil, err
		}
		for _, e := range ents {
			if !e.IsDir() && isCapture(e.Name()) && seen.First(filepath.Join(h, e.Name())) {
				rel, _ := filepath.Rel(dir, filepath.Join(h, e.Name()))
				out = append(out, filepath.ToSlash(rel))
			}
		}
	}
	return out, nil
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
	// ManifestFile lists every file of the run directory with its sha256.
	ManifestFile = "manifest.json"
	// CompleteFile is written last, naming the sha256 of manifest.json: a
	// run directory is complete only with it.
	CompleteFile = "complete.json"
)

// MaxManifestEntries bounds what Rehash reads of a manifest.json: a run
// pulls at most MaxArtifacts files, and a class run's student folders list
// them again.
const MaxManifestEntries = 4 * MaxArtifacts

// ManifestEntry is one file of a run directory in ManifestFile.
type ManifestEntry struct {
	Path   string `json:"path"` // slash-separated, relative to the run directory
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// complete is the content of CompleteFile.
type complete struct {
	ManifestSHA256 string `json:"manifest_sha256"`
}

// WriteRun writes results.json, summary.md and junit.xml into dir (which
// must exist). Each file is written to a temporary name and renamed, so a
// reader never sees half a file.
func WriteRun(dir string, r *Run) error {
	b, err := Encode(r)
	if err != nil {
		return err
	}
	if err := writeAtomic(filepath.Join(dir, ResultsFile), b); err != nil {
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

// Encode is r as results.json in the current schema (the one writer of the
// format, for WriteRun and WriteStudentRun): it sets r's schema version,
// each sample's kind, and empty lists rather than null.
func Encode(r *Run) ([]byte, error) {
	r.Schema = SchemaVersion
	if r.Workloads == nil {
		r.Workloads = []Workload{}
	}
	if r.Samples == nil {
		r.Samples = []Sample{}
	}
	for i := range r.Samples {
		r.Samples[i].Source = SourceOf(r.Samples[i])
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode %s of run %q: %w", ResultsFile, r.ID, err)
	}
	return append(b, '\n'), nil
}

// ReadRun reads results.json from a run directory (or the file itself).
func ReadRun(path string) (*Run, error) {
	dir, file := path, filepath.Join(path, ResultsFile)
	if st, err := os.Stat(path); err == nil && !st.IsDir() {
		dir, file = filepath.Dir(path), path
	}
	b, err := rundir.ReadPath(file)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("read run %s: no %s there (not a run directory, or the run wrote no results)", dir, ResultsFile)
		}
		return nil, fmt.Errorf("read run %s: %w", dir, err)
	}
	r, err := Decode(b)
	if err != nil {
		return nil, fmt.Errorf("read run %s: decode %s: %w", dir, ResultsFile, err)
	}
	r.Dir = dir
	r.Samples = DropRetired(r.Samples)
	if r.CompleteMarker {
		if err := CheckComplete(dir); err != nil {
			r.Incomplete = err.Error()
		}
	}
	return r, nil
}

// ReadIncomplete is ReadRun's Incomplete without decoding the run: for a
// caller that shows a run from its other files (`rlab show` printing
// summary.md), which decoded a results.json at the decoder's bound in 23 s
// and 1 GB for this one answer (promise 190). Only the top-level
// complete_marker is kept from the file; a results.json that cannot be read
// or parsed is not this check's to report (ReadRun says so), so it gives "".
func ReadIncomplete(path string) string {
	dir, file := path, filepath.Join(path, ResultsFile)
	if st, err := os.Stat(path); err == nil && !st.IsDir() {
		dir, file = filepath.Dir(path), path
	}
	b, err := rundir.ReadPath(file)
	if err != nil {
		return ""
	}
	var head struct {
		CompleteMarker bool `json:"complete_marker"`
	}
	if json.Unmarshal(b, &head) != nil || !head.CompleteMarker {
		return ""
	}
	if err := CheckComplete(dir); err != nil {
		return err.Error()
	}
	return ""
}

// MarkComplete writes CompleteFile into dir, naming manifest.json's sha256:
// the caller has written and synced every other file (the manifest last).
func MarkComplete(dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		return fmt.Errorf("mark run %s complete: %w", dir, err)
	}
	sum := sha256.Sum256(b)
	c, _ := json.Marshal(complete{ManifestSHA256: hex.EncodeToString(sum[:])})
	if err := WriteFileSynced(filepath.Join(dir, CompleteFile), append(c, '\n')); err != nil {
		return fmt.Errorf("mark run %s complete: %w", dir, err)
	}
	return nil
}

// Rehash brings rel's entry in dir's manifest.json to the file as it is
// now and names the new manifest in complete.json: for `rlab report`, whose
// re-render replaces report.html after the run hashed it. Only a complete
// run directory is touched (an incomplete one stays incomplete, and one
// without a manifest has nothing to update); every other entry stays what
// the run wrote. It reports whether it changed anything.
func Rehash(dir, rel string) (bool, error) {
	if CheckComplete(dir) != nil {
		return false, nil
	}
	fail := func(err error) (bool, error) {
		return false, fmt.Errorf("update %s of run %s: %w", ManifestFile, dir, err)
	}
	b, err := rundir.ReadFile(dir, ManifestFile)
	if err != nil {
		return fail(err)
	}
	// A received run directory's manifest, named by its complete.json, is
	// decoded only within bounds (256 MiB of "{}," would be 89 million
	// entries, some 8 GB).
	if err := proto.CheckValues(b, MaxManifestEntries); err != nil {
		return fail(err)
	}
	var entries []ManifestEntry
	if err := json.Unmarshal(b, &entries); err != nil {
		return fail(err)
	}
	data, err := rundir.ReadFile(dir, rel)
	if err != nil {
		return fail(err)
	}
	sum := sha256.Sum256(data)
	now := ManifestEntry{Path: filepath.ToSlash(rel), Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:])}
	i := slices.IndexFunc(entries, func(e ManifestEntry) bool { return e.Path == now.Path })
	switch {
	case i >= 0 && entries[i] == now:
		return false, nil
	case i >= 0:
		entries[i] = now
	default:
		entries = append(entries, now)
		slices.SortFunc(entries, func(a, b ManifestEntry) int { return strings.Compare(a.Path, b.Path) })
	}
	out, err := json.MarshalIndent(entries, "", "  ")
	if err != nil {
		return fail(err)
	}
	if err := WriteFileSynced(filepath.Join(dir, ManifestFile), append(out, '\n')); err != nil {
		return fail(err)
	}
	return true, MarkComplete(dir)
}

// CheckComplete says why dir is not a complete run directory: no
// CompleteFile, or a manifest.json other than the one it names (cut short).
func CheckComplete(dir string) error {
	b, err := rundir.ReadFile(dir, CompleteFile)
	if err != nil {
		return fmt.Errorf("run directory incomplete: no %s (the run did not finish writing its files: disk full, or the controller was stopped)", CompleteFile)
	}
	var c complete
	if err := json.Unmarshal(b, &c); err != nil || c.ManifestSHA256 == "" {
		return fmt.Errorf("run directory incomplete: %s is damaged", CompleteFile)
	}
	m, err := rundir.ReadFile(dir, ManifestFile)
	if err != nil {
		return fmt.Errorf("run directory incomplete: %w", err)
	}
	if sum := sha256.Sum256(m); hex.EncodeToString(sum[:]) != c.ManifestSHA256 {
		return fmt.Errorf("run directory incomplete: %s is not the one the run wrote", ManifestFile)
	}
	return nil
}

func writeAtomic(path string, b []byte) error {
	if err := WriteFileSynced(path, b); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// WriteFileSynced writes b to path through rundir.WriteFile, the one
// writer of a run directory: masked, synced, whole or absent after a crash,
// 0600.
func WriteFileSynced(path string, b []byte) error { return rundir.WriteFile(path, b) }

// SyncDir syncs a folder, so the names in it survive a crash.
func SyncDir(dir string) error { return rundir.SyncDir(dir) }
