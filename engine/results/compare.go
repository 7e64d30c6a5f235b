package results

import (
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/rlab-dev/rlab/engine/termsafe"
	"github.com/rlab-dev/rlab/kinds"
	"golang.org/x/perf/benchmath"
)

// CompareOptions set what counts as a regression.
type CompareOptions struct {
	// Threshold is the default allowed change against the better direction,
	// in percent (10 means a bandwidth may drop, or a latency grow, by 10%).
	Threshold float64
	// MetricThresholds override Threshold per metric name (bw_avg: 5). They
	// win over thresholds the lab recorded in the run (Workload.Thresholds).
	MetricThresholds map[string]float64
	// By default only the metrics of each workload's headline (its tool's
	// View) are compared, and a metric given a threshold. AllMetrics adds
	// every other metric of the tools (peak bandwidth, every latency
	// percentile); Counters adds the kernel's trouble counters (a traffic
	// counter still needs a threshold of its own: it follows the
	// workload's amount).
	AllMetrics bool
	Counters   bool
}

// DefaultThreshold is the allowed regression in percent when none is given.
const DefaultThreshold = 10

// Comparison statuses of one measurement.
const (
	DeltaSame      = "ok"        // within the threshold
	DeltaBetter    = "better"    // improved past the threshold
	DeltaRegressed = "regressed" // worse past the threshold
	DeltaMissing   = "missing"   // in A, not in B: the workload stopped producing it
	DeltaNew       = "new"       // only in B
	DeltaNoBase    = "no_base"   // A is 0: no relative change to speak of
	DeltaNoise     = "noise"     // past the threshold, but within the runs' own variation ("~")
)

// How a Delta decided whether its change stands out of the runs' own
// variation (Delta.Test).
const (
	// TestUTest is the Mann-Whitney U test on the repeats (benchmath's
	// AssumeNothing, alpha 0.05), used when there are enough repeats for it to
	// be able to say "different" (4 per run at alpha 0.05).
	TestUTest = "u-test"
	// TestRange is used with 2 or 3 repeats: a change counts only when the
	// repeats' ranges [min, max] of A and B do not overlap.
	TestRange = "range"
	// TestNone is one repeat on each side: the runs' own variation is
	// unknown and the threshold alone decides.
	TestNone = "threshold"
)

// compareAlpha is the significance level of the rank test (benchstat's).
var compareAlpha = benchmath.DefaultThresholds

// Delta is one measurement of both runs (medians over repeats).
type Delta struct {
	Key
	Unit           string  `json:"unit"`
	A              float64 `json:"a"`
	B              float64 `json:"b"`
	NA             int     `json:"n_a"`
	NB             int     `json:"n_b"`
	Change         float64 `json:"change_pct"` // (B-A)/A in percent
	Threshold      float64 `json:"threshold_pct"`
	HigherIsBetter bool    `json:"higher_is_better"`
	Status         string  `json:"status"`
	// The repeats' range of each side (min and max over repeats).
	AMin float64 `json:"a_min"`
	AMax float64 `json:"a_max"`
	BMin float64 `json:"b_min"`
	BMax float64 `json:"b_max"`
	// Test says how noise was told from change (TestUTest, TestRange,
	// TestNone); Significant whether the change stands out of the runs' own
	// variation by that test; P the rank test's p-value (TestUTest).
	Test        string   `json:"test,omitempty"`
	Significant bool     `json:"significant"`
	P           *float64 `json:"p,omitempty"`
}

// RunRef names a compared run.
type RunRef struct {
	Lab    string `json:"lab"`
	ID     string `json:"id"`
	Dir    string `json:"dir"`
	Status string `json:"status"`
}

// Comparison is the result of Compare.
type Comparison struct {
	A         RunRef  `json:"a"`
	B         RunRef  `json:"b"`
	Threshold float64 `json:"threshold_pct"`
	Deltas    []Delta `json:"deltas"`
	Regressed int     `json:"regressed"`
	Missing   int     `json:"missing"`
	Improved  int     `json:"improved"`
	Same      int     `json:"same"`
	Noise     int     `json:"noise"` // past the threshold but within the runs' own variation
	New       int     `json:"new"`
	// Warnings say when the comparison cannot tell much: too few repeats,
	// or runs that differ in lab, hosts, kernel or tool versions.
	Warnings []string `json:"warnings,omitempty"`
	// Headlines are each workload's headline in A and in B, as the run's
	// table prints it (its tool's View): the first thing compare shows.
	Headlines []HeadlinePair `json:"headlines,omitempty"`
	// Folded are the metrics left out by default (--all-metrics adds
	// them), FoldedCounters whether kernel counters were (--counters).
	Folded         []string `json:"folded,omitempty"`
	FoldedCounters bool     `json:"folded_counters,omitempty"`
}

