package report

import (
	"errors"
	"fmt"
	"github.com/rlab-dev/rlab/engine/rundir"
	"math"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rlab-dev/rlab/engine/attrib"
	"github.com/rlab-dev/rlab/engine/iograph"
	"github.com/rlab-dev/rlab/engine/iwarp"
	"github.com/rlab-dev/rlab/engine/roce"
)

// CaptureStats is what the report shows of one capture file: the RoCEv2
// summary (per connection and opcode, problems, the CM control plane) and
// throughput over time.
type CaptureStats struct {
	Summary *roce.Summary
	IO      *iograph.Graph
	// IWARP is the iWARP found in the capture's TCP connections (nil or no
	// connections: none).
	IWARP *iwarp.Summary
}

// Summarizer reads a capture file. SummarizePcap is the default; tests and
// other callers may hand in another.
type Summarizer func(file string) (*CaptureStats, error)

// SummarizePcap decodes a pcap or pcapng file with engine/roce and bins its
// throughput with engine/iograph: 100 ms intervals, shortened by decades
// (two reads of the file) when the capture spans under two seconds, so a
// short capture still draws a graph. Truncated and malformed frames are
// counted by the decoder, never fatal.
func SummarizePcap(file string) (*CaptureStats, error) {
	return SummarizePcaps([]string{file})
}

// SummarizePcaps is SummarizePcap of one capture split into several files
// (tcpdump's ring of -C/-W files: cap.x.pcap0, cap.x.pcap1, ...), read as
// one capture in the order of their first packets.
func SummarizePcaps(files []string) (*CaptureStats, error) {
	iv := 100 * time.Millisecond
	files = OrderCaptureFiles(files)
	st, err := summarizeSplit(files, iv)
	if err != nil {
		return nil, err
	}
	if st == nil { // more connections than a split can merge
		s := roce.NewSummary()
		g := iograph.NewBuilder(iv)
		iw := iwarpFeeding(g)
		res, err := ScanCapture(files, func(p *roce.Packet) error {
			s.Add(p)
			g.Add(p)
			iw.Add(p)
			return nil
		})
		if err != nil {
			return nil, err
		}
		s.CutShort = res.CutShort
		s.Finish()
		st = &CaptureStats{Summary: s, IO: g.Graph(), IWARP: iw.Finish()}
	}
	s := st.Summary
	if fine := ioInterval(s.Last.Sub(s.First)); fine < iv && s.Frames > 1 {
		g := iograph.NewBuilder(fine)
		var iw *iwarp.Analyzer
		if len(st.IWARP.Conns) > 0 {
			iw = iwarpFeeding(g)
		}
		if _, err := ScanCapture(files, func(p *roce.Packet) error {
			g.Add(p)
			if iw != nil {
				iw.Add(p)
			}
			return nil
		}); err == nil {
			st.IO = g.Graph()
		}
	}
	return st, nil
}

// summarizeSplit is SummarizePcaps' first pass, split by flow over every
// core, one worker on one core (AnalyzeSplit; the IO graph drawn before
// the iWARP analysis gives up its open holes, as the one-pass reader
// draws it): nil when the split cannot be merged.
func summarizeSplit(files []string, iv time.Duration) (*CaptureStats, error) {
	a, ok, err := AnalyzeSplit(files, runtime.GOMAXPROCS(0), iv, false)
	if err != nil || !ok {
		return nil, err
	}
	return &CaptureStats{Summary: a.Summary, IO: a.IO, IWARP: a.IWARP}, nil
}

// Analysis is what one read of a capture makes: the RoCEv2 summary
// (finished), the iWARP one and the IO graph (nil unless asked for).
type Analysis struct {
	Summary *roce.Summary
	IWARP   *iwarp.Summary
	IO      *iograph.Graph
	Result  roce.ScanResult
}

