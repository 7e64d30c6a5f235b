package results

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rlab-dev/rlab/engine/termsafe"
	"github.com/rlab-dev/rlab/kinds"
)

// Summary renders summary.md: the run's outcome, one table per workload
// (bandwidth and message rate, or latency percentiles, per message size;
// medians over repeats), the expects and whether they held, RDMA and TCP
// throughput side by side when the lab measured both, and where the run
// directory is. dir is printed as given ("" leaves the line out).
func Summary(r *Run, dir string) []byte {
	var b bytes.Buffer
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	title := r.Lab
	if title == "" {
		title = "(unnamed lab)"
	}
	cmd := "run"
	if r.Check {
		cmd = "check"
	}
	w("# rlab %s: %s: %s\n\n", cmd, mdText(title), statusWord(r.Status))
	if r.Description != "" {
		w("%s\n\n", mdText(r.Description))
	}
	w("| | |\n|---|---|\n")
	if r.ID != "" {
		w("| run | `%s` |\n", mdCode(r.ID))
	}
	if !r.Started.IsZero() {
		w("| started | %s |\n", r.Started.UTC().Format(time.RFC3339))
	}
	if r.Duration > 0 {
		w("| duration | %s |\n", seconds(r.Duration))
	}
	w("| status | %s |\n", statusWord(r.Status))
	if r.Error != "" {
		w("| error | %s |\n", mdCell(r.Error))
	}
	if dir != "" {
		w("| directory | `%s` |\n", mdCode(dir))
	}
	w("\n")
	if len(r.Students) > 0 {
		studentsSection(&b, r.Students)
	}

	if len(r.Workloads) >= compactAt {
		compactSections(&b, r, NewPivotBudget())
		return b.Bytes()
	}
	aggs := Aggregate(Measures(r.Samples))
	byWL := map[string][]Agg{}
	for _, a := range aggs {
		byWL[a.Workload] = append(byWL[a.Workload], a)
	}
	if len(r.Workloads) > 0 {
		// The result first: each workload's headline (its family's View,
		// as the run's table prints it) and its trouble counters.
		trouble := map[string]string{}
		anyTrouble := false
		for _, wl := range r.Workloads {
			trouble[wl.Name] = TroubleText(r.Samples, wl.Name)
			anyTrouble = anyTrouble || trouble[wl.Name] != ""
		}
		w("## Workloads\n\n| workload | tool | hosts | status | result |")
		if anyTrouble {
			w(" trouble |")
		}
		w(" duration | expects |\n|---|---|---|---|---|%s---:|---|\n", strings.Repeat("---|", btoi(anyTrouble)))
		for _, wl := range r.Workloads {
			w("| %s | %s | %s | %s | %s |", mdCell(wl.Name), mdCell(wl.Tool), mdCell(kinds.Arrow(wl.Tool, wl.Hosts)),
				statusWord(wl.Status), mdCell(KeyNumbers(wl, byWL[wl.Name])))
			if anyTrouble {
				w(" %s |", mdCell(trouble[wl.Name]))
			}
			w(" %s | %s |\n", seconds(wl.Duration), expectCount(wl.Expects))
		}
		w("\n")
	}

	seen := map[string]bool{}
	impairs := Impairments(r.Samples)
	pivot := NewPivotBudget()
	for _, wl := range r.Workloads {
		seen[wl.Name] = true
		workloadSection(&b, wl, byWL[wl.Name], impairs[wl.Name], pivot)
		stackSection(&b, wl, CounterDeltas(r.Samples, wl.Name))
	}
	// samples of workloads the run did not list (should not happen, but a
	// summary must not hide numbers)
	for _, a := range aggs {
		if !seen[a.Workload] {
			seen[a.Workload] = true
			workloadSection(&b, Workload{Name: a.Workload, Tool: a.Tool}, byWL[a.Workload], impairs[a.Workload], pivot)
		}
	}
	rdmaVsTCP(&b, r, aggs)
	aloneVsTogether(&b, r, aggs)
	return b.Bytes()
}

// compactAt is the number of workloads from which the summary has one
// table per tool, a row per workload (a class lab of 100 pairs), instead of a
// section per workload.
const compactAt = 16

