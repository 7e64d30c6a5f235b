package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/rlab-dev/rlab/engine/report"
	"github.com/rlab-dev/rlab/engine/results"
	enginerun "github.com/rlab-dev/rlab/engine/run"
	"github.com/rlab-dev/rlab/kinds"
)

// awkward are measured values that no unit rounds nicely: Soft-RoCE rates
// in Gb/s and Mpps, latencies in usec, and values of 4 significant digits
// or fewer whose binary float is below their decimal (0.413, 0.42: the
// first metric of each tool and perftest's bw_avg get them).
var awkward = []float64{0.413, 0.42, 0.024956123, 0.00076123456, 658.41234, 3817.4321, 14.277777, 4593.55, 1.0485}

// unitsRun writes a run of one workload of tool (two sizes when it has
// sizes, three repeats, every metric it records) beside a tcp baseline.
func unitsRun(t *testing.T, tool kinds.Tool) (string, *results.Run) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "units", "2026-11-27T050000Z")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 11, 27, 5, 0, 0, 0, time.UTC)
	r := &results.Run{Schema: results.SchemaVersion, Lab: "units", ID: filepath.Base(dir), Started: start, Finished: start.Add(time.Minute), Status: results.RunOK,
		Workloads: []results.Workload{{Name: "w", Tool: tool.Name, Status: results.StatusOK, Hosts: []string{"server", "client"}}}}
	sizes := []int64{0}
	if tool.Sizes {
		sizes = []int64{4096, 65536}
	}
	add := func(wl, tool, metric string, i int) {
		m, _ := kinds.MetricByName(metric)
		for si, size := range sizes {
			for rep, f := range []float64{0.99, 1, 1.013} {
				v := awkward[i%len(awkward)] * (1 + 0.7777*float64(si)) * f
				if metric == "exit_code" {
					v = 0
				}
				r.Samples = append(r.Samples, results.Sample{Metric: metric, Value: v, Unit: m.Unit,
					Meta: results.Meta{Workload: wl, Tool: tool, Size: size, Repeat: rep, Hosts: []string{"server", "client"}}})
			}
		}
	}
	for i, m := range kinds.MetricsOf(tool.Name) {
		add("w", tool.Name, m, i)
	}
	if tool.Name != "tcp" {
		r.Workloads = append(r.Workloads, results.Workload{Name: "base", Tool: "tcp", Status: results.StatusOK, Hosts: []string{"server", "client"}})
		sizes = []int64{0}
		add("base", "tcp", "tcp_bw", 5)
	}
	if err := results.WriteRun(dir, r); err != nil {
		t.Fatal(err)
	}
	read, err := results.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	return dir, read
}

// shown is one headline figure as the views must print it: metric at a
// size, its median over repeats cut to 4 digits, with its recorded unit.
type shown struct {
	metric, unit, printed string
	size                  int64
	count                 bool
}

// headlineShown lists what tool's headline prints of r: each figure at
// the sizes it is taken at.
func headlineShown(tool string, r *results.Run) []shown {
	aggs := map[string][]results.Agg{}
	for _, a := range results.Aggregate(results.Measures(r.Samples)) {
		if a.Workload == "w" {
			aggs[a.Metric] = append(aggs[a.Metric], a)
		}
	}
	figs := kinds.HeadlineOf(tool)
	has := false
	for _, f := range figs {
		has = has || len(aggs[f.Metric]) > 0
	}
	if !has {
		figs = kinds.CommonHeadline
	}
	var out []shown
	var walk func(fs []kinds.Figure, at *kinds.SizeChoice)
	walk = func(fs []kinds.Figure, at *kinds.SizeChoice) {
		for _, f := range fs {
			as := aggs[f.Metric]
			if len(as) == 0 {
				continue
			}
			choice := f.At
			if at != nil {
				choice = *at
			}
			pick := []results.Agg{as[0]}
			switch choice {
			case kinds.Largest:
				pick = as[len(as)-1:]
			case kinds.EverySize:
				pick = as
			}
			for _, a := range pick {
				out = append(out, shown{f.Metric, a.Unit, results.FormatValue(a.Median), a.Size, f.Count})
			}
			walk(f.With, &choice)
			walk(f.Then, nil)
		}
	}
	walk(figs, nil)
	return out
}

// holds evaluates an expect condition on r's result object of workload
// "w" at size, as engine/run does.
func holds(t *testing.T, tool string, r *results.Run, size int64, cond string) bool {
	t.Helper()
	expr, diags := hclsyntax.ParseExpression([]byte(cond), "expect.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatalf("%s: %s", cond, diags)
	}
	var ss []results.Sample
	for _, s := range r.Samples {
		if s.Meta.Workload == "w" {
			ss = append(ss, s)
		}
	}
	obj := enginerun.ResultObject(tool, ss, size)
	v, diags := expr.Value(&hcl.EvalContext{Variables: map[string]cty.Value{"result": cty.ObjectVal(obj)}})
	if diags.HasErrors() {
		t.Fatalf("%s: %s", cond, diags)
	}
	return v.True()
}