// AnalyzeSplit reads the files of one capture on workers goroutines
// (roce.ScanSplitSummaries): each worker keeps a summary and an IO graph
// (bins of iv; 0: no graph) of the frames it decodes, with the
// order-dependent part of the summary and the iWARP analysis of the flows
// it owns, and they are merged at the end into what one pass over every frame in file order
// makes. finishIntoGraph says whether the FPDUs the iWARP analyses give up
// at the end are drawn, as when the one-pass caller finishes its analyzer
// before taking the graph. ok is false when the parts cannot be merged
// (roce.Merge, iwarp.Merge): read the capture on one core instead.
func AnalyzeSplit(files []string, workers int, iv time.Duration, finishIntoGraph bool) (a *Analysis, ok bool, err error) {
	workers = max(1, min(workers, 255)) // as roce.ScanSplitSummaries takes
	sums := make([]*roce.Summary, workers)
	iws := make([]*iwarp.Analyzer, workers)
	var gs []*iograph.Builder
	var start time.Time
	var started bool
	if iv > 0 {
		gs = make([]*iograph.Builder, workers)
		start, started = graphStart(files)
	}
	for w := range sums {
		sums[w] = roce.NewSummary()
		if gs != nil {
			gs[w] = iograph.NewBuilder(iv)
			if started {
				gs[w].SetStart(start)
			}
			iws[w] = iwarpFeeding(gs[w])
		} else {
			iws[w] = iwarp.NewAnalyzer()
		}
	}
	sources := make([]roce.Source, len(files))
	for i, f := range files {
		sources[i] = roce.FileSource(f)
	}
	// The IO graph's bins add up in any order: drawn by the worker that
	// decodes each frame. The iWARP analyses reassemble their TCP streams
	// in order: on the worker that owns each connection.
	var each func(w int, p *roce.Packet)
	if gs != nil {
		each = func(w int, p *roce.Packet) { gs[w].Add(p) }
	}
	res, err := roce.ScanSplitSummaries(sources, sums, each, func(w int, p *roce.Packet) { iws[w].Add(p) })
	if err != nil {
		return nil, false, err
	}
	a = &Analysis{Result: res}
	if a.Summary, ok = roce.Merge(sums); !ok {
		return nil, false, nil
	}
	a.Summary.CutShort = res.CutShort
	a.Summary.Finish()
	if gs != nil && !finishIntoGraph {
		a.IO = iograph.Merge(gs).Graph()
	}
	if a.IWARP, ok = iwarp.Merge(iws); !ok {
		return nil, false, nil
	}
	if gs != nil && finishIntoGraph {
		a.IO = iograph.Merge(gs).Graph()
	}
	return a, true, nil
}

var errStartFound = errors.New("graph start found")

// graphStart is where one IO graph builder over every frame in file order
// starts: the time of the first RoCEv2 or TCP frame (an iWARP FPDU is never
// before the TCP frames that carried it).
func graphStart(files []string) (t time.Time, ok bool) {
	for _, f := range files {
		_, err := roce.ScanFile(f, func(p *roce.Packet) error {
			if p.Proto == roce.ProtoRoCE || p.Proto == roce.ProtoTCP {
				t, ok = p.Time, true
				return errStartFound
			}
			return nil
		})
		if ok || err != nil && !errors.Is(err, errStartFound) {
			return t, ok
		}
	}
	return t, ok
}

// iwarpFeeding returns an iWARP analyzer that draws each FPDU in g.
func iwarpFeeding(g *iograph.Builder) *iwarp.Analyzer {
	iw := iwarp.NewAnalyzer()
	iw.OnEvent = func(e *iwarp.Event) {
		if e.MPA == nil {
			g.AddIWARP(e.Time, e.Bytes, iwarp.IOSeries(e.Seg.Opcode))
		}
	}
	return iw
}

