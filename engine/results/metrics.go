package results

import "github.com/rlab-dev/rlab/agent/tooldesc"

// Metric describes one kind of sample: its name in results.json, its unit,
// the attribute an `expect` condition reads it as (result.<Attr>), and which
// direction is better (for `rlab compare`). The names and units come from the
// tool descriptor (agent/tooldesc), the one place they are defined.
type Metric struct {
	Name           string // Sample.Metric
	Unit           string // Sample.Unit
	Attr           string // result.<Attr> in expect conditions
	HigherIsBetter bool
	Doc            string
}

// Metrics lists every metric rlab records, as the descriptor had them when
// the program started (a test may register more; MetricByName sees them).
var Metrics = metricsFromDescriptor()

func metricsFromDescriptor() []Metric {
	var out []Metric
	for _, m := range tooldesc.Metrics() {
		out = append(out, fromDescriptor(m))
	}
	return out
}

func fromDescriptor(m tooldesc.Metric) Metric {
	attr := m.Name
	if len(m.Aliases) > 0 {
		attr = m.Aliases[0].Name
	}
	return Metric{Name: m.Name, Unit: m.Unit, Attr: attr, HigherIsBetter: m.HigherIsBetter, Doc: m.Doc}
}

// MetricByName returns the metric named n.
func MetricByName(n string) (Metric, bool) {
	m, ok := tooldesc.MetricByName(n)
	if !ok {
		return Metric{}, false
	}
	return fromDescriptor(m), true
}

// MetricByAttr returns the metric an expect attribute refers to.
func MetricByAttr(a string) (Metric, bool) {
	for _, m := range tooldesc.Metrics() {
		if r := fromDescriptor(m); r.Attr == a {
			return r, true
		}
	}
	return Metric{}, false
}

// ToolMetrics returns the metric names a tool produces, for checking expect
// conditions at load time. An unknown tool records what every workload does.
func ToolMetrics(tool string) []string {
	if ms := tooldesc.MetricsOf(tool); ms != nil {
		return ms
	}
	return append([]string(nil), tooldesc.Common...)
}
