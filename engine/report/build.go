package report

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/rlab-dev/rlab/engine/rundir"
	"io"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/engine/results"
	"github.com/rlab-dev/rlab/engine/termsafe"
	"github.com/rlab-dev/rlab/kinds"
)

// Options changes how a report is built. The zero value is the default.
type Options struct {
	// Summarize reads one capture file; nil uses SummarizePcap.
	Summarize Summarizer
	// NoGraphviz leaves the topology picture out (its DOT stays).
	NoGraphviz bool
	// Lab is the lab as the run loaded it (with its -var values). Nil: the
	// report loads the copy under lab/, which works unless a variable had
	// no default.
	Lab *lab.Lab
	// Guard, when set, is called before the report loads the copy under
	// lab/ (Lab nil) and the function it returns once it is loaded: the
	// command's evaluation guard, so a received run directory's lab is
	// bounded as rlab validate bounds it (SECURITY 109).
	Guard func(lab string) (stop func())
	// After names the files the caller writes once report.html is on disk
	// (the run's manifest.json, which hashes this page, and complete.json,
	// which names the manifest): the page lists them as written after it,
	// so the run's own report names every file of the finished run.
	After []string
}

// maxSource bounds how much of one lab file is shown inline.
const maxSource = 256 << 10

// Build reads a run directory into the report's data. A run directory that
// is missing parts (a failed run, a run still going) still gives a report:
// what could not be read is named in Data.Warnings. Only a directory that
// does not exist is an error.
func Build(runDir string, opts Options) (*Data, error) {
	st, err := os.Stat(runDir)
	if err != nil {
		return nil, fmt.Errorf("read run directory %q: %w", runDir, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("read run directory %q: not a directory", runDir)
	}
	if opts.Summarize == nil {
		opts.Summarize = SummarizePcap
	}
	abs, _ := filepath.Abs(runDir)
	d := &Data{RunID: filepath.Base(abs)}
	b := &builder{dir: runDir, d: d, opts: opts}

	b.files()
	b.loadLab()
	doc := b.runDoc()
	b.doc = doc
	b.lab(doc)
	b.hosts(doc)
	b.workloads(doc)
	b.students(doc) // students.go: needs the workloads' anchors and the hosts
	b.compare()
	b.captures()
	b.why()       // why.go: needs the captures' analysis
	b.lossSweep() // loss.go: needs why
	b.timeline()
	b.topology()
	return d, nil
}

type builder struct {
	dir  string
	d    *Data
	opts Options
	all  []Link // every file in the run dir
	// facts are the hosts' facts.json files read so far, by file: one
	// file hard-linked into every host's folder is read once.
	facts rundir.Files
	// byPath is all by path, made at the first workload that needs it (a
	// class's thousand workloads each made it anew: O(n²)).
	byPath map[string]Link
	// samples of each workload, by name, for the RDMA vs TCP comparison
	samples map[string][]results.Sample
	model   *lab.Lab // the lab as run, when it loads on its own
	doc     *results.Run
	// own is each workload's captures scoped to it alone (results.json),
	// wire is each capture file's analysis, as much of it as why.go
	// joins (captures); notAnalysed the capture files past maxCaptures.
	own         map[string][]string
	wire        map[string]*wireSum
	notAnalysed map[string]bool
	// redact is redactor()'s, made once: lab.Redactor joins every
	// sensitive value to find its cached replacer, and a call per workload
	// and capture file joined them thousands of times.
	redact     *lab.Replacer
	redactOnce sync.Once
	// pivot is what is left of the cells past four a sample that the
	// report's tables may hold together (sampleTable); expectsLeft what is
	// left of the expects its workloads may show (maxExpects).
	pivot       *results.PivotBudget
	expectsLeft int
}

func (b *builder) warn(format string, args ...any) {
	b.d.Warnings = append(b.d.Warnings, fmt.Sprintf(format, args...))
}

// files lists every regular file of the run directory for the raw-outputs
// section. Symlinks are listed but never followed.
func (b *builder) files() {
	_ = filepath.WalkDir(b.dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			b.warn("list %s: %v", p, err)
			return nil
		}
		if e.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(b.dir, p)
		if err != nil || rel == "report.html" || strings.HasPrefix(filepath.Base(rel), ".") {
			return nil
		}
		l := Link{Path: filepath.ToSlash(rel), Label: filepath.ToSlash(rel)}
		if info, err := e.Info(); err == nil && info.Mode().IsRegular() {
			l.Size = humanBytes(info.Size())
		}
		b.all = append(b.all, l)
		return nil
	})
	files := slices.Clone(b.all)
	for _, p := range b.opts.After {
		if !slices.ContainsFunc(files, func(l Link) bool { return l.Path == p }) {
			files = append(files, Link{Path: p, Label: p, Note: "written after this page"})
		}
	}
	sort.Slice(b.all, func(i, j int) bool { return b.all[i].Path < b.all[j].Path })
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	b.d.Files = files
	if b.d.Files == nil {
		b.d.Files = []Link{}
	}
}