// ScanCapture reads the files of one capture one after another, in the
// order given, as roce.ScanFile reads one, decoding on every CPU
// (roce.ScanParallel: fn still sees the packets in file order). CutShort
// is set when any file ends inside a frame.
func ScanCapture(files []string, fn func(*roce.Packet) error) (roce.ScanResult, error) {
	var total roce.ScanResult
	workers := runtime.GOMAXPROCS(0)
	if workers < 2 {
		workers = 0 // one CPU: no pipeline to pay for
	}
	for _, f := range files {
		res, err := roce.ScanFileParallel(f, workers, fn)
		total.Frames += res.Frames
		total.CutShort = total.CutShort || res.CutShort
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

var errFirstPacket = errors.New("first packet read")

// OrderCaptureFiles sorts the files of one capture by the time of their
// first packet: after a ring wraps, cap.x.pcap0 holds the newest packets,
// so name order is not time order. Files without a readable packet go last,
// in name order.
func OrderCaptureFiles(files []string) []string {
	type fileTime struct {
		name string
		t    time.Time
		ok   bool
	}
	ft := make([]fileTime, len(files))
	for i, f := range files {
		ft[i].name = f
		_, err := roce.ScanFile(f, func(p *roce.Packet) error {
			ft[i].t, ft[i].ok = p.Time, true
			return errFirstPacket
		})
		if err != nil && !errors.Is(err, errFirstPacket) {
			ft[i].ok = false
		}
	}
	sort.SliceStable(ft, func(i, j int) bool {
		a, b := ft[i], ft[j]
		if a.ok != b.ok {
			return a.ok
		}
		if a.ok && !a.t.Equal(b.t) {
			return a.t.Before(b.t)
		}
		return a.name < b.name
	})
	out := make([]string, len(ft))
	for i, f := range ft {
		out[i] = f.name
	}
	return out
}

// CaptureKey is the name shared by the files of one capture: tcpdump
// numbers ring files by appending digits to the name it was given
// (cap.roce.pcap0 … cap.roce.pcap3 are "cap.roce.pcap").
func CaptureKey(base string) string {
	i := strings.LastIndex(base, ".pcap")
	if i < 0 {
		return base
	}
	rest := base[i+len(".pcap"):]
	if strings.Trim(rest, "0123456789") == "" {
		return base[:i+len(".pcap")]
	}
	return base
}

// confined checks that every file of a capture is a regular file of the
// run directory (engine/rundir): a symlink out of it, or a FIFO or device
// named like a capture, is not read.
func confined(dir string, links []Link) error {
	for _, l := range links {
		f, err := rundir.Open(dir, l.Path)
		if err != nil {
			return err
		}
		err = rundir.CheckCapture(f)
		f.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// IsCaptureFile says whether a file name is one rlab's captures write.
func IsCaptureFile(base string) bool {
	return strings.HasSuffix(base, ".pcap") || strings.HasSuffix(base, ".pcapng") || CaptureKey(base) != base
}

// GroupCaptureFiles groups file paths by capture (CaptureKey of the base
// name, within one folder), keeping the order of each group's first file.
func GroupCaptureFiles(paths []string) [][]string {
	idx := map[string]int{}
	var groups [][]string
	for _, p := range paths {
		k := path.Join(filepath.ToSlash(filepath.Dir(p)), CaptureKey(filepath.Base(p)))
		i, ok := idx[k]
		if !ok {
			i = len(groups)
			idx[k] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], p)
	}
	return groups
}

// ioInterval is 100 ms, shortened by decades for short captures so the
// graph has at least 20 points.
func ioInterval(span time.Duration) time.Duration {
	iv := 100 * time.Millisecond
	for iv > time.Microsecond && span/iv < 20 {
		iv /= 10
	}
	return iv
}

// maxPoints bounds the points of one IO graph series on the page; longer
// series are summed into wider intervals first.
const maxPoints = 1000

// captureSection turns stats into the report's capture section; run,
// when it knows workloads, names each connection after its workload.
func captureSection(name, host string, link Link, st *CaptureStats, run *attrib.Run) Capture {
	s := st.Summary
	var named []attrib.Named
	if run != nil && len(run.Workloads) > 0 {
		named = run.Capture(s, st.IWARP)
	}
	// named lists the RoCEv2 flows, then the iWARP connections, then the
	// other TCP ones, each in the summaries' order.
	workloadOf := func(i int) string {
		if i < len(named) {
			return named[i].Name()
		}
		return "-"
	}
	c := Capture{Name: name, Host: host, Link: link, Packets: s.Frames, Bytes: s.Bytes,
		Invalid: s.Malformed + s.HeadersCut + s.BadOpcode}
	if s.Frames > 0 {
		c.Span = fmt.Sprintf("%s to %s (%s)", s.First.UTC().Format("2006-01-02 15:04:05.000000"),
			s.Last.UTC().Format("15:04:05.000000"), s.Last.Sub(s.First))
	}
	c.Traffic = fmt.Sprintf("RoCEv2 %d packets (%s), TCP %d packets (%s), other %d packets",
		s.RoCEPackets, humanBytes(s.RoCEBytes), s.TCPPackets, humanBytes(s.TCPBytes), s.Other)
	if s.Truncated > 0 {
		c.Notes = append(c.Notes, fmt.Sprintf("%d frames were cut by the snaplen (%d of them inside the headers this report reads)", s.Truncated, s.HeadersCut))
	}
	if s.Malformed > 0 || s.BadOpcode > 0 || s.BadLink > 0 {
		c.Notes = append(c.Notes, fmt.Sprintf("%d malformed frames, %d with a reserved opcode, %d of an unknown link type", s.Malformed, s.BadOpcode, s.BadLink))
	}
	if s.CutShort {
		c.Notes = append(c.Notes, "the file ends inside a frame (the capture was not flushed); every whole frame was read")
	}
	c.Opcodes = opTable(s.Opcodes, s.RoCEPackets)
	c.Connections = Table{Columns: []string{"from", "to", "dest QP", "packets", "bytes", "payload bytes",
		"retransmitted PSNs", "NAKs", "RNR NAKs", "CNPs", "ECN-marked", "opcodes"}, Rows: [][]string{},
		Units: []string{"", "", "", "", "B", "B", "", "", "", "", "", ""}}
	for fi, f := range s.Flows {
		var ops []string
		for _, o := range f.Ops {
			ops = append(ops, fmt.Sprintf("%s %s ×%d", o.Transport, o.Name, o.Packets))
		}
		naks := fmt.Sprint(f.NAKs) + nakCodeText(f.NAKCodes)
		c.Connections.add([]string{f.Src.String(), f.Dst.String(),
			fmt.Sprintf("0x%06x", f.DestQP), fmt.Sprint(f.Packets), humanBytes(f.Bytes), humanBytes(f.PayloadBytes),
			fmt.Sprint(f.Retransmits), naks, fmt.Sprint(f.RNRNAKs), fmt.Sprint(f.CNPs), fmt.Sprint(f.ECN), strings.Join(ops, ", ")},
			[]string{"", "", "", "", fmt.Sprint(f.Bytes), fmt.Sprint(f.PayloadBytes), "", "", "", "", "", ""})
		if named != nil {
			addWorkload(&c.Connections, len(c.Connections.Rows)-1, workloadOf(fi))
		}
	}
	if st.IWARP != nil && len(st.IWARP.Conns) > 0 {
		c.Traffic += fmt.Sprintf(", iWARP %d connections", len(st.IWARP.Conns))
		c.IWARP, c.Notes = iwarpTable(st.IWARP, c.Notes)
		if named != nil {
			// One row per direction with packets: the rows follow the
			// connections in order.
			row := 0
			for ci, conn := range st.IWARP.Conns {
				for _, d := range conn.Dirs {
					if d.Segments > 0 {
						addWorkload(c.IWARP, row, workloadOf(len(s.Flows)+ci))
						row++
					}
				}
			}
		}
	}
	if named != nil && st.IWARP != nil && len(st.IWARP.TCP) > 0 {
		c.TCP = &Table{Columns: []string{"connection", "segments", "first [s]", "last [s]", "workload", "named by"}, Rows: [][]string{}}
		for _, n := range named[len(s.Flows)+len(st.IWARP.Conns):] {
			c.TCP.Rows = append(c.TCP.Rows, []string{n.Conn, fmt.Sprint(n.Packets), fmt.Sprintf("%.6f", n.First.Sub(s.First).Seconds()),
				fmt.Sprintf("%.6f", n.Last.Sub(s.First).Seconds()), n.Name(), n.By})
		}
	}
	if named != nil && len(run.Windows(s.First, s.Last)) == 0 {
		c.Notes = append(c.Notes, "no workload's window (events.jsonl) overlaps this capture: it was taken in another run, or the capture host's clock is off; only the QPNs the tools printed name its connections")
	}
	if len(s.CM) > 0 {
		c.CM = &Table{Columns: []string{"frame", "time [s]", "from", "to", "message", "local comm ID", "remote comm ID", "QPN"}, Rows: [][]string{}}
		for _, e := range s.CM {
			qpn := ""
			if e.QPN != 0 {
				qpn = fmt.Sprintf("0x%06x", e.QPN)
			}
			c.CM.Rows = append(c.CM.Rows, []string{fmt.Sprint(e.Number), fmt.Sprintf("%.6f", e.Time.Sub(s.First).Seconds()),
				e.Src.String(), e.Dst.String(), e.Message, fmt.Sprintf("0x%08x", e.LocalCommID), fmt.Sprintf("0x%08x", e.RemoteCommID), qpn})
		}
		if s.CMDropped > 0 {
			c.Notes = append(c.Notes, fmt.Sprintf("%d more connection-management messages not listed", s.CMDropped))
		}
	}
	if g := st.IO; g != nil && len(g.Series) > 0 && g.Interval > 0 {
		iv, series := g.Interval, g.Series
		for len(series) > 0 && len(series[0].BPS) > maxPoints {
			series = coarsen(series, 10)
			iv *= 10
		}
		var in []seriesIn
		for _, se := range series {
			si := seriesIn{Name: se.Name, Wide: se.Name == iograph.SeriesRoCE && len(series) > 1}
			for i, v := range se.BPS {
				t := float64(i) * iv.Seconds() * 1000
				si.Pts = append(si.Pts, xy{X: t, Y: v / 1e6, Title: fmt.Sprintf("%s at %s ms: %s Mb/s", se.Name, fmtNum(t), fmtNum(v/1e6))})
			}
			in = append(in, si)
		}
		c.IOGraph = lineChart("cap-"+anchorSafe(host+"-"+name), "IO graph: throughput per "+iv.String(), "time since first packet [ms]", "Mb/s", false, in)
		if run != nil && len(series[0].BPS) > 1 {
			ws := run.Windows(s.First, s.Last)
			if len(ws) > maxMarks {
				c.Notes = append(c.Notes, fmt.Sprintf("the IO graph marks the windows of the first %d workloads of %d", maxMarks, len(ws)))
				ws = ws[:maxMarks]
			}
			markWindows(c.IOGraph, ws, float64(len(series[0].BPS)-1)*iv.Seconds()*1000)
		}
		if g.Dropped > 0 {
			c.Notes = append(c.Notes, fmt.Sprintf("%d frames left out of the IO graph (timestamps far after the first)", g.Dropped))
		}
	}
	return c
}

// addWorkload adds a "workload" column to t (once) and sets it on row i.
func addWorkload(t *Table, i int, name string) {
	if n := len(t.Columns); n == 0 || t.Columns[n-1] != "workload" {
		t.Columns = append(t.Columns, "workload")
		if t.Units != nil {
			t.Units = append(t.Units, "")
		}
	}
	for len(t.Rows[i]) < len(t.Columns) {
		t.Rows[i] = append(t.Rows[i], "")
	}
	t.Rows[i][len(t.Columns)-1] = name
	if i < len(t.Raw) {
		for len(t.Raw[i]) < len(t.Columns) {
			t.Raw[i] = append(t.Raw[i], "")
		}
	}
}

// maxMarks bounds the workloads' windows one IO graph marks: each is a
// band and a label on a plot some 600 px wide, and a received run may name
// thousands of workloads, repeated for each of its captures.
const maxMarks = 100

// markWindows draws the workloads' windows on an IO graph whose x axis
// runs from 0 to xmax ms.
func markWindows(c *Chart, ws []attrib.Window, xmax float64) {
	if c == nil || c.Empty != "" || xmax <= 0 {
		return
	}
	for i, w := range ws {
		x0 := math.Max(0, w.Start.Seconds()*1000)
		x1 := math.Min(xmax, w.End.Seconds()*1000)
		if x1 < x0 {
			continue
		}
		px0 := r1(c.Plot.X + x0/xmax*c.Plot.W)
		px1 := r1(c.Plot.X + x1/xmax*c.Plot.W)
		col := color(i + 3)
		c.Marks = append(c.Marks, Mark{Box: Box{px0, c.Plot.Y, math.Max(1, r1(px1-px0)), c.Plot.H}, Color: col,
			Title: fmt.Sprintf("workload %s: %s to %s ms", w.Name, fmtNum(w.Start.Seconds()*1000), fmtNum(w.End.Seconds()*1000)),
			Label: Text{r1(px0 + 2), r1(c.Plot.Y + 10 + float64(i%3)*11), w.Name, "start"}})
	}
}

// coarsen averages every n intervals of each series into one.
func coarsen(in []iograph.Series, n int) []iograph.Series {
	out := make([]iograph.Series, len(in))
	for i, s := range in {
		s2 := s
		s2.BPS = make([]float64, (len(s.BPS)+n-1)/n)
		for j, v := range s.BPS {
			s2.BPS[j/n] += v / float64(n)
		}
		out[i] = s2
	}
	return out
}

func opTable(ops []*roce.OpStats, total int64) Table {
	t := Table{Columns: []string{"opcode", "#", "packets", "bytes", "payload bytes", "share of RoCEv2 packets"}, Rows: [][]string{},
		Units: []string{"", "", "", "B", "B", ""}}
	for _, o := range ops {
		share := 0.0
		if total > 0 {
			share = float64(o.Packets) / float64(total) * 100
		}
		t.add([]string{o.Transport + " " + o.Name, fmt.Sprint(o.Opcode), fmt.Sprint(o.Packets),
			humanBytes(o.Bytes), humanBytes(o.PayloadBytes), fmt.Sprintf("%.1f %%", share)},
			[]string{"", "", "", fmt.Sprint(o.Bytes), fmt.Sprint(o.PayloadBytes), ""})
	}
	return t
}

// anchorSafe keeps only characters safe in an id attribute.
func anchorSafe(s string) string {
	var sb strings.Builder
	for _, r := range s {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			sb.WriteRune(r)
		} else {
			sb.WriteByte('_')
		}
	}
	return sb.String()
}

// captures summarises every capture of the run: the files results.json's
// artifacts name as captures (runs older than that list: the files of
// hosts/<slug>/captures/ named like one), the files of one capture's ring
// (cap.x.pcap0 … cap.x.pcap3) as one capture.
func (b *builder) captures() {
	type job struct {
		name, host string
		links      []Link
	}
	var jobs []job
	at := map[string]int{}
	files := rundir.Files{}
	add := func(l Link, host string) {
		dir, base := path.Split(l.Path)
		key := CaptureKey(base)
		// The run engine names a capture's file cap.<slug>[.<window>].pcap,
		// with a number after it for a ring of files.
		name := strings.TrimPrefix(strings.TrimSuffix(key, path.Ext(key)), "cap.")
		id := dir + key
		// One file named many times (symlinks inside the run directory,
		// hard links) is read once, whichever name comes first.
		if !files.First(filepath.Join(b.dir, filepath.FromSlash(l.Path))) {
			return
		}
		if i, ok := at[id]; ok {
			jobs[i].links = append(jobs[i].links, l)
			return
		}
		at[id] = len(jobs)
		jobs = append(jobs, job{name, host, []Link{l}})
	}
	if b.doc != nil && b.doc.Artifacts != nil {
		// The run recorded what its steps pulled: that list, not the
		// files' names, says which are captures.
		byPath := map[string]Link{}
		for _, l := range b.all {
			byPath[l.Path] = l
		}
		for _, a := range b.doc.CaptureArtifacts() {
			l, ok := byPath[a.Path]
			if !ok {
				l = Link{Path: a.Path, Label: a.Path}
			}
			host := a.Host
			if parts := strings.Split(a.Path, "/"); len(parts) == 4 && parts[0] == "hosts" {
				host = parts[1] // the host's folder, as the older runs' captures say it
			}
			add(l, host)
		}
	} else {
		for _, l := range b.all {
			parts := strings.Split(l.Path, "/")
			if len(parts) != 4 || parts[0] != "hosts" || parts[2] != "captures" || !strings.Contains(parts[3], ".pcap") {
				continue
			}
			add(l, parts[1])
		}
	}
	// Captures are the slow part of a report (a class run has one per
	// pair, each up to its max_size): decode them on every CPU, keeping
	// the page's order.
	// The workloads' windows and QPNs name each capture's connections; a
	// run directory that cannot say them (no events.jsonl, a hostile one)
	// leaves the tables as they were.
	run, err := attrib.Load(b.dir)
	if err != nil || len(run.Workloads) == 0 {
		run = nil
	}
	// Each capture's section (its tables, IO graph and notes) is held until
	// the page is written: past maxCaptures the rest are named, not read.
	b.notAnalysed = map[string]bool{}
	if len(jobs) > maxCaptures {
		for _, j := range jobs[maxCaptures:] {
			for _, l := range j.links {
				b.notAnalysed[l.Path] = true
			}
		}
		b.d.CapturesNote = fmt.Sprintf("This report analyses the first %d captures of %d; the other %d are listed under Raw outputs, and rlab pcap reads any of them (given the run directory, all of them, one after another).",
			maxCaptures, len(jobs), len(jobs)-maxCaptures)
		jobs = jobs[:maxCaptures]
	}
	b.d.Captures = make([]Capture, len(jobs))
	wire := make([]*wireSum, len(jobs))
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			var st *CaptureStats
			err := confined(b.dir, j.links)
			switch {
			case err != nil:
			case len(j.links) == 1:
				st, err = b.opts.Summarize(filepath.Join(b.dir, filepath.FromSlash(j.links[0].Path)))
			default:
				files := make([]string, len(j.links))
				for k, l := range j.links {
					files[k] = filepath.Join(b.dir, filepath.FromSlash(l.Path))
				}
				st, err = SummarizePcaps(files)
			}
			if err != nil {
				b.d.Captures[i] = Capture{Name: j.name, Host: j.host, Link: j.links[0],
					Opcodes: Table{Columns: []string{}, Rows: [][]string{}},
					Error:   fmt.Sprintf("read capture %s: %v", j.links[0].Path, err)}
				return
			}
			wire[i] = wireOfSummary(st.Summary)
			b.d.Captures[i] = captureSection(j.name, j.host, j.links[0], st, run)
			if len(j.links) > 1 {
				var names []string
				for _, l := range j.links {
					names = append(names, path.Base(l.Path))
				}
				b.d.Captures[i].Notes = append([]string{fmt.Sprintf("one capture in a ring of %d files, read as one in time order: %s",
					len(j.links), strings.Join(names, ", "))}, b.d.Captures[i].Notes...)
			}
			b.d.Captures[i].Config = b.redactor().Replace(b.captureConfig(j.name))
		}()
	}
	wg.Wait()
	b.wire = map[string]*wireSum{}
	for i, j := range jobs {
		if wire[i] == nil {
			continue
		}
		for _, l := range j.links {
			b.wire[l.Path] = wire[i]
		}
	}
}

