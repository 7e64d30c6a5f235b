package results

import (
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
)

// CompareOptions set what counts as a regression.
type CompareOptions struct {
	// Threshold is the default allowed change against the better direction,
	// in percent (10 means a bandwidth may drop, or a latency grow, by 10%).
	Threshold float64
	// MetricThresholds override Threshold per metric name (bw_avg: 5). They
	// win over thresholds the lab recorded in the run (Workload.Thresholds).
	MetricThresholds map[string]float64
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
)

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
	New       int     `json:"new"`
}

// Failed reports whether B regressed against A: a measurement got worse past
// its threshold, or one that A had is missing from B.
func (c *Comparison) Failed() bool { return c.Regressed > 0 || c.Missing > 0 }

// skipByDefault are metrics that describe a run rather than measure the
// system; they are compared only when given a threshold explicitly.
var skipByDefault = map[string]bool{"exit_code": true, "duration": true}

// Compare matches the samples of run a (the baseline) and run b by workload,
// metric, size and hosts, folds repeats into medians and classifies each
// change by the metric's direction (Metrics' HigherIsBetter).
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
	for _, ga := range Aggregate(a.Samples) {
		thr, explicit := threshold(ga.Key)
		if skipByDefault[ga.Metric] && !explicit {
			seen[ga.Key] = true
			continue
		}
		m, _ := MetricByName(ga.Metric)
		d := Delta{Key: ga.Key, Unit: ga.Unit, A: ga.Median, NA: ga.N, Threshold: thr, HigherIsBetter: m.HigherIsBetter}
		gb, ok := bAggs[ga.Key]
		seen[ga.Key] = true
		switch {
		case !ok:
			d.Status = DeltaMissing
		case ga.Median == 0:
			d.B, d.NB = gb.Median, gb.N
			d.Status = DeltaNoBase
			if gb.Median == 0 {
				d.Status = DeltaSame
			}
		default:
			d.B, d.NB = gb.Median, gb.N
			d.Change = (gb.Median - ga.Median) / math.Abs(ga.Median) * 100
			worse := d.Change
			if m.HigherIsBetter {
				worse = -d.Change
			}
			switch {
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
		if skipByDefault[gb.Metric] && !explicit {
			continue
		}
		m, _ := MetricByName(gb.Metric)
		c.Deltas = append(c.Deltas, Delta{Key: gb.Key, Unit: gb.Unit, B: gb.Median, NB: gb.N, Threshold: thr,
			HigherIsBetter: m.HigherIsBetter, Status: DeltaNew})
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
		}
	}
	return c
}

