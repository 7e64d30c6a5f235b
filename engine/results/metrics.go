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

// Metrics lists every metric rlab records.
var Metrics = metricsFromDescriptor()

func metricsFromDescriptor() []Metric {
	var out []Metric
	for _, m := range tooldesc.Metrics() {
		attr := m.Name
		if len(m.Aliases) > 0 {
			attr = m.Aliases[0].Name
		}
		out = append(out, Metric{Name: m.Name, Unit: m.Unit, Attr: attr, HigherIsBetter: m.HigherIsBetter, Doc: m.Doc})
	}
	return out
}

// MetricByName returns the metric named n.
func MetricByName(n string) (Metric, bool) {
	for _, m := range Metrics {
		if m.Name == n {
			return m, true
		}
	}
	return Metric{}, false
}

// MetricByAttr returns the metric an expect attribute refers to.
func MetricByAttr(a string) (Metric, bool) {
	for _, m := range Metrics {
		if m.Attr == a {
			return m, true
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
