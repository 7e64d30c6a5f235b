package results

// The link impairment a workload ran under: engine/run tags each of its
// samples (tagImpairs) with what was in force, as the agent confirmed it;
// summary.md and report.html say it beside the numbers.
const (
	// ImpairExtra is the Meta.Extra key of the impairments in force, in
	// tc's words with their netdev and host ("lossy: loss 1% delay 2ms on
	// eth1 of server"; several joined by "; ").
	ImpairExtra = "impair"
)

// The highest netem loss in force, in percent (the loss sweep's x axis), is
// Meta.ImpairLoss.

// Impairments is, per workload, the impairment in force while it ran, as
// its samples record it; workloads that ran unimpaired are absent.
func Impairments(samples []Sample) map[string]string {
	out := map[string]string{}
	for _, s := range samples {
		if v := s.Meta.Extra[ImpairExtra]; v != "" && out[s.Meta.Workload] == "" {
			out[s.Meta.Workload] = v
		}
	}
	return out
}
