package results

import "github.com/rlab-dev/rlab/kinds"

// Metric describes one kind of sample: its name, which results.json,
// summary.md, the report, `rlab compare`, --metric-threshold and an expect
// condition (result.<Name>) all use; its unit; and which direction is better
// (for `rlab compare`). The names and units come from the families'
// descriptors (kinds.Metrics), the one place they are defined.
type Metric struct {
	Name           string // Sample.Metric
	Unit           string // Sample.Unit
	HigherIsBetter bool
	Doc            string
	// Aliases are older expect names of the metric, still read (deprecated).
	Aliases []kinds.Alias
}

// ExpectNames are the names an expect condition may read the metric by: its
// name, then its older names, each with the factor its value is read with.
func (m Metric) ExpectNames() []kinds.Alias {
	return append([]kinds.Alias{{Name: m.Name, Scale: 1}}, m.Aliases...)
}

// Metrics lists every metric rlab records, in report order: the registered
// families' (kinds.Metrics). A function, not a variable set at start-up:
// the families register after package initialisation (kinds/builtin).
func Metrics() []Metric {
	var out []Metric
	for _, m := range kinds.Metrics() {
		out = append(out, fromDescriptor(m))
	}
	return out
}

func fromDescriptor(m kinds.Metric) Metric {
	return Metric{Name: m.Name, Unit: m.Unit, HigherIsBetter: m.HigherIsBetter, Doc: m.Doc, Aliases: m.Aliases}
}

// MetricByName returns the metric named n: a tool's metric, or a kernel
// counter of the vocabulary (counters.go), lower is better.
func MetricByName(n string) (Metric, bool) {
	m, ok := kinds.MetricByName(n)
	if !ok {
		if c, ok := CounterByName(n); ok {
			return Metric{Name: c.Name, Unit: c.Unit, Doc: c.Doc + " (kernel counter, " + c.Devices + ")"}, true
		}
		return Metric{}, false
	}
	return fromDescriptor(m), true
}

// ResolveMetric returns the metric a name given by a person refers to: a
// metric name, or an older expect name of one (old is then true), so
// `--metric-threshold tcp_gbps=5%` means tcp_bw.
func ResolveMetric(n string) (m Metric, old bool, ok bool) {
	if m, ok := MetricByName(n); ok {
		return m, false, true
	}
	if dm, _, ok := kinds.MetricByAlias(n); ok {
		return fromDescriptor(dm), true, true
	}
	return Metric{}, false, false
}

// DropRetired removes the samples of metric names that are no longer
// metrics of their own (tcp_bw_mib: tcp_bw in MiB/s), which runs before
// November 2026 recorded, so one quantity is read and compared once.
func DropRetired(ss []Sample) []Sample {
	out := ss[:0:0]
	for _, s := range ss {
		if _, gone := kinds.Retired(s.Metric); !gone {
			out = append(out, s)
		}
	}
	return out
}

// ToolMetrics returns the metric names a tool produces, for checking expect
// conditions at load time: its own, the common ones, then the kernel
// counters read around its workloads (CounterNames). An unknown tool records
// what every workload does.
func ToolMetrics(tool string) []string {
	if ms := kinds.MetricsOf(tool); ms != nil {
		return append(ms, CounterNames(tool)...)
	}
	return append([]string(nil), kinds.Common...)
}