// WriteText prints the comparison as a table, one line per measurement, and
// a closing line with the counts.
func (c *Comparison) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "A: %s (%s)\nB: %s (%s)\n", refName(c.A), c.A.Status, refName(c.B), c.B.Status)
	if c.A.Lab != c.B.Lab {
		fmt.Fprintf(w, "note: the runs are of different labs (%q and %q); only same-named workloads match\n", c.A.Lab, c.B.Lab)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKLOAD\tMETRIC\tSIZE\tA\tB\tCHANGE\tLIMIT\tRESULT")
	for _, d := range c.Deltas {
		size := ""
		if d.Size > 0 {
			size = HumanSize(d.Size)
		}
		wl := d.Workload
		if d.Hosts != "" {
			wl += " [" + d.Hosts + "]"
		}
		av, bv, change := "–", "–", "–"
		if d.Status != DeltaNew {
			av = FormatValue(d.A) + " " + d.Unit
		}
		if d.Status != DeltaMissing {
			bv = FormatValue(d.B) + " " + d.Unit
		}
		if d.Status != DeltaNew && d.Status != DeltaMissing && d.Status != DeltaNoBase {
			change = fmt.Sprintf("%+.1f%%", d.Change)
		}
		dir := "higher is better"
		if !d.HigherIsBetter {
			dir = "lower is better"
		}
		limit := strconv.FormatFloat(d.Threshold, 'f', -1, 64) + "%"
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", wl, d.Metric, size, av, bv, change, limit, resultWord(d.Status, dir))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	verdict := "PASS"
	if c.Failed() {
		verdict = "FAIL"
	}
	_, err := fmt.Fprintf(w, "\n%s: %d regressed, %d missing, %d improved, %d within threshold, %d new\n",
		verdict, c.Regressed, c.Missing, c.Improved, c.Same, c.New)
	return err
}

// WriteMarkdown prints the comparison as a Markdown table (for a CI job's
// summary page or a pull request comment): regressions first.
func (c *Comparison) WriteMarkdown(w io.Writer) error {
	verdict := "PASS"
	if c.Failed() {
		verdict = "**FAIL**"
	}
	fmt.Fprintf(w, "## rlab compare: %s\n\nA `%s` (%s) → B `%s` (%s): %d regressed, %d missing, %d improved, %d within threshold, %d new.\n\n",
		verdict, mdCode(refName(c.A)), c.A.Status, mdCode(refName(c.B)), c.B.Status, c.Regressed, c.Missing, c.Improved, c.Same, c.New)
	fmt.Fprintf(w, "| workload | metric | size | A | B | change | limit | result |\n|---|---|---:|---:|---:|---:|---:|---|\n")
	order := []string{DeltaRegressed, DeltaMissing, DeltaBetter, DeltaNew, DeltaSame, DeltaNoBase}
	for _, st := range order {
		for _, d := range c.Deltas {
			if d.Status != st {
				continue
			}
			size, av, bv, change := "", "–", "–", "–"
			if d.Size > 0 {
				size = HumanSize(d.Size)
			}
			if d.Status != DeltaNew {
				av = FormatValue(d.A) + " " + d.Unit
			}
			if d.Status != DeltaMissing {
				bv = FormatValue(d.B) + " " + d.Unit
			}
			if d.Status != DeltaNew && d.Status != DeltaMissing && d.Status != DeltaNoBase {
				change = fmt.Sprintf("%+.1f%%", d.Change)
			}
			res := resultWord(d.Status, "higher is better")
			if !d.HigherIsBetter {
				res = resultWord(d.Status, "lower is better")
			}
			if d.Status == DeltaRegressed || d.Status == DeltaMissing {
				res = "**" + res + "**"
			}
			if _, err := fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %g%% | %s |\n", mdCell(d.Workload), d.Metric, size, av, bv, change, d.Threshold, res); err != nil {
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
	}
	return "ok"
}

func refName(r RunRef) string {
	if r.Dir != "" {
		return r.Dir
	}
	return r.Lab + "/" + r.ID
}

// JUnit renders the comparison as JUnit XML: one test case per compared
// measurement, failed when it regressed or went missing.
func (c *Comparison) JUnit() ([]byte, error) {
	suite := JUnitSuite{Name: "rlab compare"}
	suite.Properties = []JUnitProperty{{"a", refName(c.A)}, {"b", refName(c.B)}}
	for _, d := range c.Deltas {
		name := d.Metric
		if d.Size > 0 {
			name += " [size " + HumanSize(d.Size) + "]"
		}
		class := "rlab.compare." + d.Workload
		if d.Hosts != "" {
			class += "." + strings.ReplaceAll(d.Hosts, ",", "-")
		}
		tc := JUnitCase{Classname: class, Name: name}
		switch d.Status {
		case DeltaRegressed:
			msg := fmt.Sprintf("%s regressed %+.1f%% (limit %g%%): %s → %s %s", d.Metric, d.Change, d.Threshold,
				FormatValue(d.A), FormatValue(d.B), d.Unit)
			tc.Failure = &JUnitProblem{Message: msg, Type: "regression", Text: msg}
		case DeltaMissing:
			msg := fmt.Sprintf("%s is in A (%s %s) but missing from B", d.Metric, FormatValue(d.A), d.Unit)
			tc.Failure = &JUnitProblem{Message: msg, Type: "missing", Text: msg}
		default:
			tc.SystemOut = fmt.Sprintf("A %s B %s %s change %+.1f%% (%s)", FormatValue(d.A), FormatValue(d.B), d.Unit, d.Change, d.Status)
		}
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
