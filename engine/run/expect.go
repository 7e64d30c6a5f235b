package run

import (
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/engine/results"
	"github.com/rlab-dev/rlab/kinds"
	"github.com/rlab-dev/rlab/steps"
)

// ExpectResult is one `expect` block evaluated at one message size.
type ExpectResult struct {
	Workload  string `json:"workload"`
	Condition string `json:"condition"`
	Message   string `json:"message,omitempty"`
	Size      int64  `json:"size,omitempty"`
	Held      bool   `json:"held"`
	Skipped   bool   `json:"skipped,omitempty"` // the workload did not complete
	Error     string `json:"error,omitempty"`   // the condition could not be evaluated
	// Got is what the condition read: "bw_avg_gbps = 0.07, size = 65536".
	Got string `json:"got,omitempty"`
}

// ResultObject builds the `result` object an expect condition reads for one
// size: every metric of the tool (median over repeats, by its name and its
// older expect names), plus size and repeat (the number of repeats). Metrics
// the run did not produce are null. A kernel counter is the workload's
// delta summed over its hosts and devices (all sizes and repeats: they are
// read around the whole workload), null when no host could read it.
func ResultObject(tool string, samples []results.Sample, size int64, own ...kinds.OutputMetric) map[string]cty.Value {
	vals := map[string][]float64{}
	repeats := map[int]bool{}
	counters := map[string]float64{}
	for _, s := range samples {
		if results.IsCounter(s) {
			counters[s.Metric] += s.Value
			continue
		}
		if s.Meta.Size != size {
			continue
		}
		vals[s.Metric] = append(vals[s.Metric], s.Value)
		repeats[s.Meta.Repeat] = true
	}
	obj := map[string]cty.Value{
		"size":   cty.NumberIntVal(size),
		"repeat": cty.NumberIntVal(int64(len(repeats))),
	}
	for _, m := range own { // the workload's metric blocks (program, exec)
		if v := vals[m.Name]; len(v) > 0 {
			obj[m.Name] = cty.NumberFloatVal(results.Median(v))
		} else {
			obj[m.Name] = cty.NullVal(cty.Number)
		}
	}
	for _, name := range results.ToolMetrics(tool) {
		m, ok := results.MetricByName(name)
		if !ok {
			continue
		}
		if _, isCounter := results.CounterByName(name); isCounter {
			if v, read := counters[name]; read {
				obj[name] = cty.NumberFloatVal(v)
			} else {
				obj[name] = cty.NullVal(cty.Number)
			}
			continue
		}
		for _, a := range m.ExpectNames() { // its name, then its older names
			if v := vals[name]; len(v) > 0 {
				obj[a.Name] = cty.NumberFloatVal(results.Median(v) * a.Scale)
			} else {
				obj[a.Name] = cty.NullVal(cty.Number)
			}
		}
	}
	return obj
}

// sizesOf returns the distinct sizes of samples, in order of appearance.
func sizesOf(samples []results.Sample) []int64 {
	var out []int64
	seen := map[int64]bool{}
	for _, s := range samples {
		if results.IsCounter(s) {
			continue // read around the whole workload: no size of their own
		}
		if !seen[s.Meta.Size] {
			seen[s.Meta.Size] = true
			out = append(out, s.Meta.Size)
		}
	}
	return out
}

type evaler interface {
	Eval(result map[string]cty.Value) (bool, hcl.Diagnostics)
}

// evalOne evaluates an expect against one result object.
func evalOne(e *lab.Expect, obj map[string]cty.Value) (bool, hcl.Diagnostics) {
	if ev, ok := any(e).(evaler); ok {
		return ev.Eval(obj)
	}
	v, diags := e.Condition.Value(&hcl.EvalContext{Variables: map[string]cty.Value{"result": cty.ObjectVal(obj)}})
	if diags.HasErrors() {
		return false, diags
	}
	if v.IsNull() || !v.IsKnown() || v.Type() != cty.Bool {
		return false, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Condition is not a bool", Detail: fmt.Sprintf("the condition gave %s", v.GoString())}}
	}
	return v.True(), nil
}

func (r *runner) conditionText(e *lab.Expect) string {
	rng := e.Condition.Range()
	src := r.lab.Files[rng.Filename]
	if rng.End.Byte <= len(src) && rng.Start.Byte < rng.End.Byte {
		return strings.TrimSpace(string(src[rng.Start.Byte:rng.End.Byte]))
	}
	return rng.String()
}

// expectEvalTime bounds the evaluation of all the lab's expect conditions
// at a run's end, the command's evaluation guard having ended with the
// load (SECURITY 148): as long as the guard gives the load itself.
const expectEvalTime = 60 * time.Second

func (r *runner) evalExpects() []ExpectResult {
	r.lab.LimitEvalTime(expectEvalTime)
	var out []ExpectResult
	for _, n := range r.workloads {
		o := n.outcome()
		for _, e := range n.Workload.Expects {
			base := ExpectResult{Workload: n.Workload.Name, Condition: r.conditionText(e), Message: e.Message}
			if o.Status != steps.StatusOK {
				base.Skipped = true
				base.Error = fmt.Sprintf("workload %s", o.Status)
				out = append(out, base)
				continue
			}
			for _, size := range sizesOf(o.Samples) {
				er := base
				er.Size = size
				obj := ResultObject(n.Workload.Tool, o.Samples, size, n.Workload.Metrics...)
				held, diags := evalOne(e, obj)
				er.Got = gotText(e, obj)
				er.Held = held && !diags.HasErrors()
				if diags.HasErrors() {
					er.Error = diags.Error()
				}
				out = append(out, er)
			}
		}
	}
	return out
}

// gotText lists the result attributes a condition reads with their values,
// in the order it reads them.
func gotText(e *lab.Expect, obj map[string]cty.Value) string {
	var parts []string
	seen := map[string]bool{}
	for _, tr := range e.Condition.Variables() {
		if tr.RootName() != "result" || len(tr) < 2 {
			continue
		}
		a, ok := tr[1].(hcl.TraverseAttr)
		if !ok || seen[a.Name] {
			continue
		}
		seen[a.Name] = true
		v, ok := obj[a.Name]
		switch {
		case !ok:
			continue
		case v.IsNull():
			parts = append(parts, a.Name+" = null (not measured)")
		case v.Type() == cty.Number:
			f, _ := v.AsBigFloat().Float64()
			parts = append(parts, a.Name+" = "+results.FormatValue(f))
		}
	}
	return strings.Join(parts, ", ")
}