// HeadlinePair is one workload's headline in both runs ("–" where it did
// not run).
type HeadlinePair struct {
	Workload string `json:"workload"`
	A        string `json:"a"`
	B        string `json:"b"`
}

// Failed reports whether B regressed against A: a measurement got worse past
// its threshold, or one that A had is missing from B.
func (c *Comparison) Failed() bool { return c.Regressed > 0 || c.Missing > 0 }

// headlineMetric: m is one of the figures of tool's headline (its View),
// what compare compares by default.
func headlineMetric(tool, m string) bool {
	for _, f := range kinds.HeadlineOf(tool) {
		for _, hm := range f.Metrics() {
			if hm == m {
				return true
			}
		}
	}
	return false
}

// compared says whether compare compares a measurement by default (not
// given a threshold): a headline figure, else a metric of the tool's with
// AllMetrics, a trouble counter with Counters. The metrics every workload
// records (exit code, wall time) describe a run rather than measure the
// system, and a traffic counter (packets, bytes) follows the workload's
// amount: both are compared only with a threshold of their own. A counter
// an older rlab read that is no longer in Counters is compared with
// Counters, as a trouble one.
func (o CompareOptions) compared(k Key, counter bool) bool {
	if counter {
		c, ok := CounterByName(k.Metric)
		return o.Counters && (!ok || c.Class == CounterTrouble)
	}
	return !kinds.IsCommon(k.Metric) && (o.AllMetrics || headlineMetric(k.Tool, k.Metric))
}

// trouble: a kernel counter of what went wrong (retransmissions, sequence
// errors, drops).
func trouble(metric string) bool {
	c, ok := CounterByName(metric)
	return ok && c.Class == CounterTrouble
}

