// Package attrib names the workload behind each connection of a capture
// taken during a run: a RoCE QP flow, an iWARP TCP connection or the TCP
// baseline's stream. It reads the run directory: each workload's time
// window from events.jsonl (its step.start and step.end; results.json's
// started and finished when the log has none) and the QPNs its tools
// printed (perftest's and the pingpongs' "local address: ... QPN 0x..."
// lines in the logs results.json lists) and the TCP ports its servers
// listened on (the tcp workload's, in results.json's samples,
// results.ServerPortExtra). The caller adds what the capture
// itself says: the QPNs an RDMA-CM REQ or REP carried and when.
//
// A run directory may come from someone else: every file is read through
// engine/rundir (no symlink or .. leads out of it, nothing but regular
// files, bounded sizes), every name read is made safe to print with
// engine/termsafe, and malformed lines are skipped and counted, never
// fatal.
//
// It imports engine/results, engine/runevent, engine/rundir and
// engine/termsafe; it must not import engine/run or cmd/... (internal/archtest).
package attrib

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/rlab-dev/rlab/engine/results"
	"github.com/rlab-dev/rlab/engine/rundir"
	"github.com/rlab-dev/rlab/engine/runevent"
	"github.com/rlab-dev/rlab/engine/termsafe"
)

// Bounds on what a received run directory can make this package hold.
const (
	// MaxWorkloads bounds the workloads read; the rest are left out (Notes).
	MaxWorkloads = 10000
	// maxEventLine is the longest events.jsonl line read; longer lines
	// are skipped.
	maxEventLine = 1 << 20
	// maxLogRead bounds what is read of one tool log: the QPN lines are at
	// its start.
	maxLogRead = 1 << 20
	// maxQPNs bounds the QPNs kept per workload, maxPorts its ports.
	maxQPNs  = 1024
	maxPorts = 1024
	// Slack widens a window when no window holds a connection's start:
	// the capture host's clock and the controller's differ a little.
	Slack = time.Second
	// MaxMatchNames bounds the workloads one connection is named after
	// (Match.Workloads); the others are counted (Match.More). Every
	// connection of a capture gets its own list, so a received run whose
	// thousands of workloads all fit every connection's window would
	// otherwise make a capture's tables hold connections × workloads
	// names.
	MaxMatchNames = 16
	// MaxShownName bounds, in bytes, a workload name as a match or a
	// window shows it (a longer one is cut and ends in "…"): the names
	// are repeated per connection and per capture.
	MaxShownName = 200
)

