package kinds

// View is a tool's part of every view rlab shows, as data: which of its
// metrics make its headline, which charts the report draws from them, which
// one is its throughput beside the others. The views (engine/results'
// headline, summary.md and `rlab runs`; engine/report's charts, RDMA vs TCP
// and loss sweep) read it and spell no metric name of their own, so a new
// family is shown by declaring its View, and a metric no view shows is a
// test failure (Unshown), not a silent gap.
type View struct {
	// Headline is the workload's cell of the table a run ends with, in
	// order: each figure with a value is one part ("; " between parts).
	// Empty: CommonHeadline (exit code, wall time).
	Headline []Figure
	// Glance is the one figure `rlab runs` shows of a workload (Metric ""
	// for none).
	Glance Figure
	// Charts are the report's charts of one workload, in order.
	Charts []Chart
	// Throughput is the metric, in Gb/s, that RDMA vs TCP, the loss sweep
	// and alone vs together set side by side: an RDMA tool's at its
	// largest size (results.RDMAvsTCPRule) against a non-RDMA (TCP)
	// tool's bulk figure. "" for none.
	Throughput string
	// TableOnly are metrics shown only in the tables that list every
	// metric (summary.md, the report's samples): said here so that a
	// metric left out of every figure and chart is a choice, not a gap.
	TableOnly []string
	// Output: the run's headline quotes the first lines of the workload's
	// standard output (exec: the command's output is what it measured).
	Output bool
	// Declared: the workload's own metric blocks (OutputMetric) are its
	// headline, each in the order the lab declares them (DeclaredHeadline):
	// a program's or exec's numbers are the lab's to name, so no figure
	// here can name them.
	Declared bool
}

// SizeChoice says which message size a figure is taken at.
type SizeChoice int

// The size choices; sizes are ascending, so the zero value is the first.
const (
	Smallest  SizeChoice = iota
	Largest              // bandwidth: the largest size
	EverySize            // each size, the middle ones elided past four
)

// Figure is one number of a headline: Label, the metric's value in units
// for people (a bare count when Count), then Word.
type Figure struct {
	Metric string
	Label  string // before the value ("typical")
	Word   string // after the value ("ping-pongs", "typ")
	Count  bool   // a bare number, no unit
	At     SizeChoice
	// ShowSize: " at <size>" ends the figure (after its With figures).
	ShowSize bool
	// Bidir: "(both directions)" follows when the workload measured the
	// sum of both directions.
	Bidir bool
	// With are figures shown in the same part, after ", ", at the same
	// size; Then are parts of their own after this one. Both only when
	// this figure has a value.
	With []Figure
	Then []Figure
}

// Metrics lists the metric of f and of its With and Then figures.
func (f Figure) Metrics() []string {
	if f.Metric == "" {
		return nil
	}
	out := []string{f.Metric}
	for _, g := range append(append([]Figure(nil), f.With...), f.Then...) {
		out = append(out, g.Metrics()...)
	}
	return out
}

// ChartType is how a chart draws its series.
type ChartType int

// The chart types.
const (
	// Lines: one line per series against message size (log scale).
	Lines ChartType = iota
	// Bars: a group of bars per message size, one bar per series.
	Bars
)

// Chart is one chart of a workload's metrics.
type Chart struct {
	ID    string // the anchor's suffix, unique among all tools' charts
	Title string
	Type  ChartType
	// The value axis is in the first series' recorded unit, the one the
	// table beneath and every other view print it in: a chart declares no
	// unit of its own.
	Series []Series
	// When: the chart is drawn when any of these metrics has a value;
	// nil: when any series has one.
	When []string
	// MinSizes: drawn only when the first series has values at this many
	// sizes or more (0: any).
	MinSizes int
}

// Series is one line, or one bar of each group, of a chart.
type Series struct {
	Metric string
	Name   string // its legend
}

// CommonHeadline is the headline of a workload whose tool's figures have
// no value (an exec, or a tool that failed before measuring): the metrics
// every workload records.
var CommonHeadline = []Figure{
	{Metric: "exit_code", Label: "exit", Count: true},
	{Metric: "duration", Label: "in"},
}

// DeclaredHeadlineMax caps the figures a workload's own metric blocks
// give its headline: the first ones declared, the rest in the tables that
// list every metric (summary.md's samples, the report's).
const DeclaredHeadlineMax = 3

// DeclaredHeadline is the headline of a workload whose tool's View is
// Declared: one figure per metric block it declares (own, the metric
// names in declaration order, at most DeclaredHeadlineMax), labelled with
// the metric's name, at the largest size run; a count (recorded in
// CountUnit) reads as a bare number. nil when the tool is not Declared or own is empty; the caller
// then takes HeadlineOf (and CommonHeadline).
func DeclaredHeadline(tool string, own []string) []Figure {
	t, ok := Lookup(tool)
	if !ok || !t.View.Declared {
		return nil
	}
	var out []Figure
	for _, m := range own {
		if len(out) == DeclaredHeadlineMax {
			break
		}
		out = append(out, Figure{Metric: m, Label: m, At: Largest, ShowSize: true})
	}
	return out
}

