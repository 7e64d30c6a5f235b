package run

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/engine/results"
	"github.com/rlab-dev/rlab/steps"
)

// writeResults writes results.json, summary.md and junit.xml.
func (r *runner) writeResults(res *Result) error {
	fin := r.opts.Now()
	red := newRedactor(r.lab.Sensitive)
	// The description is an expression of the lab's: "… ${var.token}"
	// went raw to results.json, summary.md, report.html and rlab show.
	doc := &results.Run{
		Lab: r.lab.Name, Description: red.Replace(r.lab.Description), ID: filepath.Base(r.dir),
		Started: r.started.UTC(), Finished: fin.UTC(), Duration: fin.Sub(r.started).Seconds(),
		Status: statusText(res.Code), Check: r.plan.Check,
	}
	if res.Err != nil {
		doc.Error = red.Replace(res.Err.Error())
	}
	byWL := map[string][]ExpectResult{}
	for _, e := range res.Expects {
		byWL[e.Workload] = append(byWL[e.Workload], e)
	}
	for i, o := range res.Outcomes {
		n := r.workloads[i]
		w := results.Workload{Name: n.Workload.Name, Tool: n.Workload.Tool, Status: o.Status, Error: red.Replace(o.Error)}
		if w.Status == "" {
			w.Status = results.StatusSkipped
		}
		for _, h := range n.Hosts {
			w.Hosts = append(w.Hosts, h.Name)
		}
		var carries []string
		for _, x := range []string{n.spec.ServerDevice, n.spec.ClientDevice} {
			if x != "" {
				if info, err := r.env.Device(x); err == nil {
					w.Devices = append(w.Devices, info.Name)
					if c := rdmaCarrier(info); c != "" && !slices.Contains(carries, c) {
						carries = append(carries, c)
					}
				}
			}
		}
		// A device's name is the lab's expression (rxe name = var.token).
		w.Devices = redactAll(red, w.Devices)
		w.RDMA = red.Replace(strings.Join(carries, " → "))
		for _, m := range n.Workload.Metrics {
			w.Metrics = append(w.Metrics, m.Name)
		}
		if g := r.lab.GroupOf(n.Workload); g != nil {
			w.Group = g.Name
		}
		if !o.End.IsZero() {
			w.Duration = o.End.Sub(o.Start).Seconds()
			w.Started, w.Finished = o.Start.UTC(), o.End.UTC()
		}
		for _, run := range o.Runs {
			if run.Parse != nil {
				n := *run.Parse
				n.Unread, n.Notes = redactAll(red, n.Unread), redactAll(red, n.Notes)
				w.Parse = append(w.Parse, n)
			}
			for _, p := range []*steps.ProcRef{run.Server, run.Client} {
				if p == nil {
					continue
				}
				for _, ext := range []string{".stdout", ".stderr"} {
					if rel, ok := r.pulled[p.Host][p.Handle+ext]; ok {
						w.Logs = append(w.Logs, rel)
					}
				}
			}
		}
		w.Captures = r.ownCaptures(n)
		for _, e := range byWL[n.Workload.Name] {
			x := results.Expect{Condition: e.Condition, Message: red.Replace(e.Message), Held: e.Held, Skipped: e.Skipped, Size: e.Size, Error: red.Replace(e.Error)}
			if e.Got != "" {
				got := e.Got
				x.Value = &got
			}
			w.Expects = append(w.Expects, x)
		}
		n.mu.Lock()
		for _, cn := range n.counterNotes {
			cn.Reason = red.Replace(cn.Reason)
			w.CounterNotes = append(w.CounterNotes, cn)
		}
		n.mu.Unlock()
		doc.Workloads = append(doc.Workloads, w)
		doc.Samples = append(doc.Samples, o.Samples...)
	}
	if doc.Samples == nil {
		doc.Samples = []results.Sample{}
	}
	redactSamples(red, doc.Samples)
	doc.Artifacts = slices.Clone(r.artifacts)
	slices.SortFunc(doc.Artifacts, func(a, b results.Artifact) int { return strings.Compare(a.Path, b.Path) })
	doc.Platforms = platforms(doc, r.env.Facts)
	write := r.opts.WriteResults
	if write == nil {
		write = results.WriteRun
	}
	doc.Students = res.Students
	doc.CompleteMarker = true
	if err := write(r.dir, doc); err != nil {
		return fmt.Errorf("write results of run %s: %w", r.dir, err)
	}
	if len(doc.Students) > 0 {
		start := time.Now()
		err := r.writeStudents(doc)
		ev := Event{Type: "step.end", Step: "students", Status: "ok", Seconds: time.Since(start).Seconds(), Message: fmt.Sprintf("%d students", len(doc.Students))}
		if err != nil {
			ev.Status, ev.Error = "failed", err.Error()
		}
		r.emit(ev)
		if err != nil {
			return fmt.Errorf("write results of run %s: %w", r.dir, err)
		}
	}
	return nil
}

// ownCaptures are the files, pulled into the run directory, of the
// captures scoped to n alone: what the wire carried during that workload
// (labs/lossy.hcl scopes one capture to each loss point).
func (r *runner) ownCaptures(n *workloadNode) []string {
	var out []string
	for _, c := range n.captures { // the scoped ones that cover it
		if len(c.during) != 1 {
			continue
		}
		for _, f := range c.op.Files {
			if rel, ok := r.pulled[c.op.Host][f.Path]; ok {
				out = append(out, rel)
			}
		}
	}
	return out
}