// Workload is one workload of the run as attribution needs it.
type Workload struct {
	Name  string    `json:"name"`
	Tool  string    `json:"tool,omitempty"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// QPNs are the QP numbers its tools printed (both ends).
	QPNs []uint32 `json:"qpns,omitempty"`
	// Ports are the TCP ports its server listened on, as the run recorded
	// them (results.json's samples, results.ServerPortExtra: the tcp
	// workload's, one per repeat).
	Ports []uint16 `json:"ports,omitempty"`
}

// Run is the workloads of one run directory and what could not be read.
type Run struct {
	Workloads []Workload `json:"workloads"`
	// Notes say what was missing or skipped (no events.jsonl, malformed
	// lines), already safe to print.
	Notes []string `json:"notes,omitempty"`
}

var qpnLine = regexp.MustCompile(`(?:local|remote) address:.*?\bQPN (0x[0-9a-fA-F]{1,6})\b`)

// Load reads the run directory dir. A missing or hostile events.jsonl or
// results.json gives fewer workloads and a note, not an error; the error
// is only for a directory that cannot be opened at all.
func Load(dir string) (*Run, error) {
	if st, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("read run %s: %w", dir, err)
	} else if !st.IsDir() {
		return nil, fmt.Errorf("read run %s: not a directory", dir)
	}
	r := &Run{}
	byName := map[string]*Workload{}
	var order []string
	get := func(name string) *Workload {
		if w := byName[name]; w != nil {
			return w
		}
		if len(order) >= MaxWorkloads {
			return nil
		}
		byName[name] = &Workload{Name: name}
		order = append(order, name)
		return byName[name]
	}
	r.readEvents(dir, get)
	var logs map[string][]string
	if run, err := results.ReadRun(dir); err != nil {
		r.note("no workload tools' QPNs: %v", err)
	} else {
		logs = map[string][]string{}
		for _, rw := range run.Workloads {
			name := termsafe.Line(rw.Name)
			w := byName[name]
			if w == nil {
				// Only results.json knows it: its own start and end.
				if rw.Started.IsZero() || (w == nil && len(order) >= MaxWorkloads) {
					continue
				}
				w = get(name)
				w.Start, w.End = rw.Started, rw.Finished
			}
			w.Tool = termsafe.Line(rw.Tool)
			logs[name] = rw.Logs
		}
		for _, smp := range run.Samples {
			w := byName[termsafe.Line(smp.Meta.Workload)]
			v, err := strconv.ParseUint(smp.Meta.Extra[results.ServerPortExtra], 10, 16)
			if w != nil && err == nil && v != 0 && len(w.Ports) < maxPorts && !slices.Contains(w.Ports, uint16(v)) {
				w.Ports = append(w.Ports, uint16(v))
			}
		}
	}
	// Each log is read once however many workloads list it (a received
	// results.json may list one log in every workload).
	// And once however many files name it: symlinks inside the run
	// directory and hard links are one file (by device and inode).
	read := map[string][]uint32{}
	byFile := map[[2]uint64][]uint32{}
	for _, name := range order {
		w := byName[name]
		for _, rel := range logs[name] {
			rel = path.Clean(rel)
			qs, ok := read[rel]
			if !ok {
				id, known := rundir.FileID(filepath.Join(dir, filepath.FromSlash(rel)))
				if qs, ok = byFile[id]; !ok || !known {
					qs = appendQPNs(nil, dir, rel)
				}
				if known {
					byFile[id] = qs
				}
				read[rel] = qs
			}
			w.QPNs = append(w.QPNs, qs[:min(len(qs), maxQPNs-len(w.QPNs))]...)
		}
		sort.Slice(w.QPNs, func(i, j int) bool { return w.QPNs[i] < w.QPNs[j] })
		slices.Sort(w.Ports)
		w.QPNs = compact(w.QPNs)
		if w.Start.IsZero() {
			continue // never started: nothing of it can be on the wire
		}
		if w.End.Before(w.Start) {
			w.End = w.Start
		}
		r.Workloads = append(r.Workloads, *w)
	}
	if len(order) >= MaxWorkloads {
		r.note("only the first %d workloads are named", MaxWorkloads)
	}
	sort.SliceStable(r.Workloads, func(i, j int) bool { return r.Workloads[i].Start.Before(r.Workloads[j].Start) })
	return r, nil
}

// MaxListed bounds the workloads a capture's summary lists (rlab pcap RUN,
// its text and -json): the run's workloads are listed again for each
// capture, and a received run may hold thousands of captures beside
// thousands of workloads.
const MaxListed = 1000

// Listed is r with at most MaxListed workloads and a note saying how many
// were left out, for listing once per capture; r itself when it has no
// more. The workloads whose windows overlap the capture's span (first to
// last; zero times: unknown) are kept before any other, so a capture of a
// student past the thousandth of a class run still lists its own
// workloads; those kept stay in the run's order.
func (r *Run) Listed(first, last time.Time) *Run {
	if len(r.Workloads) <= MaxListed {
		return r
	}
	keep := make([]bool, len(r.Workloads))
	n := 0
	if !first.IsZero() && !last.IsZero() {
		for i, w := range r.Workloads {
			if n < MaxListed && !w.End.Before(first) && !w.Start.After(last) {
				keep[i], n = true, n+1
			}
		}
	}
	for i := range r.Workloads {
		if n < MaxListed && !keep[i] {
			keep[i], n = true, n+1
		}
	}
	ws := make([]Workload, 0, MaxListed)
	for i, w := range r.Workloads {
		if keep[i] {
			ws = append(ws, w)
		}
	}
	what := "the first ones"
	if !first.IsZero() && !last.IsZero() {
		what = "those in the capture's span first"
	}
	return &Run{Workloads: ws,
		Notes: append(slices.Clip(r.Notes), fmt.Sprintf("only %d of the run's %d workloads are listed (%s)", MaxListed, len(r.Workloads), what))}
}

func (r *Run) note(f string, a ...any) {
	r.Notes = append(r.Notes, termsafe.Line(fmt.Sprintf(f, a...)))
}

// readEvents takes each workload's first step.start and last step.end.
func (r *Run) readEvents(dir string, get func(string) *Workload) {
	f, err := rundir.Open(dir, runevent.File)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			r.note("the run has no %s: workloads' windows from results.json", runevent.File)
		} else {
			r.note("%s not read: %v", runevent.File, err)
		}
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(io.LimitReader(f, rundir.MaxFile))
	sc.Buffer(make([]byte, 64<<10), maxEventLine+1)
	sc.Split(skipLongLines())
	bad := 0
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		var e runevent.Event
		switch {
		case len(line) == 0:
		case bytes.Equal(line, longLine):
			bad++ // a line too long to be an event
		case json.Unmarshal(line, &e) != nil || e.Time.IsZero():
			bad++
		case e.Workload == "" || (e.Type != "step.start" && e.Type != "step.end"):
		default:
			w := get(termsafe.Line(e.Workload))
			if w == nil {
				break
			}
			if e.Type == "step.start" && (w.Start.IsZero() || e.Time.Before(w.Start)) {
				w.Start = e.Time
			}
			if e.Type == "step.end" && e.Time.After(w.End) {
				w.End = e.Time
			}
		}
	}
	if err := sc.Err(); err != nil {
		r.note("%s read only in part: %v", runevent.File, err)
	}
	if bad > 0 {
		r.note("%d lines of %s are not events and were skipped", bad, runevent.File)
	}
}

// longLine is the token skipLongLines hands over for a line it skipped
// (a NUL cannot begin a JSON line).
var longLine = []byte{0}

// skipLongLines splits lines as bufio.ScanLines does, but hands a line
// longer than maxEventLine over as longLine instead of stopping.
func skipLongLines() bufio.SplitFunc {
	skipping := false
	return func(data []byte, atEOF bool) (int, []byte, error) {
		i := bytes.IndexByte(data, '\n')
		switch {
		case skipping && i >= 0:
			skipping = false
			return i + 1, longLine, nil
		case skipping && atEOF:
			skipping = false
			return len(data), longLine, nil
		case skipping:
			return len(data), nil, nil
		case i >= 0:
			return i + 1, data[:i:i], nil
		case len(data) > maxEventLine:
			skipping = true
			return len(data), nil, nil
		case atEOF && len(data) > 0:
			return len(data), data, nil
		}
		return 0, nil, nil
	}
}

func appendQPNs(qs []uint32, dir, rel string) []uint32 {
	f, err := rundir.Open(dir, rel)
	if err != nil {
		return qs
	}
	defer f.Close()
	sc := bufio.NewScanner(io.LimitReader(f, maxLogRead))
	sc.Buffer(make([]byte, 4096), 64<<10)
	for sc.Scan() && len(qs) < maxQPNs {
		if m := qpnLine.FindSubmatch(sc.Bytes()); m != nil {
			if v, err := strconv.ParseUint(string(m[1][2:]), 16, 32); err == nil && v != 0 {
				qs = append(qs, uint32(v))
			}
		}
	}
	return qs
}

func compact(qs []uint32) []uint32 {
	out := qs[:0]
	for i, q := range qs {
		if i == 0 || q != qs[i-1] {
			out = append(out, q)
		}
	}
	return out
}

// Conn is what attribution knows of one connection in a capture.
type Conn struct {
	// First and Last bound its packets; Began, when set, is when it was
	// set up (an RDMA-CM REQ naming its QP), earlier than First.
	First, Last, Began time.Time
	// QPNs are its QP numbers (a RoCE flow's destination QP, the QPNs of
	// the CM REQ/REP that set it up); none for TCP.
	QPNs []uint32
	// Ports are a TCP connection's ports (both ends); none for RoCE.
	Ports []uint16
}

// Match is the workload a connection is named after, and why.
type Match struct {
	// Workloads: one name, several when the evidence fits several (a
	// parallel group, QP1 carrying many connections' CM), none when none;
	// at most MaxMatchNames, each cut to MaxShownName bytes.
	Workloads []string `json:"workloads,omitempty"`
	// By says how: "QPN 0x00001a in its output", "time window",
	// "time window ±1s", "" for none.
	By string `json:"by,omitempty"`
	// More counts the workloads the evidence fits past MaxMatchNames.
	More int `json:"more_workloads,omitempty"`
}

// Name returns the names joined, or "-".
func (m Match) Name() string {
	if len(m.Workloads) == 0 {
		return "-"
	}
	if m.More > 0 {
		return strings.Join(m.Workloads, ", ") + fmt.Sprintf(" and %d more", m.More)
	}
	return strings.Join(m.Workloads, ", ")
}

// matchNames collects a match's names: the first MaxMatchNames, each
// cut to MaxShownName, and a count of the rest.
type matchNames struct {
	names []string
	more  int
}

func (m *matchNames) add(name string) {
	if len(m.names) < MaxMatchNames {
		m.names = append(m.names, ShownName(name))
	} else {
		m.more++
	}
}

func (m *matchNames) match(by string) Match {
	return Match{Workloads: m.names, By: by, More: m.more}
}

// ShownName is name cut to MaxShownName bytes (on a rune boundary) and
// "…" when it is longer.
func ShownName(name string) string {
	if len(name) <= MaxShownName {
		return name
	}
	i := MaxShownName
	for i > 0 && !utf8.RuneStart(name[i]) {
		i--
	}
	return name[:i] + "…"
}

// Name attributes c to the run's workloads.
func (r *Run) Name(c Conn) Match {
	start := c.First
	if !c.Began.IsZero() && c.Began.Before(start) {
		start = c.Began
	}
	// A QPN a tool printed is the strongest evidence; QPNs repeat across
	// a run (each rxe device counts from 0x11 again after a reboot), so
	// time picks among workloads sharing one.
	var byQP []*Workload
	var qpn uint32
	for i := range r.Workloads {
		w := &r.Workloads[i]
		for _, q := range c.QPNs {
			if hasQPN(w.QPNs, q) {
				byQP, qpn = append(byQP, w), q
				break
			}
		}
	}
	by := fmt.Sprintf("QPN 0x%06x in its output", qpn)
	if len(byQP) == 0 {
		// A TCP connection: the port its server listened on, as the run
		// recorded it, is as strong; ports are reused too, so time
		// picks among workloads sharing one.
		var port uint16
		for i := range r.Workloads {
			w := &r.Workloads[i]
			for _, p := range c.Ports {
				if slices.Contains(w.Ports, p) {
					byQP, port = append(byQP, w), p
					break
				}
			}
		}
		by = fmt.Sprintf("port %d in its results", port)
	}
	if len(byQP) == 1 {
		return Match{Workloads: []string{ShownName(byQP[0].Name)}, By: by}
	}
	pool := byQP
	if len(byQP) <= 1 {
		pool = make([]*Workload, len(r.Workloads))
		for i := range r.Workloads {
			pool[i] = &r.Workloads[i]
		}
	}
	for _, slack := range []time.Duration{0, Slack} {
		var names matchNames
		for _, w := range pool {
			if !start.Before(w.Start.Add(-slack)) && !start.After(w.End.Add(slack)) {
				names.add(w.Name)
			}
		}
		// A long-lived flow (QP1 carries every CM exchange) spans the
		// windows of several workloads: name each of them. These start
		// after start+slack, so none is one of the names above (the
		// workloads have one name each): no look-up in the names, which
		// was quadratic in the workloads for every connection.
		if len(names.names) > 0 && !c.Last.IsZero() && c.Last.Sub(start) > 0 {
			for _, w := range pool {
				if w.Start.After(start.Add(slack)) && !w.Start.After(c.Last.Add(slack)) {
					names.add(w.Name)
				}
			}
		}
		if len(names.names) > 0 {
			how := "time window"
			if slack > 0 {
				how = fmt.Sprintf("time window ±%s", slack)
			}
			if len(byQP) > 1 {
				how = by + ", " + how
			}
			return names.match(how)
		}
	}
	if len(byQP) > 1 {
		var names matchNames
		for _, w := range byQP {
			names.add(w.Name)
		}
		return names.match(by + " (no window holds it)")
	}
	return Match{}
}

func hasQPN(qs []uint32, q uint32) bool {
	i := sort.Search(len(qs), func(i int) bool { return qs[i] >= q })
	return i < len(qs) && qs[i] == q
}

// Window is a workload's window relative to a capture's first frame, for
// an IO graph's marks.
type Window struct {
	Name       string
	Start, End time.Duration
}

// Windows returns the workloads' windows relative to first that overlap
// [first, last].
func (r *Run) Windows(first, last time.Time) []Window {
	var out []Window
	for _, w := range r.Workloads {
		if w.End.Before(first) || w.Start.After(last) {
			continue
		}
		out = append(out, Window{Name: ShownName(w.Name), Start: w.Start.Sub(first), End: w.End.Sub(first)})
	}
	return out
}