// Compare matches the samples of run a (the baseline) and run b by workload,
// metric, size and hosts, folds repeats into medians and classifies each
// change by the metric's direction (Metrics' HigherIsBetter). A change past
// its threshold counts (regressed or better) only when it also stands out of
// the runs' own variation: by a Mann-Whitney U test on the repeats when there
// are enough of them, by the repeats' ranges when there are 2 or 3; otherwise
// it is DeltaNoise ("~"). With one repeat the threshold alone decides.
func Compare(a, b *Run, opts CompareOptions) *Comparison {
	def := opts.Threshold
	if def <= 0 {
		def = DefaultThreshold
	}
	c := &Comparison{
		A:         RunRef{a.Lab, a.ID, a.Dir, a.Status},
		B:         RunRef{b.Lab, b.ID, b.Dir, b.Status},
		Threshold: def,
	}
	labThr := map[string]map[string]float64{}
	for _, r := range []*Run{a, b} { // b's thresholds win: it ran the newer lab
		for _, wl := range r.Workloads {
			for m, t := range wl.Thresholds {
				if labThr[wl.Name] == nil {
					labThr[wl.Name] = map[string]float64{}
				}
				labThr[wl.Name][m] = t
			}
		}
	}
	threshold := func(k Key) (float64, bool) {
		if t, ok := opts.MetricThresholds[k.Metric]; ok {
			return t, true
		}
		if t, ok := labThr[k.Workload][k.Metric]; ok {
			return t, true
		}
		return def, false
	}
	bList := Aggregate(b.Samples)
	bAggs := make(map[Key]Agg, len(bList))
	for _, g := range bList {
		bAggs[g.Key] = g
	}
	seen := map[Key]bool{}
	folded := map[string]bool{}
	counter := map[string]bool{}
	for _, r := range []*Run{a, b} {
		for _, s := range r.Samples {
			if IsCounter(s) {
				counter[s.Metric] = true
			}
		}
	}
	// The lab's own metrics (metric blocks) that say which way is better:
	// compared like a headline, in that direction.
	own := map[string]bool{}
	for _, r := range []*Run{a, b} {
		for _, s := range r.Samples {
			if d := s.Meta.Extra[BetterExtra]; d != "" {
				if _, known := MetricByName(s.Metric); !known {
					own[s.Metric] = d == "higher"
				}
			}
		}
	}
	direction := func(metric string) bool {
		if m, ok := MetricByName(metric); ok {
			return m.HigherIsBetter
		}
		return own[metric]
	}
	fold := func(k Key, explicit bool) bool {
		if _, isOwn := own[k.Metric]; explicit || isOwn || opts.compared(k, counter[k.Metric]) {
			return false
		}
		if counter[k.Metric] {
			c.FoldedCounters = c.FoldedCounters || !opts.Counters
		} else if !kinds.IsCommon(k.Metric) && !folded[k.Metric] {
			folded[k.Metric] = true
			c.Folded = append(c.Folded, k.Metric)
		}
		return true
	}
	for _, ga := range Aggregate(a.Samples) {
		thr, explicit := threshold(ga.Key)
		if fold(ga.Key, explicit) {
			seen[ga.Key] = true
			continue
		}
		m := Metric{HigherIsBetter: direction(ga.Metric)}
		d := Delta{Key: ga.Key, Unit: ga.Unit, A: ga.Median, NA: ga.N, Threshold: thr, HigherIsBetter: m.HigherIsBetter,
			AMin: ga.Min, AMax: ga.Max}
		gb, ok := bAggs[ga.Key]
		seen[ga.Key] = true
		if ok {
			d.B, d.NB, d.BMin, d.BMax = gb.Median, gb.N, gb.Min, gb.Max
			d.Test, d.Significant, d.P = significance(ga.Values, gb.Values)
		}
		switch {
		case !ok:
			d.Status = DeltaMissing
		case ga.Median == 0 && gb.Median > 0 && trouble(ga.Metric):
			// Retransmissions, sequence errors, drops: from none to
			// some is what nightly CI must see, whatever the ratio.
			d.Status = DeltaRegressed
		case ga.Median == 0:
			d.Status = DeltaNoBase
			if gb.Median == 0 {
				d.Status = DeltaSame
			}
		default:
			d.Change = (gb.Median - ga.Median) / math.Abs(ga.Median) * 100
			worse := d.Change
			if m.HigherIsBetter {
				worse = -d.Change
			}
			switch {
			case (worse > thr || -worse > thr) && !d.Significant:
				d.Status = DeltaNoise
			case worse > thr:
				d.Status = DeltaRegressed
			case -worse > thr:
				d.Status = DeltaBetter
			default:
				d.Status = DeltaSame
			}
		}
		c.Deltas = append(c.Deltas, d)
	}
	for _, gb := range bList {
		if seen[gb.Key] {
			continue
		}
		thr, explicit := threshold(gb.Key)
		if fold(gb.Key, explicit) {
			continue
		}
		m := Metric{HigherIsBetter: direction(gb.Metric)}
		c.Deltas = append(c.Deltas, Delta{Key: gb.Key, Unit: gb.Unit, B: gb.Median, NB: gb.N, Threshold: thr,
			HigherIsBetter: m.HigherIsBetter, Status: DeltaNew, BMin: gb.Min, BMax: gb.Max})
	}
	for _, d := range c.Deltas {
		switch d.Status {
		case DeltaRegressed:
			c.Regressed++
		case DeltaMissing:
			c.Missing++
		case DeltaBetter:
			c.Improved++
		case DeltaSame, DeltaNoBase:
			c.Same++
		case DeltaNew:
			c.New++
		case DeltaNoise:
			c.Noise++
		}
	}
	c.Warnings = append(repeatWarnings(c.Deltas), runWarnings(a, b)...)
	c.Headlines = headlinePairs(a, b)
	return c
}