// redactSamples redacts what of a sample a lab's expression may have made:
// a metric block's unit ("u${var.token}" went raw to results.json,
// summary.md, junit.xml and report.html), the devices (an rxe block's
// name, attack round 14) and the texts of Meta.Extra. An Extra map and a
// Devices slice may be shared by samples: each gets its own.
func redactSamples(red *lab.Replacer, samples []results.Sample) {
	if red.Longest() == 0 {
		return
	}
	for i := range samples {
		s := &samples[i]
		s.Unit = red.Replace(s.Unit)
		s.Meta.Devices = redactAll(red, s.Meta.Devices)
		if len(s.Meta.Extra) > 0 {
			extra := make(map[string]string, len(s.Meta.Extra))
			for k, v := range s.Meta.Extra {
				extra[red.Replace(k)] = red.Replace(v)
			}
			s.Meta.Extra = extra
		}
	}
}

// redactAll is lines with the lab's sensitive values redacted.
func redactAll(red *lab.Replacer, lines []string) []string {
	if len(lines) == 0 {
		return nil
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = red.Replace(l)
	}
	return out
}

// ManifestFile lists every file of a run directory with its sha256.
const ManifestFile = results.ManifestFile

// ManifestEntry is one file of the run directory (engine/results owns
// the format: `rlab report` updates report.html's entry).
type ManifestEntry = results.ManifestEntry

// writeManifest hashes every file of the run directory and syncs it (and
// every folder), then writes manifest.json: after it, all is on disk.
//
// A class run directory holds thousands of small files (1,000 hosts: about
// 7,000, half of them hard links in the students' folders), and one fsync
// after another was seconds of a run: the files are hashed and synced by
// manifestWorkers at once (the filesystem commits concurrent syncs
// together), and a file linked under several names is read and synced
// once, its sum listed under each name.
func writeManifest(dir string) error {
	type file struct {
		rel, path string
		key       inode
	}
	var files []file
	var dirs []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			dirs = append(dirs, p)
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == ManifestFile || rel == results.CompleteFile {
			return nil
		}
		f := file{rel: filepath.ToSlash(rel), path: p}
		if info, err := d.Info(); err == nil {
			f.key = inodeOf(info)
		}
		files = append(files, f)
		return nil
	})
	if err != nil {
		return fmt.Errorf("write manifest of %s: %w", dir, err)
	}
	type sum struct {
		size int64
		hex  string
	}
	// One job per folder and per distinct file; a file without an inode
	// number (never on Linux) is its own.
	first := map[inode]int{}
	var jobs []func() (sum, error)
	job := make([]int, len(files)) // files[i]'s job
	for i, f := range files {
		if k, ok := first[f.key]; ok && f.key != (inode{}) {
			job[i] = k
			continue
		}
		job[i] = len(jobs)
		first[f.key] = len(jobs)
		p := f.path
		jobs = append(jobs, func() (sum, error) {
			f, err := os.Open(p)
			if err != nil {
				return sum{}, err
			}
			defer f.Close()
			h := sha256.New()
			n, err := io.Copy(h, f)
			if err != nil {
				return sum{}, err
			}
			if err := f.Sync(); err != nil {
				return sum{}, err
			}
			return sum{n, hex.EncodeToString(h.Sum(nil))}, nil
		})
	}
	for _, d := range dirs {
		jobs = append(jobs, func() (sum, error) { return sum{}, results.SyncDir(d) })
	}
	sums := make([]sum, len(jobs))
	errs := make([]error, len(jobs))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(manifestWorkers, len(jobs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				sums[i], errs[i] = jobs[i]()
			}
		}()
	}
	for i := range jobs {
		next <- i
	}
	close(next)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("write manifest of %s: %w", dir, err)
	}
	entries := make([]ManifestEntry, len(files))
	for i, f := range files {
		s := sums[job[i]]
		entries[i] = ManifestEntry{Path: f.rel, Size: s.size, SHA256: s.hex}
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Path < entries[j].Path })
	return writeJSON(filepath.Join(dir, ManifestFile), entries)
}

// manifestWorkers is how many files writeManifest hashes and syncs at once.
const manifestWorkers = 16

// inode names a file whatever its name: hard links share it.
type inode struct{ dev, ino uint64 }

func inodeOf(info fs.FileInfo) inode {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return inode{uint64(st.Dev), st.Ino}
	}
	return inode{}
}

// platforms is what each host the run's workloads and samples name ran
// on, from the facts read at connect time, once per host. A host without
// facts gets an empty entry, so every host a sample names is a key.
func platforms(doc *results.Run, facts map[string]*proto.Facts) map[string]results.Platform {
	out := map[string]results.Platform{}
	add := func(hosts []string) {
		for _, h := range hosts {
			if _, ok := out[h]; !ok {
				out[h] = PlatformOf(facts[h])
			}
		}
	}
	for _, w := range doc.Workloads {
		add(w.Hosts)
	}
	for _, s := range doc.Samples {
		add(s.Meta.Hosts)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// PlatformOf flattens a host's facts into the platform a result records.
func PlatformOf(f *proto.Facts) results.Platform {
	var p results.Platform
	if f == nil {
		return p
	}
	p.Virtualization, p.Vendor, p.Product, p.Version = f.Platform.Virtualization, f.Platform.Vendor, f.Platform.Product, f.Platform.Version
	p.CPUModel, p.Kernel, p.RDMACore = f.Platform.CPUModel, f.Kernel, f.Platform.RDMACore
	p.Distro = strings.TrimSpace(f.Platform.DistroID + " " + f.Platform.DistroVersion)
	return p
}

// rdmaCarrier names how a device carries RDMA for results.Workload.RDMA:
// "RoCE (rxe)", "iWARP (siw)", "InfiniBand (hw)".
func rdmaCarrier(info *proto.DeviceInfo) string {
	switch {
	case info.Transport != "" && info.Driver != "":
		return info.Transport + " (" + info.Driver + ")"
	case info.Transport != "":
		return info.Transport
	}
	return info.Driver
}