func (b *builder) read(rel string) ([]byte, bool) {
	data, err := rundir.ReadFile(b.dir, rel)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			b.warn("read %s: %v", rel, err)
		}
		return nil, false
	}
	return data, true
}

// runDoc reads results.json through results.Decode, the one reader of the
// format (older versions are upgraded on read): writer and report share
// one type.
func (b *builder) runDoc() *results.Run {
	data, ok := b.read(results.ResultsFile)
	if !ok {
		b.warn("results.json is missing: the run recorded no results")
		return &results.Run{}
	}
	doc, err := results.Decode(data)
	if err != nil {
		b.warn("read results.json: %v", err)
		return &results.Run{}
	}
	b.d.Run = RunInfo{Status: doc.Status, Started: whenText(doc.Started), Finished: whenText(doc.Finished), Error: doc.Error}
	if !doc.Started.IsZero() || doc.Duration != 0 {
		b.d.Run.Duration = secondsText(doc.Duration)
	}
	return doc
}

// lab fills the lab's name, description and sources from lab/ (the files
// as run) and results.json. A received run directory's lab/ may hold files
// of any size, under many names (SECURITY 117): each distinct file is read
// only as far as it is shown (maxSource), and only a file read whole, of
// at most maxHeaderBytes, is parsed for its lab block (HCL's syntax tree
// takes some 270 bytes a byte: an 18 MB file took 4.9 GB).
func (b *builder) lab(doc *results.Run) {
	l := &b.d.Lab
	l.Name, l.Description = doc.Lab, doc.Description
	if b.model != nil {
		l.Name = cmp.Or(l.Name, b.model.Name)
		l.Description = cmp.Or(l.Description, b.model.Description)
	}
	l.Sources = []SourceFile{}
	seen := rundir.Files{}
	headerBytes := 0
	for _, f := range b.all {
		if !strings.HasPrefix(f.Path, "lab/") {
			continue
		}
		data, whole, ok := b.readHead(f.Path, maxSource, seen)
		if !ok {
			continue
		}
		if data == nil && !whole {
			l.Sources = append(l.Sources, SourceFile{Path: f.Path, Text: "(the same file as one above)"})
			continue
		}
		if whole && (l.Name == "" || l.Description == "") && headerBytes+len(data) <= maxHeaderBytes {
			headerBytes += len(data)
			name, desc := labHeader(f.Path, data)
			if l.Name == "" {
				l.Name = name
			}
			if l.Description == "" {
				l.Description = desc
			}
		}
		text := string(data)
		for i := 0; !whole && i < utf8.UTFMax && !utf8.ValidString(text); i++ {
			text = text[:len(text)-1] // a character the cut split
		}
		switch {
		case !utf8.ValidString(text) || strings.ContainsRune(text, 0):
			text = "(not text; see the file)"
		case !whole:
			text += "\n… (cut; see the file)"
		}
		l.Sources = append(l.Sources, SourceFile{Path: f.Path, Text: text})
	}
	if l.Name == "" {
		l.Name = b.d.RunID
	}
}

// maxHeaderBytes bounds the lab/ text parsed for the lab's name and
// description, all files together: a lab block is near a file's top, and
// the lab as loaded (b.model) names them when it loads.
const maxHeaderBytes = 1 << 20

// readHead reads at most n bytes of rel under the run directory, confined
// as read is; whole says the file had no more. A file seen already (by
// identity, the open file's) is not read: nil data, not whole.
func (b *builder) readHead(rel string, n int, seen rundir.Files) (data []byte, whole, ok bool) {
	f, err := rundir.Open(b.dir, rel)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			b.warn("read %s: %v", rel, err)
		}
		return nil, false, false
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil {
		if sys, ok := st.Sys().(*syscall.Stat_t); ok {
			id := [2]uint64{uint64(sys.Dev), sys.Ino}
			if seen[id] {
				return nil, false, true
			}
			seen[id] = true
		}
	}
	data, err = io.ReadAll(io.LimitReader(f, int64(n)+1))
	if err != nil {
		b.warn("read %s: %v", rel, err)
		return nil, false, false
	}
	if len(data) > n {
		return data[:n], false, true
	}
	return data, true, true
}