// headlinePairs are the headlines of the workloads of a and b, in a's
// order, then b's new ones.
func headlinePairs(a, b *Run) []HeadlinePair {
	var out []HeadlinePair
	at := map[string]int{}
	for side, r := range []*Run{a, b} {
		byWL := map[string][]Agg{}
		for _, g := range Aggregate(Measures(r.Samples)) {
			byWL[g.Workload] = append(byWL[g.Workload], g)
		}
		for _, wl := range r.Workloads {
			i, ok := at[wl.Name]
			if !ok {
				i = len(out)
				at[wl.Name] = i
				out = append(out, HeadlinePair{Workload: wl.Name, A: "–", B: "–"})
			}
			h := KeyNumbers(wl, byWL[wl.Name])
			if wl.Status != StatusOK && wl.Status != "" {
				h = strings.ToUpper(strings.ReplaceAll(wl.Status, "_", " ")) + " " + h
			}
			if side == 0 {
				out[i].A = h
			} else {
				out[i].B = h
			}
		}
	}
	return out
}

// significance tells whether the repeats b differ from the repeats a by more
// than their own variation; see Compare.
func significance(a, b []float64) (test string, significant bool, p *float64) {
	if len(a) < 2 && len(b) < 2 {
		return TestNone, true, nil
	}
	sa := benchmath.NewSample(append([]float64(nil), a...), &compareAlpha)
	sb := benchmath.NewSample(append([]float64(nil), b...), &compareAlpha)
	cmp := benchmath.AssumeNothing.Compare(sa, sb)
	if cmp.P <= cmp.Alpha {
		pv := cmp.P
		return TestUTest, true, &pv
	}
	if len(cmp.Warnings) == 0 {
		pv := cmp.P
		return TestUTest, false, &pv
	}
	// Too few repeats for the rank test to ever say "different" (or all
	// values tied): the change counts when the ranges are apart.
	overlap := math.Max(sa.Values[0], sb.Values[0]) <= math.Min(sa.Values[len(sa.Values)-1], sb.Values[len(sb.Values)-1])
	return TestRange, !overlap, nil
}

// repeatWarnings says how many compared measurements had too few repeats to
// tell noise from change by a rank test.
func repeatWarnings(ds []Delta) []string {
	var one, few int
	for _, d := range ds {
		switch d.Test {
		case TestNone:
			one++
		case TestRange:
			if min(d.NA, d.NB) < 4 {
				few++
			}
		}
	}
	var w []string
	if one > 0 {
		w = append(w, fmt.Sprintf("%d measurement(s) have one repeat per run: their own variation is unknown, so the threshold alone decides; give the workloads repeat = 4 or more", one))
	}
	if few > 0 {
		w = append(w, fmt.Sprintf("%d measurement(s) have 2-3 repeats: too few for a rank test (it needs at least 4 repeats per run to detect a difference at alpha %g), so a change counts only when the repeats' ranges do not overlap; give the workloads repeat = 4 or more", few, compareAlpha.CompareAlpha))
	}
	return w
}