// TestEveryViewOneUnit (issue 25): for every family's headline, each view
// (the run's table, rlab show, summary.md, report.html's workload table,
// tables and charts, compare's text, --markdown and --junit) prints the
// figure as "<number> <unit>" in the unit results.json and expect use, and
// the number pasted into `result.<metric> >= <number>` holds on the same
// results while `> <number> × 1.01` does not: same unit, same value up to
// the cut to 4 digits.
func TestEveryViewOneUnit(t *testing.T) {
	for _, tool := range kinds.All() {
		t.Run(tool.Name, func(t *testing.T) {
			dir, r := unitsRun(t, tool)
			var head bytes.Buffer
			if !printHeadline(&head, dir) {
				t.Fatal("no headline")
			}
			summary := string(results.Summary(r, dir))
			_, show, _ := execute(t, newShowCmd(), dir)
			_, cmpText, _ := execute(t, newCompareCmd(), dir, dir)
			_, cmpMD, _ := execute(t, newCompareCmd(), "--markdown", dir, dir)
			junit := filepath.Join(t.TempDir(), "c.xml")
			execute(t, newCompareCmd(), "--junit", junit, dir, dir)
			junitText, err := os.ReadFile(junit)
			if err != nil {
				t.Fatal(err)
			}
			d, err := report.Build(dir, report.Options{})
			if err != nil {
				t.Fatal(err)
			}
			rw := d.Workloads[0]
			var charts []string
			for _, c := range rw.Charts {
				for _, s := range c.Series {
					for _, p := range s.Dots {
						charts = append(charts, p.Title)
					}
				}
				for _, b := range c.Bars {
					charts = append(charts, b.Title)
				}
			}
			figs := headlineShown(tool.Name, r)
			if len(figs) == 0 {
				t.Fatal("the headline shows nothing")
			}
			for _, f := range figs {
				word := f.printed + " " + f.unit
				if f.count {
					word = f.printed
				}
				views := map[string]string{
					"the run's table":         head.String(),
					"summary.md":              summary,
					"rlab show":               show,
					"report's workload table": rw.Result,
				}
				if !kinds.IsCommon(f.metric) { // compared by default
					views["compare"] = cmpText
					views["compare --markdown"] = cmpMD
					views["compare --junit"] = strings.ReplaceAll(string(junitText), "B "+f.printed+" ", "B "+f.printed+" "+f.unit+" ")
				}
				for view, text := range views {
					if !strings.Contains(text, word) {
						t.Errorf("%s: %s at %d: no %q in:\n%s", view, f.metric, f.size, word, text)
					}
				}
				// summary.md's and the report's tables: the unit in the
				// header, the number in the cell.
				if !strings.Contains(summary, f.metric+" ("+f.unit+")") || !strings.Contains(summary, "| "+f.printed+" (") && !strings.Contains(summary, "| "+f.printed+" |") {
					t.Errorf("summary.md's table: no column %s (%s) with %s", f.metric, f.unit, f.printed)
				}
				col := -1
				for i, c := range rw.Table.Columns {
					if strings.HasPrefix(c, f.metric+" [") {
						col = i
						if !strings.Contains(c, "["+f.unit) {
							t.Errorf("report table: column %q, want unit %s", c, f.unit)
						}
					}
				}
				if col < 0 {
					t.Errorf("report table: no column of %s in %v", f.metric, rw.Table.Columns)
				}
				// The charts beneath agree with the table.
				inChart := false
				for _, c := range tool.View.Charts {
					for _, s := range c.Series {
						inChart = inChart || s.Metric == f.metric
					}
				}
				if inChart && f.size > 0 {
					found := false
					for _, c := range charts {
						found = found || strings.HasSuffix(c, ": "+f.printed+" "+f.unit) || strings.Contains(c, ": "+f.printed+" "+f.unit+" ")
					}
					if !found {
						t.Errorf("report charts: no %s %s at %d in %q", f.printed, f.unit, f.size, charts)
					}
				}
				// The number means what it said.
				p, err := strconv.ParseFloat(f.printed, 64)
				if err != nil {
					t.Fatal(err)
				}
				if c := fmt.Sprintf("result.%s >= %s", f.metric, f.printed); !holds(t, tool.Name, r, f.size, c) {
					t.Errorf("%s at %d: %s does not hold on the results it was printed from", f.metric, f.size, c)
				}
				if c := fmt.Sprintf("result.%s > %s", f.metric, strconv.FormatFloat(p*1.01, 'g', -1, 64)); p != 0 && holds(t, tool.Name, r, f.size, c) {
					t.Errorf("%s at %d: %s holds: the printed number is not the value", f.metric, f.size, c)
				}
			}
		})
	}
}