// labHeader reads `lab "NAME" { description = "..." }` from one lab file.
// Only literal values are taken: the report has no variables to evaluate.
func labHeader(filename string, src []byte) (name, desc string) {
	// Outside the evaluation guard: what Load refuses to parse is not
	// parsed here either: a template hcl takes quadratic time in (a
	// received lab/ file of 60 KB held rlab report 12 s, attack round
	// 16), brackets or unary operators nested past Go's stack (250 KB
	// of `[` or `!` crashed rlab report, attack round 17).
	if lab.Unparsable(filename, src) {
		return "", ""
	}
	f, diags := hclsyntax.ParseConfig(src, filename, hcl.InitialPos)
	if diags.HasErrors() || f == nil {
		return "", ""
	}
	body, ok := f.Body.(*hclsyntax.Body)
	if !ok {
		return "", ""
	}
	for _, blk := range body.Blocks {
		if blk.Type != "lab" || len(blk.Labels) != 1 {
			continue
		}
		name = blk.Labels[0]
		if a, ok := blk.Body.Attributes["description"]; ok {
			if v, d := a.Expr.Value(nil); !d.HasErrors() && v.IsKnown() && !v.IsNull() && v.Type().FriendlyName() == "string" {
				desc = v.AsString()
			}
		}
		return name, desc
	}
	return "", ""
}

// hosts lists every hosts/<slug>/ folder: first in the order the
// workloads name them (server before client), then the rest by name.
func (b *builder) hosts(doc *results.Run) {
	b.d.Hosts = []Host{}
	present := map[string]bool{}
	var slugs []string
	for _, f := range b.all {
		parts := strings.Split(f.Path, "/")
		if len(parts) >= 3 && parts[0] == "hosts" && !present[parts[1]] {
			present[parts[1]] = true
			slugs = append(slugs, parts[1])
		}
	}
	rank := map[string]int{}
	for _, w := range doc.Workloads {
		for _, h := range w.Hosts {
			if s := slugOf(h); present[s] {
				if _, ok := rank[s]; !ok {
					rank[s] = len(rank)
				}
			}
		}
	}
	sort.SliceStable(slugs, func(i, j int) bool {
		ri, oki := rank[slugs[i]]
		rj, okj := rank[slugs[j]]
		switch {
		case oki && okj:
			return ri < rj
		case oki != okj:
			return oki
		}
		return slugs[i] < slugs[j]
	})
	prov := b.provisions() // provision.go
	for _, s := range slugs {
		h := b.host(s)
		if p := prov[s]; p != nil {
			p.versionsFrom(h.Tools)
			h.Provision = p
		}
		b.d.Hosts = append(b.d.Hosts, h)
	}
}

func (b *builder) host(slug string) Host {
	h := Host{Slug: slug}
	rel := "hosts/" + slug + "/facts.json"
	if b.facts == nil {
		b.facts = rundir.Files{}
	}
	if !b.facts.First(filepath.Join(b.dir, filepath.FromSlash(rel))) {
		h.Errors = append(h.Errors, "facts.json is the same file as another host's (a link): not read again")
		return h
	}
	data, ok := b.read(rel)
	if !ok {
		h.Errors = append(h.Errors, "no facts.json: the host's facts were not gathered")
		return h
	}
	var f proto.Facts
	err := proto.CheckValues(data, proto.MaxValues)
	if err == nil {
		err = json.Unmarshal(data, &f)
	}
	if err != nil {
		h.Errors = append(h.Errors, fmt.Sprintf("read %s: %v", rel, err))
		return h
	}
	h.FactsLink = rel
	h.Hostname, h.Kernel, h.OS, h.Arch, h.CPUs = f.Hostname, f.Kernel, f.OS, f.Arch, f.CPUs
	if f.MemBytes > 0 {
		h.Memory = humanBytes(int64(min(f.MemBytes, math.MaxInt64)))
	}
	pl := f.Platform
	h.Machine = strings.Join(nonEmpty(pl.Vendor, pl.Product, pl.Version), " ")
	h.Virtualization, h.CPUModel, h.RDMACore = pl.Virtualization, pl.CPUModel, pl.RDMACore
	h.Distro = strings.Join(nonEmpty(pl.DistroID, pl.DistroVersion), " ")
	if len(pl.DistroIDLike) > 0 {
		h.Distro += " (like " + strings.Join(pl.DistroIDLike, ", ") + ")"
	}
	h.RXEModule = f.RXEModule
	h.Memlock = memlock(f.MemlockSoft)
	h.Errors = append(h.Errors, f.Errors...)
	names := make([]string, 0, len(f.Tools))
	for n := range f.Tools {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		v := f.Tools[n].Version
		if v == "" {
			v = "present"
		}
		h.Tools = append(h.Tools, KV{n, v})
	}
	// A host's facts may name 25,000 netdevs and as many devices on one of
	// them (a facts answer holds up to proto.MaxValues objects): each
	// netdev's row named every device on its name, 25,000 times 25,000
	// names, gigabytes for one host (SECURITY 142). The rows are cut to
	// maxFactRows and the names a row lists to maxRowNames; facts.json,
	// linked, holds them all.
	if n := len(f.RDMA) - maxFactRows; n > 0 {
		h.Notes = append(h.Notes, fmt.Sprintf("%d RDMA devices, %d more than shown (all in facts.json)", len(f.RDMA), n))
	}
	if n := len(f.Netdevs) - maxFactRows; n > 0 {
		h.Notes = append(h.Notes, fmt.Sprintf("%d netdevs, %d more than shown (all in facts.json)", len(f.Netdevs), n))
	}
	devicesOn := map[string][]string{}
	for _, r := range f.RDMA[:min(len(f.RDMA), maxFactRows)] {
		d := RDMADev{Name: r.Name, Driver: r.Driver, Parent: r.Parent, NodeGUID: r.NodeGUID}
		if len(r.Ports) > 0 {
			p := r.Ports[0]
			d.Port, d.State, d.ActiveMTU, d.MaxMTU = p.Port, p.State, p.ActiveMTU, p.MaxMTU
			for _, g := range p.GIDs {
				d.GIDs = append(d.GIDs, KV{fmt.Sprintf("%d (%s)", g.Index, g.Type), g.GID})
			}
		}
		h.RDMA = append(h.RDMA, d)
		if r.Parent != "" {
			devicesOn[r.Parent] = append(devicesOn[r.Parent], r.Name)
		}
	}
	for _, n := range f.Netdevs[:min(len(f.Netdevs), maxFactRows)] {
		h.Netdevs = append(h.Netdevs, Netdev{Name: n.Name, MTU: n.MTU, State: n.State, MAC: n.MAC,
			Addrs: joinSome(n.Addrs), Devices: joinSome(devicesOn[n.Name]),
			Driver: n.Driver, Speed: linkSpeed(n.SpeedMbps), PCIID: n.PCIID})
	}
	return h
}