// WriteText prints the comparison as a table, one line per measurement, and
// a closing line with the counts. Values are medians over repeats with the
// repeats' spread (±), scaled for people; CHANGE is "~" when the change does
// not stand out of the runs' own variation; TEST says how that was decided.
func (c *Comparison) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "A: %s (%s)\nB: %s (%s)\n", refName(c.A), c.A.Status, refName(c.B), c.B.Status)
	for _, m := range c.Warnings {
		// Warnings quote what hosts said (versions, kernels): never raw
		// on a terminal (SECURITY 154).
		fmt.Fprintf(w, "warning: %s\n", termsafe.Line(m))
	}
	fmt.Fprintln(w)
	if len(c.Headlines) > 0 {
		tw := termsafe.NewTable(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "WORKLOAD\tRESULT IN A\tRESULT IN B")
		for _, h := range c.Headlines {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", termsafe.Line(h.Workload), termsafe.Line(h.A), termsafe.Line(h.B))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	tw := termsafe.NewTable(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKLOAD\tMETRIC\tSIZE\tA\tB\tCHANGE\tLIMIT\tTEST\tRESULT")
	for _, d := range c.Deltas {
		size := ""
		if d.Size > 0 {
			size = HumanSize(d.Size)
		}
		wl := d.Workload
		if d.Hosts != "" {
			wl += " [" + d.Hosts + "]"
		}
		av, bv := d.cells()
		limit := strconv.FormatFloat(d.Threshold, 'f', -1, 64) + "%"
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", wl, d.Metric, size, av, bv, d.changeCell(), limit, d.testCell(), d.resultText())
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if f := c.foldedText(); f != "" {
		fmt.Fprintf(w, "not compared: %s\n", f)
	}
	verdict := "PASS"
	if c.Failed() {
		verdict = "FAIL"
	}
	_, err := fmt.Fprintf(w, "\n%s: %s\n", verdict, c.counts())
	return err
}

// foldedText says what compare left out by default and the flag that
// adds it; "" when nothing was.
func (c *Comparison) foldedText() string {
	var parts []string
	if len(c.Folded) > 0 {
		parts = append(parts, strings.Join(c.Folded, ", ")+" (--all-metrics)")
	}
	if c.FoldedCounters {
		parts = append(parts, "kernel counters (--counters)")
	}
	return strings.Join(parts, "; ")
}

func (c *Comparison) counts() string {
	return fmt.Sprintf("%d regressed, %d missing, %d improved, %d within threshold, %d within noise, %d new",
		c.Regressed, c.Missing, c.Improved, c.Same, c.Noise, c.New)
}

// cells are the A and B cells: median, unit and the repeats' spread.
func (d Delta) cells() (a, b string) {
	a, b = "–", "–"
	if d.Status != DeltaNew {
		a = spreadValue(d.A, d.AMin, d.AMax, d.NA, d.Unit)
	}
	if d.Status != DeltaMissing {
		b = spreadValue(d.B, d.BMin, d.BMax, d.NB, d.Unit)
	}
	return a, b
}

func spreadValue(med, lo, hi float64, n int, unit string) string {
	s := HumanValue(med, unit)
	if n > 1 {
		s += " ±" + benchmath.Summary{Center: med, Lo: lo, Hi: hi}.PctRangeString()
	}
	return s
}

// changeCell is the relative change, or "~" when it is within the runs' own
// variation (benchstat's notation).
func (d Delta) changeCell() string {
	switch {
	case d.Status == DeltaNew || d.Status == DeltaMissing || d.Status == DeltaNoBase:
		return "–"
	case d.A == 0 && d.B > 0:
		return "from 0"
	case !d.Significant:
		return "~"
	}
	return fmt.Sprintf("%+.1f%%", d.Change)
}

// testCell says how noise was told from change, with the repeat counts.
func (d Delta) testCell() string {
	n := fmt.Sprintf("n=%d+%d", d.NA, d.NB)
	if d.NA == d.NB {
		n = fmt.Sprintf("n=%d", d.NA)
	}
	switch d.Test {
	case TestUTest:
		return fmt.Sprintf("p=%.3f %s", *d.P, n)
	case TestRange:
		if d.Significant {
			return "ranges apart " + n
		}
		return "ranges overlap " + n
	case TestNone:
		return n
	}
	return "–"
}

func (d Delta) resultText() string {
	dir := "higher is better"
	if !d.HigherIsBetter {
		dir = "lower is better"
	}
	return resultWord(d.Status, dir)
}

// WriteMarkdown prints the comparison as a Markdown table (for a CI job's
// summary page or a pull request comment): regressions first.
func (c *Comparison) WriteMarkdown(w io.Writer) error {
	verdict := "PASS"
	if c.Failed() {
		verdict = "**FAIL**"
	}
	fmt.Fprintf(w, "## rlab compare: %s\n\nA `%s` (%s) → B `%s` (%s): %s.\n\n",
		verdict, mdCode(refName(c.A)), c.A.Status, mdCode(refName(c.B)), c.B.Status, c.counts())
	for _, m := range c.Warnings {
		fmt.Fprintf(w, "- **warning:** %s\n", mdText(m))
	}
	if len(c.Warnings) > 0 {
		fmt.Fprintln(w)
	}
	if len(c.Headlines) > 0 {
		fmt.Fprintf(w, "| workload | result in A | result in B |\n|---|---|---|\n")
		for _, h := range c.Headlines {
			fmt.Fprintf(w, "| %s | %s | %s |\n", mdCell(h.Workload), mdCell(h.A), mdCell(h.B))
		}
		fmt.Fprintln(w)
	}
	if f := c.foldedText(); f != "" {
		fmt.Fprintf(w, "Not compared: %s.\n\n", mdText(f))
	}
	fmt.Fprintf(w, "| workload | metric | size | A | B | change | limit | test | result |\n|---|---|---:|---:|---:|---:|---:|---|---|\n")
	order := []string{DeltaRegressed, DeltaMissing, DeltaBetter, DeltaNew, DeltaNoise, DeltaSame, DeltaNoBase}
	for _, st := range order {
		for _, d := range c.Deltas {
			if d.Status != st {
				continue
			}
			size := ""
			if d.Size > 0 {
				size = HumanSize(d.Size)
			}
			av, bv := d.cells()
			res := d.resultText()
			if d.Status == DeltaRegressed || d.Status == DeltaMissing {
				res = "**" + res + "**"
			}
			if _, err := fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %g%% | %s | %s |\n", mdCell(d.Workload), d.Metric, size, av, bv, d.changeCell(), d.Threshold, d.testCell(), res); err != nil {
				return err
			}
		}
	}
	return nil
}

