package steps

import (
	"errors"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/engine/results"
	"github.com/rlab-dev/rlab/kinds"
)

// BetterExtra (results.BetterExtra) is the sample metadata key that says which way a lab's own
// metric (a metric block) is better: "higher" or "lower", as its block
// says; rlab compare reads it where the descriptor knows no such metric.
const BetterExtra = results.BetterExtra

// OutputSamples reads a workload's metric blocks (kinds.OutputMetric) from
// a finished process's output, its stdout then its stderr: one sample per
// metric, in the metric's unit. A metric whose pattern matched no line is
// an error naming the pattern; the samples of the others are kept.
func OutputSamples(ms []kinds.OutputMetric, r *proto.ProcResult) ([]results.Sample, error) {
	out := []byte(r.Stdout + "\n" + r.Stderr)
	var ss []results.Sample
	var errs []error
	for _, m := range ms {
		v, _, err := kinds.ReadOutputMetric(m, out)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		s := results.Sample{Metric: m.Name, Value: v, Unit: m.UnitOf()}
		if m.Better != "" {
			s.Meta.Extra = map[string]string{BetterExtra: m.Better}
		}
		ss = append(ss, s)
	}
	return ss, errors.Join(errs...)
}
