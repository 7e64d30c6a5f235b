package results

import (
	"bufio"
	"fmt"
	"github.com/rlab-dev/rlab/engine/rundir"
	"io"
	"path/filepath"
	"sort"
	"strings"

	"github.com/rlab-dev/rlab/engine/termsafe"
	"github.com/rlab-dev/rlab/kinds"
)

// headlineRows caps the rows of the end-of-run table; a class lab has
// hundreds of workloads and its students table says more.
const headlineRows = 20

// execOutputLines caps the lines of an exec workload's output shown.
const execOutputLines = 5

// WriteHeadline prints the table rlab run ends with: per workload its key
// numbers with units (bandwidth per size, latency, message rate, TCP
// throughput, an exec's exit), how it ended and whether its expects held;
// then RDMA beside TCP, and the first lines of the output of each workload
// whose tool's View says so (exec; read from the run directory r.Dir). Host text is made printable.
func WriteHeadline(w io.Writer, r *Run) error {
	aggs := Aggregate(Measures(r.Samples))
	byWL := map[string][]Agg{}
	for _, a := range aggs {
		byWL[a.Workload] = append(byWL[a.Workload], a)
	}
	// Trouble counters beside the result: "slow because of what".
	trouble := map[string]string{}
	troubleCol := ""
	for i, wl := range r.Workloads {
		if i < headlineRows {
			trouble[wl.Name] = TroubleText(r.Samples, wl.Name)
			if trouble[wl.Name] != "" {
				troubleCol = "\t"
			}
		}
	}
	tw := termsafe.NewTable(w, 0, 0, 2, ' ', 0)
	head := "WORKLOAD\tTOOL\tHOSTS\tSTATUS\tRESULT\tEXPECTS"
	if troubleCol != "" {
		head += "\tTROUBLE"
	}
	fmt.Fprintln(tw, head)
	for i, wl := range r.Workloads {
		if i == headlineRows {
			fmt.Fprintf(tw, "… %d more (rlab show)\t\t\t\t\t%s\n", len(r.Workloads)-headlineRows, troubleCol)
			break
		}
		st := wl.Status
		if st != StatusOK {
			st = strings.ToUpper(strings.ReplaceAll(st, "_", " "))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s", termsafe.Line(wl.Name), termsafe.Line(wl.Tool), termsafe.Line(kinds.Arrow(wl.Tool, wl.Hosts)),
			st, termsafe.Line(KeyNumbers(wl, byWL[wl.Name])), heldText(wl.Expects))
		if troubleCol != "" {
			fmt.Fprintf(tw, "\t%s", termsafe.Line(trouble[wl.Name]))
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// Why a workload did not end ok, one line each under the table.
	for i, wl := range r.Workloads {
		if i == headlineRows {
			break
		}
		if wl.Status != StatusOK && wl.Error != "" {
			fmt.Fprintf(w, "%s %s: %s\n", strings.ToUpper(strings.ReplaceAll(wl.Status, "_", " ")), termsafe.Line(wl.Name), termsafe.Line(oneLine(wl.Error)))
		}
	}
	// What the output parser did not read, one line per workload: the
	// numbers may miss something the tool said.
	for i, wl := range r.Workloads {
		if i == headlineRows {
			break
		}
		if line := parseNotice(wl); line != "" {
			fmt.Fprintln(w, line)
		}
	}
	if line := rdmaTCPLine(r, aggs); line != "" {
		fmt.Fprintln(w, line)
	}
	for _, wl := range r.Workloads {
		if t, ok := kinds.Lookup(wl.Tool); ok && t.View.Output {
			writeExecOutput(w, r.Dir, wl)
		}
	}
	return nil
}

// KeyNumbers is a workload's headline in one cell: a program's or exec's
// own metric blocks (wl.Metrics, when its tool's View is Declared), else
// the figures its tool's View declares (bandwidth per size and message
// rate, typical and p99 latency, pingpong throughput and time per
// iteration, rping count, TCP throughput), else the exit code and wall
// time every workload records; medians over repeats, each in its recorded
// unit (the one expect reads).
func KeyNumbers(wl Workload, aggs []Agg) string {
	by := map[string][]Agg{}
	for _, a := range aggs {
		by[a.Metric] = append(by[a.Metric], a) // sizes ascending
	}
	parts := figureParts(wl, by, kinds.DeclaredHeadline(wl.Tool, wl.Metrics))
	if len(parts) == 0 {
		parts = figureParts(wl, by, kinds.HeadlineOf(wl.Tool))
	}
	if len(parts) == 0 {
		parts = figureParts(wl, by, kinds.CommonHeadline)
	}
	if n := maxRepeats(aggs); n > 1 && len(parts) > 0 {
		parts[len(parts)-1] += fmt.Sprintf(" (median of %d)", n)
	}
	if len(parts) == 0 {
		return "–"
	}
	return strings.Join(parts, "; ")
}

// figureParts are the parts of a headline cell the figures with a value
// make, each followed by its Then parts.
func figureParts(wl Workload, by map[string][]Agg, figs []kinds.Figure) []string {
	var parts []string
	for _, f := range figs {
		aggs := by[f.Metric]
		if len(aggs) == 0 {
			continue
		}
		var s string
		if f.At == kinds.EverySize {
			var each []string
			for i, a := range aggs {
				if len(aggs) > 4 && i > 0 && i < len(aggs)-2 {
					if i == 1 {
						each = append(each, "…")
					}
					continue
				}
				each = append(each, strings.TrimSpace(HumanSize(a.Size)+" "+figureValue(f, a)))
			}
			s = strings.Join(each, ", ")
		} else {
			a := pickSize(aggs, f.At)
			s = figureValue(f, a)
			for _, g := range f.With {
				if ga := by[g.Metric]; len(ga) > 0 {
					s += ", " + figureValue(g, pickSize(ga, f.At))
				}
			}
			if f.ShowSize && a.Size > 0 {
				s += " at " + HumanSize(a.Size)
			}
		}
		if f.Bidir && wl.Bidirectional() {
			s += " (" + BothDirections + ")"
		}
		parts = append(parts, s)
		parts = append(parts, figureParts(wl, by, f.Then)...)
	}
	return parts
}

// figureValue is one figure's text: label, value, word.
func figureValue(f kinds.Figure, a Agg) string {
	s := HumanValue(a.Median, a.Unit)
	if f.Count || a.Unit == kinds.CountUnit {
		s = FormatValue(a.Median)
	}
	if f.Label != "" {
		s = f.Label + " " + s
	}
	if f.Word != "" {
		s += " " + f.Word
	}
	return s
}

// pickSize is the aggregate at the size a figure is taken at, of one
// metric's aggregates (sizes ascending); EverySize takes the first.
func pickSize(aggs []Agg, at kinds.SizeChoice) Agg {
	if at == kinds.Largest {
		return aggs[len(aggs)-1]
	}
	return aggs[0]
}

func maxRepeats(aggs []Agg) int {
	n := 0
	for _, a := range aggs {
		n = max(n, a.N)
	}
	return n
}

func heldText(es []Expect) string {
	if len(es) == 0 {
		return "–"
	}
	held, skipped := countExpects(es)
	if skipped == len(es) {
		return fmt.Sprintf("%d skipped", skipped)
	}
	s := fmt.Sprintf("%d/%d held", held, len(es)-skipped)
	if held < len(es)-skipped {
		s = "NOT HELD " + s
	}
	if skipped > 0 {
		s += fmt.Sprintf(", %d skipped", skipped)
	}
	return s
}

// RDMAvsTCPRule says in words which figures RDMA vs TCP sets side by side,
// printed next to the comparison in every view (the run's table,
// summary.md, the report): one rule, so the ratio is the same everywhere.
const RDMAvsTCPRule = "each RDMA workload at its largest message size (the nearest to TCP's one bulk stream) against the first TCP workload, medians over repeats"

// rdmaVsTCPShort is RDMAvsTCPRule in the few words the run's table has
// room for.
const rdmaVsTCPShort = "RDMA at its largest size"

// ThroughputAt picks, of one workload's aggregates of its tool's
// throughput metric (sizes ascending), the one RDMA vs TCP compares: the
// largest size (RDMAvsTCPRule).
func ThroughputAt(aggs []Agg) Agg { return aggs[len(aggs)-1] }

// rdmaTCPLine sets each RDMA tool's throughput figure (its View's) beside
// the first TCP baseline's throughput, by RDMAvsTCPRule.
func rdmaTCPLine(r *Run, aggs []Agg) string {
	var tcp *Agg
	for i, a := range aggs {
		if rdma, ok := kinds.Throughput(a.Metric); ok && !rdma {
			tcp = &aggs[i]
			break
		}
	}
	if tcp == nil || tcp.Median <= 0 {
		return ""
	}
	per := map[string][]Agg{}
	var order []string
	for _, a := range aggs {
		if rdma, _ := kinds.Throughput(a.Metric); !rdma {
			continue
		}
		if _, ok := per[a.Workload]; !ok {
			order = append(order, a.Workload)
		}
		per[a.Workload] = append(per[a.Workload], a)
	}
	bidir := map[string]bool{}
	for _, wl := range r.Workloads {
		bidir[wl.Name] = wl.Bidirectional()
	}
	var s []string
	for _, wl := range order {
		a := ThroughputAt(per[wl])
		both := ""
		if bidir[wl] {
			both = " (" + BothDirections + ")"
		}
		s = append(s, fmt.Sprintf("%s %s%s at %s = %.2f× TCP", termsafe.Line(wl), HumanValue(a.Median, a.Unit), both, HumanSize(a.Size), a.Median/tcp.Median))
	}
	if len(s) == 0 {
		return ""
	}
	return fmt.Sprintf("RDMA vs TCP (%s; TCP %s %s): %s", rdmaVsTCPShort, termsafe.Line(tcp.Workload), HumanValue(tcp.Median, tcp.Unit), strings.Join(s, "; "))
}

// TroubleText is what went wrong during a workload by the kernel's own
// counters, for beside its result ("slow because of what"): each trouble
// counter that moved (retransmissions, sequence errors, drops), summed
// over its hosts and devices, in counter order; "" when none moved.
func TroubleText(ss []Sample, workload string) string {
	sum := map[string]float64{}
	var order []string
	for _, s := range CounterDeltas(ss, workload) {
		if c, ok := CounterByName(s.Metric); !ok || c.Class != CounterTrouble || s.Value == 0 {
			continue
		}
		if _, ok := sum[s.Metric]; !ok {
			order = append(order, s.Metric)
		}
		sum[s.Metric] += s.Value
	}
	if len(order) == 0 {
		return ""
	}
	sortCounters(order)
	var parts []string
	for _, m := range order {
		parts = append(parts, m+" "+FormatValue(sum[m]))
	}
	return strings.Join(parts, ", ")
}

// sortCounters orders counter names as the Counters table does.
func sortCounters(names []string) {
	sort.SliceStable(names, func(i, j int) bool { return counterIndex[names[i]] < counterIndex[names[j]] })
}

// routineNotes are parser notes every run of a mode or a packaged version
// gets (perftest prints no peak in duration mode, -D, the quickstart's): true, kept in
// results.json and summary.md, but not worth a line at the end of each run.
// Debian 12's and Ubuntu 22.04's perftest (before 2024) write a broken
// --out_json file on every run, which the parser reads leniently.
var routineNotes = []string{"BW peak reported as 0", "perftest --out_json file is not valid JSON (perftest before 2024)"}

// onlyRoutineNotes says whether a workload's parse lines are all routine
// notes (no unread line, no dropped value).
func onlyRoutineNotes(wl Workload) bool {
	lines, more := wl.ParseLines()
	if more > 0 {
		return false
	}
	for _, l := range lines {
		routine := false
		for _, r := range routineNotes {
			routine = routine || (!l.Unread && strings.HasPrefix(l.Text, r))
		}
		if !routine {
			return false
		}
	}
	return true
}

// parseNoticeQuote caps the first unread line quoted by parseNotice.
const parseNoticeQuote = 60

// parseNotice is the one line the end of a run says about a workload whose
// output parser did not read everything, "" when it read it all.
func parseNotice(wl Workload) string {
	s := wl.ParseSummary()
	if s == "" || onlyRoutineNotes(wl) {
		return ""
	}
	line := "NOTE " + wl.Name + ": " + s
	if lines, _ := wl.ParseLines(); len(lines) > 0 {
		q := lines[0].Text
		if r := []rune(q); len(r) > parseNoticeQuote {
			q = string(r[:parseNoticeQuote]) + "…"
		}
		line += fmt.Sprintf(" (first: %q)", q)
	}
	return termsafe.Line(line + "; see " + SummaryFile)
}

// writeExecOutput prints the first lines of an exec workload's standard
// output (and of its standard error when it failed).
func writeExecOutput(w io.Writer, dir string, wl Workload) {
	if dir == "" {
		return
	}
	for _, rel := range wl.Logs {
		if !strings.HasSuffix(rel, ".stdout") && (wl.Status == StatusOK || !strings.HasSuffix(rel, ".stderr")) {
			continue
		}
		f, err := rundir.Open(dir, rel)
		if err != nil {
			continue
		}
		var lines []string
		sc := bufio.NewScanner(io.LimitReader(f, 64<<10))
		more := false
		for sc.Scan() {
			if len(lines) == execOutputLines {
				more = true
				break
			}
			lines = append(lines, sc.Text())
		}
		f.Close()
		if len(lines) == 0 {
			continue
		}
		stream := strings.TrimPrefix(filepath.Ext(rel), ".")
		fmt.Fprintf(w, "%s %s (%s):\n", termsafe.Line(wl.Name), stream, rel)
		for _, l := range lines {
			fmt.Fprintf(w, "  %s\n", termsafe.Line(l))
		}
		if more {
			fmt.Fprintf(w, "  … (the rest in %s)\n", rel)
		}
	}
}