// maxFactRows bounds the netdevs and the RDMA devices a host's section
// lists, and maxRowNames the names one of its cells joins.
const (
	maxFactRows = 1000
	maxRowNames = 20
)

// joinSome joins at most maxRowNames of ss, saying how many it left out.
func joinSome(ss []string) string {
	if len(ss) <= maxRowNames {
		return strings.Join(ss, " ")
	}
	return strings.Join(ss[:maxRowNames], " ") + fmt.Sprintf(" and %d more", len(ss)-maxRowNames)
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// linkSpeed writes sysfs' Mb/s as people read NIC speeds: "100 Mb/s",
// "10 Gb/s", "2.5 Gb/s"; "" when unknown.
func linkSpeed(mbps int) string {
	switch {
	case mbps <= 0:
		return ""
	case mbps < 1000:
		return fmt.Sprintf("%d Mb/s", mbps)
	}
	return strconv.FormatFloat(float64(mbps)/1000, 'f', -1, 64) + " Gb/s"
}

func memlock(v int64) string {
	switch {
	case v < 0:
		return "unlimited"
	case v == 0:
		return ""
	}
	return humanBytes(v)
}

// workloads groups the samples by workload, in the order results.json
// lists workloads (file order), then any workload only the samples name.
func (b *builder) workloads(doc *results.Run) {
	b.d.Workloads = []Workload{}
	byName := map[string][]results.Sample{}
	var order []string
	add := func(s results.Sample) {
		if _, ok := byName[s.Meta.Workload]; !ok {
			order = append(order, s.Meta.Workload)
		}
		byName[s.Meta.Workload] = append(byName[s.Meta.Workload], s)
	}
	for _, w := range doc.Workloads {
		if _, ok := byName[w.Name]; !ok {
			order = append(order, w.Name)
			byName[w.Name] = nil
		}
	}
	for _, s := range doc.Samples {
		add(s)
	}
	b.samples = byName
	docs := map[string]results.Workload{}
	b.own = map[string][]string{}
	for _, w := range doc.Workloads {
		docs[w.Name] = w
		b.own[w.Name] = w.Captures
	}
	b.pivot = results.NewPivotBudget()
	b.expectsLeft = maxExpects
	for i, name := range order {
		wd := docs[name]
		w := b.workload(i, name, wd, byName[name])
		b.d.Workloads = append(b.d.Workloads, w)
		if w.Status != "" && statusClass(w.Status) == "bad" {
			b.d.Problems = append(b.d.Problems, Problem{w.Anchor, fmt.Sprintf("workload %s (%s) %s", w.Name, w.Tool, w.Status), w.Error})
		}
		for _, e := range w.Expects {
			if !e.Held && !e.Skipped {
				what := fmt.Sprintf("workload %s: expect %s did not hold", w.Name, e.Condition)
				if e.Where != "" {
					what += " at " + e.Where
				}
				detail := e.Message
				if e.Value != "" {
					detail = strings.TrimSpace(detail + " (read " + e.Value + ")")
				}
				if e.Error != "" {
					detail = strings.TrimSpace(detail + " " + e.Error)
				}
				b.d.Problems = append(b.d.Problems, Problem{w.Anchor, what, detail})
			}
		}
		if w.ExpectsMoreFailed > 0 {
			b.d.Problems = append(b.d.Problems, Problem{w.Anchor, fmt.Sprintf("workload %s: %d more expects did not hold", w.Name, w.ExpectsMoreFailed), fmt.Sprintf("not shown: the report shows at most %d expects (results.json has them all)", maxExpects)})
		}
	}
}

func (b *builder) workload(i int, name string, wd results.Workload, samples []results.Sample) Workload {
	w := Workload{Name: name, Anchor: fmt.Sprintf("w%d", i), Tool: wd.Tool, Status: wd.Status,
		Error: wd.Error, Hosts: wd.Hosts, Devices: wd.Devices, RDMA: wd.RDMA}
	if wd.Name != "" {
		w.Duration = secondsText(wd.Duration)
	}
	if len(samples) > 0 {
		m := samples[0].Meta
		if w.Tool == "" {
			w.Tool = m.Tool
		}
		if len(w.Hosts) == 0 {
			w.Hosts = m.Hosts
		}
		if len(w.Devices) == 0 {
			w.Devices = m.Devices
		}
	}
	w.ChartFamily = chartFamily(w.Tool)
	if b.model != nil {
		if lw := b.model.WorkloadByName(name); lw != nil {
			w.Config = b.redactor().Replace(workloadConfig(lw))
		}
	}
	for _, e := range wd.Expects {
		if b.expectsLeft == 0 {
			// Counted, not shown (maxExpects).
			w.ExpectsMore++
			switch {
			case e.Held && e.Error == "":
				b.d.Expects.Held++
			case e.Skipped:
				b.d.Expects.Skipped++
			default:
				b.d.Expects.Failed++
				w.ExpectsMoreFailed++
			}
			continue
		}
		b.expectsLeft--
		x := Expect{Condition: e.Condition, Message: e.Message, Held: e.Held && e.Error == "", Skipped: e.Skipped, Where: expectWhere(e), Error: e.Error}
		if e.Value != nil {
			x.Value = *e.Value
		}
		switch {
		case x.Held:
			b.d.Expects.Held++
		case x.Skipped:
			b.d.Expects.Skipped++
		default:
			b.d.Expects.Failed++
		}
		w.Expects = append(w.Expects, x)
	}
	w.Impair = impairOf(samples) // loss.go
	w.Stack = stackOf(samples, wd.CounterNotes)
	w.Trouble = results.TroubleText(samples, name)
	samples = results.Measures(samples)
	w.Result = results.KeyNumbers(results.Workload{Name: name, Tool: w.Tool, Parse: wd.Parse, Metrics: wd.Metrics}, results.Aggregate(samples))
	w.Table = sampleTable(samples, b.pivot)
	w.Charts = workloadCharts(w.Anchor, samples)
	parseNotes(&w, wd)
	w.Links = b.workloadLinks(name, wd)
	return w
}

// chartFamily is the chart family of a tool, from the tool descriptor.
func chartFamily(tool string) string {
	if t, ok := kinds.Lookup(tool); ok && t.Chart != "" {
		return t.Chart
	}
	return "other"
}

// rdmaTool is true for the tools that run over an rxe device.
func rdmaTool(tool string) bool {
	t, ok := kinds.Lookup(tool)
	return ok && t.RDMA
}

// throughputOf is the metric a tool's View sets beside the others' in RDMA
// vs TCP and the loss sweep ("" for none, or an unknown tool), and whether
// the tool runs over RDMA (else it is the TCP baseline).
func throughputOf(tool string) (metric string, overRDMA bool) {
	t, ok := kinds.Lookup(tool)
	if !ok {
		return "", false
	}
	return t.View.Throughput, t.RDMA
}

// workloadLinks are the raw outputs of one workload: what results.json
// names, else the logs whose file name starts with the workload's slug.
func (b *builder) workloadLinks(name string, wd results.Workload) []Link {
	var out []Link
	if len(wd.Logs) > 0 {
		if b.byPath == nil {
			b.byPath = make(map[string]Link, len(b.all))
			for _, l := range b.all {
				b.byPath[l.Path] = l
			}
		}
		have := b.byPath
		for _, p := range wd.Logs {
			p = path.Clean(filepath.ToSlash(p))
			if !filepath.IsLocal(p) {
				continue
			}
			l, ok := have[p]
			if !ok {
				l = Link{Path: p, Label: p + " (missing)"}
			}
			out = append(out, l)
		}
		return out
	}
	slug := slugOf(name)
	for _, l := range b.all {
		parts := strings.Split(l.Path, "/")
		if len(parts) >= 4 && parts[0] == "hosts" && parts[2] == "logs" {
			base := parts[len(parts)-1]
			if base == slug || strings.HasPrefix(base, slug+".") || strings.HasPrefix(base, slug+"-") || strings.HasPrefix(base, slug+"_") || parts[3] == slug {
				out = append(out, l)
			}
		}
	}
	return out
}

// slugOf turns a reference name into the run directory's form:
// write_bw["ana"] -> write_bw.ana, write_bw[0] -> write_bw.0.
func slugOf(name string) string { return slugEscapes.Replace(name) }

var slugEscapes = strings.NewReplacer(`["`, ".", `"]`, "", "[", ".", "]", "")

// key is one row of a workload's table: a message size and a repeat.
type key struct {
	Size   int64
	Repeat int
}

// sampleTable pivots samples into rows (size, repeat) and one column per
// metric, in the order of results.Metrics().
func sampleTable(samples []results.Sample, pivot *results.PivotBudget) Table {
	t := Table{Columns: []string{}, Rows: [][]string{}}
	if len(samples) == 0 {
		return t
	}
	present := map[string]bool{}
	rows := map[key]map[string]results.Sample{}
	var keys []key
	hasSize := false
	for _, s := range samples {
		present[s.Metric] = true
		k := key{s.Meta.Size, s.Meta.Repeat}
		if s.Meta.Size > 0 {
			hasSize = true
		}
		if rows[k] == nil {
			rows[k] = map[string]results.Sample{}
			keys = append(keys, k)
		}
		rows[k][s.Metric] = s
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].Size != keys[j].Size {
			return keys[i].Size < keys[j].Size
		}
		return keys[i].Repeat < keys[j].Repeat
	})
	var cols []string
	for _, m := range results.Metrics() {
		if present[m.Name] {
			cols = append(cols, m.Name)
		}
	}
	var other []string // metrics not in the table: keep them, sorted
	for n := range present {
		if _, ok := results.MetricByName(n); !ok {
			other = append(other, n)
		}
	}
	sort.Strings(other)
	cols = append(cols, other...)
	if !pivot.Fits(len(keys)*len(cols), len(samples)) {
		return sampleList(samples, hasSize)
	}
	if hasSize {
		t.Columns = append(t.Columns, "size")
		t.Units = append(t.Units, "B")
	}
	t.Columns = append(t.Columns, "repeat")
	t.Units = append(t.Units, "")
	// Each column in its metric's recorded unit, as summary.md's tables
	// and every other view; the cell keeps the exact value (Raw).
	cu := map[string]results.Column{}
	for _, c := range cols {
		unit := ""
		var vals []float64
		for _, k := range keys {
			if s, ok := rows[k][c]; ok {
				if unit == "" {
					unit = s.Unit
				}
				vals = append(vals, s.Value)
			}
		}
		cu[c] = results.ColumnFor(unit, vals)
		t.Columns = append(t.Columns, fmt.Sprintf("%s [%s]", c, cu[c].Name()))
		t.Units = append(t.Units, unit)
	}
	for _, k := range keys {
		var row, raw []string
		if hasSize {
			row = append(row, results.HumanSize(k.Size))
			raw = append(raw, strconv.FormatInt(k.Size, 10))
		}
		row = append(row, strconv.Itoa(k.Repeat+1))
		raw = append(raw, "")
		for _, c := range cols {
			if s, ok := rows[k][c]; ok {
				row = append(row, cu[c].Format(s.Value))
				raw = append(raw, rawNum(s.Value))
			} else {
				row = append(row, "")
				raw = append(raw, "")
			}
		}
		t.add(row, raw)
	}
	return t
}