func resultWord(status, dir string) string {
	switch status {
	case DeltaRegressed:
		return "REGRESSED (" + dir + ")"
	case DeltaMissing:
		return "MISSING in B"
	case DeltaBetter:
		return "better"
	case DeltaNew:
		return "new in B"
	case DeltaNoBase:
		return "ok (A is 0)"
	case DeltaNoise:
		return "~ within noise"
	}
	return "ok"
}

func refName(r RunRef) string {
	if r.Dir != "" {
		return r.Dir
	}
	return r.Lab + "/" + r.ID
}

// JUnit renders the comparison as JUnit XML: one test case per workload,
// failed when one of its compared measurements regressed or went missing
// (each named in the failure), its other measurements in its system-out.
func (c *Comparison) JUnit() ([]byte, error) {
	suite := JUnitSuite{Name: "rlab compare"}
	suite.Properties = []JUnitProperty{{"a", refName(c.A)}, {"b", refName(c.B)}}
	for _, m := range c.Warnings {
		suite.Properties = append(suite.Properties, JUnitProperty{"warning", m})
	}
	var order []string
	byWL := map[string][]Delta{}
	for _, h := range c.Headlines {
		order = append(order, h.Workload)
		byWL[h.Workload] = nil
	}
	for _, d := range c.Deltas {
		if _, ok := byWL[d.Workload]; !ok {
			order = append(order, d.Workload)
		}
		byWL[d.Workload] = append(byWL[d.Workload], d)
	}
	for _, wl := range order {
		tc := JUnitCase{Classname: "rlab.compare", Name: wl}
		var bad, out []string
		for _, d := range byWL[wl] {
			what := d.Metric
			if d.Size > 0 {
				what += " [size " + HumanSize(d.Size) + "]"
			}
			if d.Hosts != "" {
				what += " [" + d.Hosts + "]"
			}
			switch d.Status {
			case DeltaRegressed:
				bad = append(bad, fmt.Sprintf("%s regressed %+.1f%% (limit %g%%): %s → %s %s", what, d.Change, d.Threshold,
					FormatValue(d.A), FormatValue(d.B), d.Unit))
			case DeltaMissing:
				bad = append(bad, fmt.Sprintf("%s is in A (%s %s) but missing from B", what, FormatValue(d.A), d.Unit))
			default:
				out = append(out, fmt.Sprintf("%s: A %s B %s %s change %+.1f%% (%s; %s)", what, FormatValue(d.A), FormatValue(d.B), d.Unit, d.Change, d.Status, d.testCell()))
			}
		}
		if len(bad) > 0 {
			tc.Failure = &JUnitProblem{Message: strings.Join(bad, "; "), Type: "regression", Text: strings.Join(bad, "\n")}
		}
		tc.SystemOut = strings.Join(out, "\n")
		suite.Cases = append(suite.Cases, tc)
		suite.Tests++
		if tc.Failure != nil {
			suite.Failures++
		}
	}
	root := JUnitSuites{Name: "rlab compare", Tests: suite.Tests, Failures: suite.Failures, Suites: []JUnitSuite{suite}}
	b, err := xml.MarshalIndent(root, "", "  ")
	if err != nil {
		return nil, err
	}
	return append([]byte(xml.Header), append(b, '\n')...), nil
}

// ParsePercent reads a threshold: "10%", "10" (percent) or "2.5%".
func ParsePercent(s string) (float64, error) {
	t := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "%"))
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0, fmt.Errorf("threshold %q: want a non-negative percentage such as 10%%", s)
	}
	return v, nil
}