// compactSections writes the summary of a large lab: per tool, one row per
// workload with its status, expects and headline figures (medians at the
// largest message size, or the smallest for latency tools), then the
// problems in full.
func compactSections(b *bytes.Buffer, r *Run, pivot *PivotBudget) {
	w := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	aggs := Aggregate(Measures(r.Samples))
	byWL := map[string][]Agg{}
	for _, a := range aggs {
		byWL[a.Workload] = append(byWL[a.Workload], a)
	}
	var tools []string
	byTool := map[string][]Workload{}
	// A workload named again (a run's are not; a received results.json's
	// may be) is listed once: each row reads every figure of its name, so
	// 20,000 workloads of one name over 500,000 samples made 10^10 (round
	// 9's attack).
	listed := map[string]bool{}
	for _, wl := range r.Workloads {
		if listed[wl.Name] {
			continue
		}
		listed[wl.Name] = true
		if _, ok := byTool[wl.Tool]; !ok {
			tools = append(tools, wl.Tool)
		}
		byTool[wl.Tool] = append(byTool[wl.Tool], wl)
	}
	counts := map[string]int{}
	for _, wl := range r.Workloads {
		counts[wl.Status]++
	}
	impairs := Impairments(r.Samples)
	w("%d workloads: %d ok", len(r.Workloads), counts[StatusOK])
	for _, st := range []string{StatusFailed, StatusTimedOut, StatusSkipped} {
		if counts[st] > 0 {
			w(", %d %s", counts[st], strings.ReplaceAll(st, "_", " "))
		}
	}
	w(".\n\n")
	for _, tool := range tools {
		wls := byTool[tool]
		desc, _ := kinds.Lookup(tool)
		smallest := desc.HeadlineSmallest
		var metrics []string
		units := map[string]string{}
		for _, wl := range wls {
			for _, a := range byWL[wl.Name] {
				if _, ok := units[a.Metric]; !ok && !kinds.IsCommon(a.Metric) {
					units[a.Metric] = a.Unit
					metrics = append(metrics, a.Metric)
				}
			}
		}
		sortMetrics(metrics)
		held := 0
		for _, wl := range wls {
			held += len(byWL[wl.Name])
		}
		if !pivot.Fits(len(wls)*len(metrics), held) {
			// Mostly empty columns: each workload's figures in one cell.
			metrics = nil
		}
		impaired := false
		for _, wl := range wls {
			impaired = impaired || impairs[wl.Name] != ""
		}
		w("## %s (%d workloads)\n\n| workload | hosts | status | expects |", mdText(tool), len(wls))
		if impaired {
			w(" impairment |")
		}
		w(" size |")
		for _, m := range metrics {
			w(" %s |", m) // cells carry their recorded units
		}
		figures := metrics == nil && len(units) > 0
		if figures {
			w(" figures |")
		}
		w("\n|---|---|---|---|%s---:|%s%s\n", strings.Repeat("---|", btoi(impaired)), strings.Repeat("---:|", len(metrics)), strings.Repeat("---|", btoi(figures)))
		for _, wl := range wls {
			pick := map[string]Agg{}
			var size int64 = -1
			for _, a := range byWL[wl.Name] {
				if size == -1 || (smallest && a.Size < size) || (!smallest && a.Size > size) {
					size = a.Size
				}
			}
			for _, a := range byWL[wl.Name] {
				if a.Size == size {
					pick[a.Metric] = a
				}
			}
			sz := "–"
			if size > 0 {
				sz = HumanSize(size)
			}
			if wl.Bidirectional() {
				sz += " (" + BothDirections + ")"
			}
			w("| %s | %s | %s | %s |", mdCell(wl.Name), mdCell(kinds.Arrow(wl.Tool, wl.Hosts)), statusWord(wl.Status), expectCount(wl.Expects))
			if impaired {
				w(" %s |", mdCell(impairs[wl.Name]))
			}
			w(" %s |", sz)
			for _, m := range metrics {
				if a, ok := pick[m]; ok {
					w(" %s |", HumanValue(a.Median, a.Unit))
				} else {
					w(" |")
				}
			}
			if figures {
				var figs []string
				for _, a := range byWL[wl.Name] {
					if a.Size == size && !kinds.IsCommon(a.Metric) {
						figs = append(figs, a.Metric+" "+HumanValue(a.Median, a.Unit))
					}
				}
				w(" %s |", mdCell(strings.Join(figs, "; ")))
			}
			w("\n")
		}
		w("\n")
	}
	var problems []string
	for _, wl := range r.Workloads {
		if wl.Status != StatusOK && wl.Status != StatusSkipped {
			p := fmt.Sprintf("- %s (%s): %s", mdText(wl.Name), statusWord(wl.Status), mdText(oneLine(wl.Error)))
			problems = append(problems, p)
		}
		for _, e := range wl.Expects {
			if !e.Held && !e.Skipped {
				p := fmt.Sprintf("- %s: expect `%s` did not hold", mdText(wl.Name), mdCode(e.Condition))
				if e.Message != "" {
					p += ": " + mdText(oneLine(e.Message))
				}
				problems = append(problems, p)
			}
		}
	}
	if len(problems) > 0 {
		w("## Problems\n\n%s\n\n", strings.Join(problems, "\n"))
	}
	// The kernel's trouble counters that moved (retransmissions, sequence
	// errors, drops), one line per workload; the deltas are in results.json.
	var trouble []string
	counters := map[string][]Sample{} // by workload: one pass, not one a workload
	for _, s := range r.Samples {
		if IsCounter(s) {
			counters[s.Meta.Workload] = append(counters[s.Meta.Workload], s)
		}
	}
	clear(listed)
	for _, wl := range r.Workloads {
		if listed[wl.Name] {
			continue
		}
		listed[wl.Name] = true
		var parts []string
		for _, s := range CounterDeltas(counters[wl.Name], wl.Name) {
			if c, ok := CounterByName(s.Metric); ok && c.Class == CounterTrouble && s.Value > 0 {
				parts = append(parts, fmt.Sprintf("%s %s `%s` %s", mdText(strings.Join(s.Meta.Hosts, ",")), mdText(strings.Join(s.Meta.Devices, ",")), mdCode(s.Metric), FormatValue(s.Value)))
			}
		}
		if len(parts) > 0 {
			trouble = append(trouble, fmt.Sprintf("- %s: %s", mdText(wl.Name), strings.Join(parts, ", ")))
		}
	}
	if len(trouble) > 0 {
		w("## What the stack saw\n\nKernel counters of trouble that moved during a workload:\n\n%s\n\n", strings.Join(trouble, "\n"))
	}
	var parse []string
	for _, wl := range r.Workloads {
		if s := wl.ParseSummary(); s != "" {
			p := fmt.Sprintf("- %s: %s", mdText(wl.Name), mdText(s))
			if lines, _ := wl.ParseLines(); len(lines) > 0 {
				p += fmt.Sprintf(" (first: `%s`)", mdCode(lines[0].Text))
			}
			parse = append(parse, p)
		}
	}
	if len(parse) > 0 {
		w("## Parser warnings\n\n%s\n\n", strings.Join(parse, "\n"))
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// sortMetrics orders metric names as the Metrics() table does.
func sortMetrics(names []string) {
	ms := Metrics()
	idx := map[string]int{}
	for i, m := range ms {
		idx[m.Name] = i
	}
	rank := func(n string) int {
		if i, ok := idx[n]; ok {
			return i
		}
		return len(ms)
	}
	for i := 1; i < len(names); i++ {
		for j := i; j > 0 && rank(names[j]) < rank(names[j-1]); j-- {
			names[j], names[j-1] = names[j-1], names[j]
		}
	}
}

func workloadSection(b *bytes.Buffer, wl Workload, aggs []Agg, impair string, pivot *PivotBudget) {
	w := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	w("## %s (%s)\n\n", mdText(wl.Name), mdText(wl.Tool))
	if impair != "" {
		w("Under impairment: %s.\n\n", mdText(impair))
	}
	if wl.Status != "" && wl.Status != StatusOK {
		w("%s", statusWord(wl.Status))
		if wl.Error != "" {
			w(": %s", mdText(oneLine(wl.Error)))
		}
		w("\n\n")
	}
	if wl.Bidirectional() {
		w("Bandwidth and message rate are the %s (perftest -b).\n\n", BothDirections)
	}
	// one table per host pair (a workload normally has one)
	var groups [][]Agg
	for _, a := range aggs {
		if n := len(groups); n > 0 && groups[n-1][0].Hosts == a.Hosts {
			groups[n-1] = append(groups[n-1], a)
		} else {
			groups = append(groups, []Agg{a})
		}
	}
	for _, g := range groups {
		if len(groups) > 1 && g[0].Hosts != "" {
			w("Hosts %s:\n\n", mdText(strings.ReplaceAll(g[0].Hosts, ",", " → ")))
		}
		metricTable(b, g, pivot)
	}
	if len(aggs) == 0 && len(wl.Expects) == 0 {
		w("No samples.\n\n")
	}
	parseSection(b, wl)
	if len(wl.Expects) > 0 {
		w("Expects:\n\n")
		for _, e := range wl.Expects {
			mark := "held"
			if !e.Held {
				mark = "**NOT HELD**"
			}
			w("- %s: `%s`", mark, mdCode(e.Condition))
			var where []string
			if e.Size > 0 {
				where = append(where, "size "+HumanSize(e.Size))
			}
			if e.Repeat != nil {
				where = append(where, fmt.Sprintf("repeat %d", *e.Repeat+1))
			}
			if len(where) > 0 {
				w(" (%s)", strings.Join(where, ", "))
			}
			if e.Value != nil {
				w(" with %s", mdText(*e.Value))
			}
			if !e.Held && e.Message != "" {
				w(": %s", mdText(oneLine(e.Message)))
			}
			if e.Error != "" {
				w(": error: %s", mdText(oneLine(e.Error)))
			}
			w("\n")
		}
		w("\n")
	}
}

// stackSection is "what the stack saw" during a workload: a line with the
// trouble counters that moved (retransmissions, sequence errors, drops),
// then, folded in a <details> (`rlab show --counters` unfolds it), the
// counters that moved (after minus before, per host and device), trouble
// apart from traffic, how many did not, and every counter that could not
// be read, is absent on its device, or went backwards.
func stackSection(b *bytes.Buffer, wl Workload, deltas []Sample) {
	if len(deltas) == 0 && len(wl.CounterNotes) == 0 {
		return
	}
	w := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	var trouble, traffic []Sample
	still := 0
	for _, s := range deltas {
		switch c, _ := CounterByName(s.Metric); {
		case s.Value == 0:
			still++
		case c.Class == CounterTrouble:
			trouble = append(trouble, s)
		default:
			traffic = append(traffic, s)
		}
	}
	if t := TroubleText(deltas, wl.Name); t != "" {
		w("Trouble counters that moved: %s.\n\n", mdText(t))
	}
	w("<details><summary>Kernel counters (after minus before the workload): %d moved, %d did not</summary>\n\n", len(trouble)+len(traffic), still)
	for _, part := range []struct {
		title string
		ss    []Sample
	}{{"Trouble", trouble}, {"Traffic", traffic}} {
		if len(part.ss) == 0 {
			continue
		}
		w("%s:\n\n| host | device | counter | delta |\n|---|---|---|---:|\n", part.title)
		for _, s := range part.ss {
			w("| %s | %s | `%s` | %s %s |\n", mdCell(strings.Join(s.Meta.Hosts, ",")), mdCell(strings.Join(s.Meta.Devices, ",")),
				mdCode(s.Metric), FormatValue(s.Value), mdText(s.Unit))
		}
		w("\n")
	}
	for _, section := range []struct{ problem, title string }{
		{NoteUnreadable, "Could not read"}, {NoteReset, "Reset or wrapped (no delta)"}, {NoteAbsent, "Not on the device"},
	} {
		var lines []string
		for _, n := range wl.CounterNotes {
			if n.Problem != section.problem {
				continue
			}
			lines = append(lines, fmt.Sprintf("- %s: %s", mdText(n.What()), mdText(oneLine(n.Reason))))
		}
		if len(lines) > 0 {
			w("%s:\n\n%s\n\n", section.title, strings.Join(lines, "\n"))
		}
	}
	w("</details>\n\n")
}

// summaryParseLines caps the lines of parseSection; results.json keeps
// them all (up to MaxParseLines per run).
const summaryParseLines = 10

// parseSection lists what the output parser did not read and what it
// noted, each distinct line once with the runs it came from.
func parseSection(b *bytes.Buffer, wl Workload) {
	lines, more := wl.ParseLines()
	if len(lines) == 0 {
		return
	}
	w := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	unread, notes := wl.ParseCounts()
	var parts []string
	if unread > 0 {
		parts = append(parts, "did not read "+plural(unread, "line"))
	}
	if notes > 0 {
		parts = append(parts, "noted "+plural(notes, "thing"))
	}
	head := "The parser " + strings.Join(parts, " and ")
	w("%s (the raw outputs keep everything):\n\n", head)
	for i, l := range lines {
		if i == summaryParseLines {
			w("- … %d more in %s\n", len(lines)-i, ResultsFile)
			break
		}
		if l.Unread {
			w("- `%s` (%s)\n", mdCode(l.Text), runsText(l.Runs))
		} else {
			w("- note: %s (%s)\n", mdText(l.Text), runsText(l.Runs))
		}
	}
	if more > 0 {
		w("- … and %s past the cap of %d per run\n", plural(more, "line"), MaxParseLines)
	}
	w("\n")
}

// metricTable prints one row per size and one column per metric (medians),
// with the repeat count and, for the headline metric, the spread.
func metricTable(b *bytes.Buffer, aggs []Agg, pivot *PivotBudget) {
	var metrics []string
	units := map[string]string{}
	var sizes []int64
	cell := map[int64]map[string]Agg{}
	for _, a := range aggs {
		if _, ok := units[a.Metric]; !ok {
			metrics = append(metrics, a.Metric)
			units[a.Metric] = a.Unit
		}
		if cell[a.Size] == nil {
			cell[a.Size] = map[string]Agg{}
			sizes = append(sizes, a.Size)
		}
		cell[a.Size][a.Metric] = a
	}
	sortInt64(sizes)
	hasSize := len(sizes) > 1 || sizes[0] != 0
	n := 0
	for _, a := range aggs {
		n = max(n, a.N)
	}
	if !pivot.Fits(len(sizes)*len(metrics), len(aggs)) {
		metricList(b, aggs, hasSize, n > 1)
		return
	}
	// Each column in its metric's recorded unit, as every view prints it.
	heads, aligns := make([]string, len(metrics)), make([]string, len(metrics))
	for i, m := range metrics {
		heads[i], aligns[i] = fmt.Sprintf("%s (%s)", m, units[m]), "---:"
	}
	writeTableHead(b, hasSize, n > 1, heads, aligns)
	for _, s := range sizes {
		b.WriteString("|")
		if hasSize {
			b.WriteString(" " + HumanSize(s) + " |")
		}
		reps := 0
		for _, m := range metrics {
			a, ok := cell[s][m]
			if !ok {
				b.WriteString(" |")
				continue
			}
			reps = max(reps, a.N)
			b.WriteString(" " + aggCell(a) + " |")
		}
		if n > 1 {
			fmt.Fprintf(b, " %d |", reps)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(b, "\n")
}

// writeTableHead writes the header and separator lines of a table of
// aggregates: a size column first when hasSize, then a column for each of
// heads (aligned as aligns says, "---:" right), then a repeats column
// when repeats. Builders: a line of one cell a metric, appended to a
// string, copied itself once a metric.
func writeTableHead(b *bytes.Buffer, hasSize, repeats bool, heads, aligns []string) {
	var head, sep strings.Builder
	head.WriteString("|")
	sep.WriteString("|")
	if hasSize {
		head.WriteString(" size |")
		sep.WriteString("---:|")
	}
	for i, h := range heads {
		head.WriteString(" " + h + " |")
		sep.WriteString(aligns[i] + "|")
	}
	if repeats {
		head.WriteString(" repeats |")
		sep.WriteString("---:|")
	}
	fmt.Fprintf(b, "%s\n%s\n", head.String(), sep.String())
}

// aggCell is a metric's cell: its median, and its range over repeats.
func aggCell(a Agg) string {
	v := FormatValue(a.Median)
	if a.N > 1 && a.Min != a.Max {
		v += fmt.Sprintf(" (%s–%s)", FormatValue(a.Min), FormatValue(a.Max))
	}
	return v
}

// MaxPivotSlack is how many cells the tables of one output (a summary, a
// report) that pivot values by two of their fields (message size and
// metric, workload and metric) hold together past four a value: a run
// fills its tables or nearly, but a received results.json whose samples
// each have a metric and a size (or a workload) of their own made n
// squared cells: 5,000 samples (660 KB) kept rlab show past a minute,
// 20,000 workloads of a metric each (4 MB) made 800 MB of summary with 2.2
// GB of memory, and results.Decode takes 500,000 samples (found in round
// 9's attack). The slack was per table, so many tables of 100 such values
// each (host pairs of a workload, workloads of a report) made millions of
// cells again: 500,000 samples in 5,000 tables took rlab show 72 s and 2
// GB (SECURITY 164 and 190). Past it, a table lists its values one a row.
const MaxPivotSlack = 10_000

// PivotBudget is what is left of MaxPivotSlack for the tables of one
// output, shared by them in order.
type PivotBudget struct{ left int }

// NewPivotBudget is the budget of one output.
func NewPivotBudget() *PivotBudget { return &PivotBudget{left: MaxPivotSlack} }

// Fits reports whether a table of cells cells laying out n values may be
// pivoted, and takes from the budget what it holds past four cells a value
// when it may.
func (p *PivotBudget) Fits(cells, n int) bool {
	extra := cells - 4*n
	if extra <= 0 {
		return true
	}
	if extra > p.left {
		return false
	}
	p.left -= extra
	return true
}

// metricList is metricTable's table when a pivot would be mostly empty:
// a row per size and metric, sizes in order.
func metricList(b *bytes.Buffer, aggs []Agg, hasSize, repeats bool) {
	sorted := slices.Clone(aggs)
	slices.SortStableFunc(sorted, func(x, y Agg) int { return cmp.Compare(x.Size, y.Size) })
	writeTableHead(b, hasSize, repeats, []string{"metric", "value"}, []string{"---", "---:"})
	for _, a := range sorted {
		b.WriteString("|")
		if hasSize {
			fmt.Fprintf(b, " %s |", HumanSize(a.Size))
		}
		fmt.Fprintf(b, " %s (%s) | %s |", mdCell(a.Metric), mdCell(a.Unit), aggCell(a))
		if repeats {
			fmt.Fprintf(b, " %d |", a.N)
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
}

// rdmaVsTCP puts the throughput of every RDMA bandwidth workload (its
// tool's View.Throughput by RDMAvsTCPRule) next to every TCP workload's,
// each in its recorded unit.
func rdmaVsTCP(b *bytes.Buffer, r *Run, aggs []Agg) {
	type line struct {
		wl, tool, what, unit string
		gbps                 float64
	}
	var rdma, tcp []line
	bidir := map[string]bool{}
	over := map[string]string{}
	for _, wl := range r.Workloads {
		bidir[wl.Name] = wl.Bidirectional()
		over[wl.Name] = wl.RDMA
	}
	per := map[string][]Agg{}
	var order []string
	for _, a := range aggs {
		if _, ok := kinds.Throughput(a.Metric); !ok {
			continue
		}
		id := a.Workload + "\x00" + a.Hosts
		if _, ok := per[id]; !ok {
			order = append(order, id)
		}
		per[id] = append(per[id], a)
	}
	for _, id := range order {
		a := ThroughputAt(per[id])
		what := "bulk"
		if a.Size > 0 {
			what = HumanSize(a.Size) + " messages"
		}
		if bidir[a.Workload] {
			what += ", " + BothDirections
		}
		l := line{a.Workload, a.Tool, what, a.Unit, a.Median}
		if overRDMA, _ := kinds.Throughput(a.Metric); !overRDMA {
			tcp = append(tcp, l)
		} else {
			rdma = append(rdma, l)
		}
	}
	if len(rdma) == 0 || len(tcp) == 0 {
		return
	}
	fmt.Fprintf(b, "## RDMA vs TCP\n\nCompared: %s.\n\n| transport | workload | tool | measured | throughput | vs TCP |\n|---|---|---|---|---:|---:|\n", RDMAvsTCPRule)
	ref := tcp[0].gbps
	for _, l := range rdma {
		ratio := "–"
		if ref > 0 {
			ratio = fmt.Sprintf("%.2fx", l.gbps/ref)
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s |\n", mdCell(RDMAOver(over[l.wl])), mdCell(l.wl), mdCell(l.tool), l.what, HumanValue(l.gbps, l.unit), ratio)
	}
	for i, l := range tcp {
		ratio := "1.00x"
		if i > 0 && ref > 0 {
			ratio = fmt.Sprintf("%.2fx", l.gbps/ref)
		}
		fmt.Fprintf(b, "| TCP | %s | %s | %s | %s | %s |\n", mdCell(l.wl), mdCell(l.tool), l.what, HumanValue(l.gbps, l.unit), ratio)
	}
	fmt.Fprintf(b, "\n")
}

// countExpects counts the expects that held and those skipped (their
// workload never ran); the rest did not hold.
func countExpects(es []Expect) (held, skipped int) {
	for _, e := range es {
		switch {
		case e.Held:
			held++
		case e.Skipped:
			skipped++
		}
	}
	return held, skipped
}

func expectCount(es []Expect) string {
	if len(es) == 0 {
		return "–"
	}
	held, skipped := countExpects(es)
	switch {
	case skipped == len(es):
		return fmt.Sprintf("%d skipped", skipped)
	case skipped > 0 && held+skipped == len(es):
		return fmt.Sprintf("%d/%d held, %d skipped", held, len(es)-skipped, skipped)
	case skipped > 0:
		return fmt.Sprintf("**%d/%d held**, %d skipped", held, len(es)-skipped, skipped)
	case held == len(es):
		return fmt.Sprintf("%d/%d held", held, len(es))
	}
	return fmt.Sprintf("**%d/%d held**", held, len(es))
}

func statusWord(s string) string {
	switch s {
	case RunOK:
		return "ok"
	case "":
		return "unknown"
	case StatusTimedOut:
		return "**TIMED OUT**"
	}
	return "**" + strings.ToUpper(strings.ReplaceAll(s, "_", " ")) + "**"
}

func seconds(s float64) string {
	if s <= 0 {
		return "–"
	}
	if s < 10 {
		return strconv.FormatFloat(s, 'f', 2, 64) + " s"
	}
	return strconv.FormatFloat(s, 'f', 1, 64) + " s"
}

// FormatValue prints a measured value with 4 significant digits, in plain
// decimals (no exponent), cut rather than rounded: the shortest decimal
// that reads back as v (what an expect condition reads, engine/run) cut to
// 4 significant digits, so the printed number is never above the value and
// `result.<metric> >= <printed>` holds while `> <printed> × 1.01` does not.
// Values of 10000 and more print whole.
func FormatValue(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	if v == 0 {
		return "0"
	}
	s := strconv.FormatFloat(v, 'f', -1, 64)
	sign := ""
	if s[0] == '-' {
		sign, s = "-", s[1:]
	}
	whole, frac, _ := strings.Cut(s, ".")
	if whole != "0" {
		if len(whole) >= 4 {
			return sign + whole
		}
		keep := 4 - len(whole)
		if len(frac) > keep {
			frac = frac[:keep]
		}
	} else {
		lead := len(frac) - len(strings.TrimLeft(frac, "0"))
		if len(frac) > lead+4 {
			frac = frac[:lead+4]
		}
	}
	frac = strings.TrimRight(frac, "0")
	if frac == "" {
		if whole == "0" {
			return "0"
		}
		return sign + whole
	}
	return sign + whole + "." + frac
}

// HumanSize prints a message size in bytes with a binary unit when exact:
// 2 B, 4 KiB, 64 KiB, 1 MiB; other values in bytes.
func HumanSize(n int64) string {
	for _, u := range []struct {
		s string
		n int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.n && n%u.n == 0 {
			return fmt.Sprintf("%d %s", n/u.n, u.s)
		}
	}
	return fmt.Sprintf("%d B", n)
}

func sortInt64(s []int64) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	return s
}

// mdText escapes what Markdown would otherwise interpret in free text. "_"
// is left alone: names like write_bw are common and intraword underscores
// are not emphasis in CommonMark.
func mdText(s string) string {
	return termsafe.Line(mdTextEscapes.Replace(s)) // host text: no terminal escapes (rlab show, cat)
}

// The replacers of mdText and mdCode, built once: a summary calls them for
// every cell, and building one each call was a fifth of a 200-host class
// run's allocations (a class writes a summary per student).
var (
	mdTextEscapes = strings.NewReplacer("\\", "\\\\", "*", "\\*", "`", "\\`", "<", "&lt;", ">", "&gt;", "|", "\\|", "[", "\\[", "]", "\\]", "\n", " ")
	mdCodeEscapes = strings.NewReplacer("`", "'", "\n", " ", "|", "\\|")
)

// mdCell is mdText for a table cell.
func mdCell(s string) string { return mdText(oneLine(s)) }

// mdCode makes s safe inside a single-backtick code span.
func mdCode(s string) string {
	return termsafe.Line(mdCodeEscapes.Replace(s))
}