// sampleTable lays n samples out in at most 4n cells, and the tables of a
// report together in at most results.MaxPivotSlack more (the summary's
// rule): a received results.json whose samples each have a metric and a
// size of their own made one row and one column a sample, n squared cells:
// 5,000 samples (660 KB) made a 226 MB report.html with 2.2 GB of memory in
// 135 s (found in round 9's attack); with the slack per table, 500
// workloads of 100 such samples each (5.8 MB) made 5 million cells again:
// 98 s, 780 MB and a 53 MB report.html (SECURITY 164).

// maxExpects is how many expects the report's workloads show together,
// in order; past it each workload says how many more it has (and how many
// of those did not hold), and the totals count them all, as sampleTable's
// cells are bounded for the report together (results.PivotBudget). A lab has a
// few expects a workload, each checked at each size or repeat, but a
// received results.json is anyone's: 200,000 expects (38 MB) took `rlab
// report` 10.7 s and 311 MB and made a 57 MB report.html, each shown three
// times (the overview's dots, the workload's table, a problem when it did
// not hold) (SECURITY 196).
const maxExpects = 5_000

// sampleList is the samples one a row (size, repeat, metric, value), in
// the order results.json holds them: sampleTable's layout when the pivot
// would be mostly empty cells.
func sampleList(samples []results.Sample, hasSize bool) Table {
	t := Table{Columns: []string{}, Rows: [][]string{}}
	if hasSize {
		t.Columns = append(t.Columns, "size")
		t.Units = append(t.Units, "B")
	}
	t.Columns = append(t.Columns, "repeat", "metric", "value")
	t.Units = append(t.Units, "", "", "")
	for _, s := range samples {
		var row, raw []string
		if hasSize {
			row = append(row, results.HumanSize(s.Meta.Size))
			raw = append(raw, strconv.FormatInt(s.Meta.Size, 10))
		}
		row = append(row, strconv.Itoa(s.Meta.Repeat+1), s.Metric, results.HumanValue(s.Value, s.Unit))
		raw = append(raw, "", "", rawNum(s.Value))
		t.add(row, raw)
	}
	return t
}