// IsCommon reports whether metric m is one every workload records: it
// describes the run (how it ended, how long it took) more than it measures
// the system.
func IsCommon(m string) bool {
	for _, c := range Common {
		if c == m {
			return true
		}
	}
	return false
}

// HeadlineOf returns the headline figures of tool; for a tool not
// described (a hand-edited or older results.json), every tool's, each
// metric once, in registration order.
func HeadlineOf(tool string) []Figure {
	if t, ok := Lookup(tool); ok {
		return t.View.Headline
	}
	var out []Figure
	seen := map[string]bool{}
	for _, t := range All() {
		for _, f := range t.View.Headline {
			if !seen[f.Metric] {
				seen[f.Metric] = true
				out = append(out, f)
			}
		}
	}
	return out
}

// Glances returns every tool's Glance figure, each metric once, in
// registration order.
func Glances() []Figure {
	var out []Figure
	seen := map[string]bool{}
	for _, t := range All() {
		if f := t.View.Glance; f.Metric != "" && !seen[f.Metric] {
			seen[f.Metric] = true
			out = append(out, f)
		}
	}
	return out
}

// Charts returns every tool's charts, each ID once, in registration order:
// a workload gets those its metrics have values for.
func Charts() []Chart {
	var out []Chart
	seen := map[string]bool{}
	for _, t := range All() {
		for _, c := range t.View.Charts {
			if !seen[c.ID] {
				seen[c.ID] = true
				out = append(out, c)
			}
		}
	}
	return out
}

// Throughput says whether metric m is some tool's Throughput, and whether
// that tool is an RDMA tool (else it is the TCP baseline).
func Throughput(m string) (rdma, ok bool) {
	for _, t := range All() {
		if t.View.Throughput != "" && t.View.Throughput == m {
			return t.RDMA, true
		}
	}
	return false, false
}

// Shown lists the metrics t's View shows somewhere (headline, glance,
// charts, throughput, tables), each once.
func (v View) Shown() []string {
	var out []string
	seen := map[string]bool{}
	add := func(ms ...string) {
		for _, m := range ms {
			if m != "" && !seen[m] {
				seen[m] = true
				out = append(out, m)
			}
		}
	}
	for _, f := range v.Headline {
		add(f.Metrics()...)
	}
	add(v.Glance.Metrics()...)
	for _, c := range v.Charts {
		for _, s := range c.Series {
			add(s.Metric)
		}
	}
	add(v.Throughput)
	add(v.TableOnly...)
	return out
}

// Unshown lists the metrics t records (its Metrics and Common) that no
// view shows: absent from its View, and for Common ones from
// CommonHeadline too. A metric its View names that t does not record is
// listed as "view: <name>": a view keyed on a name nothing records shows
// nothing.
func (t Tool) Unshown() []string {
	shown := map[string]bool{}
	for _, m := range t.View.Shown() {
		shown[m] = true
	}
	for _, f := range CommonHeadline {
		shown[f.Metric] = true
	}
	records := map[string]bool{}
	var out []string
	for _, m := range append(append([]string(nil), t.Metrics...), Common...) {
		records[m] = true
		if !shown[m] {
			out = append(out, m)
		}
	}
	for _, m := range t.View.Shown() {
		if !records[m] {
			out = append(out, "view: "+m)
		}
	}
	return out
}

// Unshown lists what of a family no view can show: each tool's Unshown
// ("tool: metric"), and a metric the family declares that none of its
// tools records ("metric: <name>": declared, so in the vocabulary, yet no
// sample of it is ever taken, so no view ever shows it). A tool that
// records a metric the family does not declare is listed as "tool:
// undeclared <name>" when no other registered family declares it either.
func (d Desc) Unshown() []string {
	var out []string
	declared := map[string]bool{}
	for _, m := range d.Metrics {
		declared[m.Name] = true
	}
	recorded := map[string]bool{}
	for _, t := range d.Tools {
		for _, m := range t.Unshown() {
			out = append(out, t.Name+": "+m)
		}
		for _, m := range t.Metrics {
			recorded[m] = true
			if _, known := MetricByName(m); !declared[m] && !known {
				out = append(out, t.Name+": undeclared "+m)
			}
		}
	}
	for _, m := range d.Metrics {
		if !recorded[m.Name] {
			out = append(out, "metric: "+m.Name)
		}
	}
	return out
}