// maxCaptures bounds the captures one report analyses. Each analysed
// capture's section stays in memory until the page is written (some 24 KB
// for a capture of one connection, more with many) and adds as much to
// report.html: 1,001 captures in a received run directory held 170 MB and
// made a 21 MB page. 256 is a class of 200 students with a capture each,
// and more than a page is read for.
const maxCaptures = 256

// nakCodeText words NAK counts by code as " (name ×n, ...)", sorted, or ""
// when there are none: a connection's row and a workload's wire analysis
// say them alike.
func nakCodeText(codes map[uint8]int64) string {
	if len(codes) == 0 {
		return ""
	}
	var cs []string
	for c, n := range codes {
		cs = append(cs, fmt.Sprintf("%s ×%d", roce.NAKName(c), n))
	}
	sort.Strings(cs)
	return " (" + strings.Join(cs, ", ") + ")"
}

// iwarpTable lists each direction of each iWARP connection: its MPA
// handshake, TCP and FPDU counts, CRC and trouble, and opcodes; notes say
// which connections began before the capture or lost their framing.
func iwarpTable(sum *iwarp.Summary, notes []string) (*Table, []string) {
	t := &Table{Columns: []string{"from", "to", "MPA", "TCP segments", "FPDUs", "payload bytes", "CRC checked / bad",
		"retransmitted segments", "zero windows", "bytes not captured", "opcodes"}, Rows: [][]string{},
		Units: []string{"", "", "", "", "", "B", "", "", "", "B", ""}}
	for _, c := range sum.Conns {
		mpa := "not seen"
		if m := c.Request; m != nil {
			mpa = fmt.Sprintf("rev %d", m.Rev)
			if m.Enhanced {
				mpa += " enhanced"
			}
		}
		if c.CRC {
			mpa += ", CRC"
		}
		if c.BeganBefore {
			notes = append(notes, fmt.Sprintf("iWARP connection %s <-> %s began before the capture (no SYN seen)", c.Dirs[0].Src, c.Dirs[0].Dst))
		}
		for i, d := range c.Dirs {
			if d.Segments == 0 {
				continue
			}
			m := mpa
			if d.Markers > 0 {
				m += ", markers"
			}
			if i == 0 && c.Request != nil {
				m = "Request " + m
			} else if i == 1 && c.Reply != nil {
				m = "Reply " + m
			}
			var ops []string
			for _, o := range d.Ops {
				ops = append(ops, fmt.Sprintf("%s ×%d", o.Name, o.FPDUs))
			}
			crc := "-"
			if c.CRC {
				crc = fmt.Sprintf("%d / %d", d.CRCChecked, d.CRCBad)
			}
			t.add([]string{d.Src.String(), d.Dst.String(), m, fmt.Sprint(d.Segments), fmt.Sprint(d.FPDUs),
				humanBytes(d.PayloadBytes), crc, fmt.Sprint(d.Retransmits), fmt.Sprint(d.ZeroWindows),
				humanBytes(d.NotCaptured), strings.Join(ops, ", ")},
				[]string{"", "", "", "", "", fmt.Sprint(d.PayloadBytes), "", "", "", fmt.Sprint(d.NotCaptured), ""})
			if d.LostSync > 0 {
				notes = append(notes, fmt.Sprintf("iWARP %s -> %s: FPDU framing lost %d times (bytes not captured or missing where a header was) and found again at a later segment", d.Src, d.Dst, d.LostSync))
			}
		}
	}
	return t, notes
}