// rawNum is a value exactly as results.json holds it.
func rawNum(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// bySize folds one metric's repeats per message size, sorted by size: the
// median (the figure rlab reports and compares, as summary.md does), the
// spread, and how many repeats each covers.
type sizeAgg struct {
	Size             int64
	Median, Min, Max float64
	N                int
}

func bySize(samples []results.Sample, metric string) []sizeAgg {
	vals := map[int64][]float64{}
	var sizes []int64
	for _, s := range samples {
		if s.Metric != metric || math.IsNaN(s.Value) || math.IsInf(s.Value, 0) {
			continue
		}
		if _, ok := vals[s.Meta.Size]; !ok {
			sizes = append(sizes, s.Meta.Size)
		}
		vals[s.Meta.Size] = append(vals[s.Meta.Size], s.Value)
	}
	sort.Slice(sizes, func(i, j int) bool { return sizes[i] < sizes[j] })
	out := make([]sizeAgg, 0, len(sizes))
	for _, sz := range sizes {
		v := vals[sz]
		a := sizeAgg{Size: sz, Median: results.Median(v), Min: v[0], Max: v[0], N: len(v)}
		for _, x := range v {
			a.Min, a.Max = math.Min(a.Min, x), math.Max(a.Max, x)
		}
		out = append(out, a)
	}
	return out
}

func unitOf(samples []results.Sample, metric string) string {
	for _, s := range samples {
		if s.Metric == metric {
			return s.Unit
		}
	}
	if m, ok := results.MetricByName(metric); ok {
		return m.Unit
	}
	return ""
}

func has(samples []results.Sample, metric string) bool {
	for _, s := range samples {
		if s.Metric == metric {
			return true
		}
	}
	return false
}

// series builds one chart series: a metric's median per size, with the
// spread of the repeats.
func series(samples []results.Sample, metric, name string) seriesIn {
	unit := unitOf(samples, metric)
	s := seriesIn{Name: name}
	for _, a := range bySize(samples, metric) {
		title := fmt.Sprintf("%s at %s B: %s %s", name, strconv.FormatInt(a.Size, 10), results.FormatValue(a.Median), unit)
		p := xy{X: float64(a.Size), Y: a.Median}
		if a.N > 1 {
			title += fmt.Sprintf(" (median of %d repeats, %s to %s)", a.N, results.FormatValue(a.Min), results.FormatValue(a.Max))
			p.Lo, p.Hi, p.Spread = a.Min, a.Max, true
		}
		p.Title = title
		s.Pts = append(s.Pts, p)
	}
	return s
}

// workloadCharts draws the charts the tools' Views declare that a
// workload's metrics have values for: bandwidth and message rate against
// message size for bandwidth tools, latency percentiles for latency tools,
// pingpong throughput when several sizes ran.
func workloadCharts(anchor string, samples []results.Sample) []*Chart {
	var out []*Chart
	for _, c := range kinds.Charts() {
		when := c.When
		if when == nil {
			for _, s := range c.Series {
				when = append(when, s.Metric)
			}
		}
		drawn := false
		for _, m := range when {
			drawn = drawn || has(samples, m)
		}
		if !drawn || len(c.Series) == 0 || len(bySize(samples, c.Series[0].Metric)) < c.MinSizes {
			continue
		}
		// The recorded unit, as the table beneath and every other view.
		unit := unitOf(samples, c.Series[0].Metric)
		id := anchor + "-" + c.ID
		switch c.Type {
		case kinds.Bars:
			out = append(out, barChart(id, c.Title, unit, sizeBars(samples, c.Series)))
		default:
			var in []seriesIn
			for _, s := range c.Series {
				if has(samples, s.Metric) {
					in = append(in, series(samples, s.Metric, s.Name))
				}
			}
			out = append(out, lineChart(id, c.Title, "message size [bytes]", unit, true, in))
		}
	}
	return out
}

// sizeBars groups the series' medians by message size: a group per size,
// ascending, a bar per series with a value there.
func sizeBars(samples []results.Sample, series []kinds.Series) []barGroup {
	groups := map[int64]*barGroup{}
	var sizes []int64
	for _, l := range series {
		for _, a := range bySize(samples, l.Metric) {
			g, ok := groups[a.Size]
			if !ok {
				g = &barGroup{Label: humanSize(a.Size) + " B"}
				groups[a.Size] = g
				sizes = append(sizes, a.Size)
			}
			g.Bars = append(g.Bars, barIn{l.Name, a.Median, unitOf(samples, l.Metric)})
		}
	}
	sort.Slice(sizes, func(i, j int) bool { return sizes[i] < sizes[j] })
	var bars []barGroup
	for _, sz := range sizes {
		bars = append(bars, *groups[sz])
	}
	return bars
}

// stackOf is "what the stack saw" of a workload: its counter samples that
// moved, as a table, and its counter notes; nil when it has neither.
func stackOf(samples []results.Sample, notes []results.CounterNote) *Stack {
	cols := []string{"host", "device", "counter", "delta"}
	st := &Stack{Trouble: Table{Columns: cols}, Traffic: Table{Columns: cols}}
	n := 0
	for _, s := range samples {
		if !results.IsCounter(s) {
			continue
		}
		n++
		if s.Value == 0 {
			st.Still++
			continue
		}
		t := &st.Traffic
		if c, ok := results.CounterByName(s.Metric); ok && c.Class == results.CounterTrouble {
			t = &st.Trouble
		}
		t.Rows = append(t.Rows, []string{strings.Join(s.Meta.Hosts, ","), strings.Join(s.Meta.Devices, ","), s.Metric,
			results.FormatValue(s.Value) + " " + s.Unit})
	}
	for _, t := range []*Table{&st.Trouble, &st.Traffic} {
		sort.SliceStable(t.Rows, func(i, j int) bool {
			a, b := t.Rows[i], t.Rows[j]
			for k := 0; k < 3; k++ {
				if a[k] != b[k] {
					return a[k] < b[k]
				}
			}
			return false
		})
	}
	for _, cn := range notes {
		st.Notes = append(st.Notes, CounterNote{Problem: cn.Problem, What: cn.What(), Reason: cn.Reason})
	}
	if n == 0 && len(st.Notes) == 0 {
		return nil
	}
	return st
}

// parseNotes fills what the output parser said about a workload's runs and,
// for a bidirectional sum, labels its bandwidth and message rate wherever
// the page shows them (table columns, chart titles). Host text is made
// printable (termsafe), as in summary.md.
func parseNotes(w *Workload, wd results.Workload) {
	rw := results.Workload{Name: w.Name, Tool: w.Tool, Parse: wd.Parse}
	lines, more := rw.ParseLines()
	for _, l := range lines {
		runs := strings.Join(l.Runs, "; ")
		if len(l.Runs) > 3 {
			runs = fmt.Sprintf("%d runs", len(l.Runs))
		}
		w.Parse = append(w.Parse, ParseLine{Text: termsafe.Line(l.Text), Unread: l.Unread, Runs: runs})
	}
	if more > 0 {
		w.Parse = append(w.Parse, ParseLine{Text: fmt.Sprintf("%d more lines past the cap of %d per run (the raw outputs keep them)", more, results.MaxParseLines), Runs: "–"})
	}
	w.ParseSummary = termsafe.Line(rw.ParseSummary())
	if !rw.Bidirectional() {
		return
	}
	w.Bidirectional = true
	for i, c := range w.Table.Columns {
		if strings.HasPrefix(c, "bw_") || strings.HasPrefix(c, "msg_rate ") {
			w.Table.Columns[i] = strings.TrimSuffix(c, "]") + ", " + results.BothDirections + "]"
		}
	}
	for _, c := range w.Charts {
		if strings.HasPrefix(c.Title, "Bandwidth") || strings.HasPrefix(c.Title, "Message rate") {
			c.Title += " (" + results.BothDirections + ")"
		}
	}
}

// expectWhere says at which size and repeat an expect was evaluated.
func expectWhere(e results.Expect) string {
	s := ""
	if e.Size > 0 {
		s = "size " + humanSize(e.Size)
	}
	if e.Repeat != nil {
		if s != "" {
			s += ", "
		}
		s += fmt.Sprintf("repeat %d", *e.Repeat+1)
	}
	return s
}

// secondsText prints a duration in seconds.
func secondsText(f float64) string { return fmtNum(f) + " s" }

// whenText prints a time as people read it, in UTC ("" for none).
func whenText(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}
