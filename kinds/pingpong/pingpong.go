// Package pingpong is the pingpong tool family: ibv_{rc,uc,ud,srq}_pingpong
// from rdma-core's ibverbs-utils, between two RDMA devices. It holds their
// descriptors (Kind.Desc), their op (Kind.NewOp) and their output parser
// (Kind.Parse: the summary lines).
//
// It imports kinds, steps and engine/toolout; kinds/builtin registers it.
package pingpong

import (
	"time"

	"github.com/rlab-dev/rlab/engine/toolout"
	"github.com/rlab-dev/rlab/kinds"
	"github.com/rlab-dev/rlab/kinds/toolopts"
	"github.com/rlab-dev/rlab/steps"
)

// Flavor is the flavor of every pingpong tool (kinds.Flavor).
const Flavor kinds.Flavor = "pingpong"

// Kind is the pingpong family; kinds/builtin registers it.
type Kind struct{}

// NewOp is the op of one pingpong workload.
func (Kind) NewOp(w *steps.Workload) (steps.Op, error) { return newOp(w) }

// Parse reads one run's output.
func (Kind) Parse(stdout []byte, _ toolout.Options) ([]toolout.Row, toolout.Info, error) {
	return parse(stdout)
}

const hint = "ibv_*_pingpong's throughput for each message size."

// Desc is every pingpong tool. They fix their transport by name. XRC
// (ibv_xsrq_pingpong) is left out: rdma_rxe has no XRC, so it could never
// run on rxe.
func (Kind) Desc() kinds.Desc {
	d := kinds.Desc{Name: "pingpong", Metrics: []kinds.Metric{
		{Name: "pp_bw", Unit: "Mbit/s", HigherIsBetter: true, Doc: "pingpong throughput", Aliases: []kinds.Alias{{Name: "pp_mbps", Scale: 1}}},
		{Name: "pp_lat", Unit: "usec/iter", HigherIsBetter: false, Doc: "pingpong time per iteration", Aliases: []kinds.Alias{{Name: "pp_usec_per_iter", Scale: 1}}},
	}}
	pkg := kinds.Packages{Debian: "ibverbs-utils", RHEL: "libibverbs-utils", SUSE: "libibverbs-utils"}
	const why = "the pingpong tool fixes its transport by name (ibv_rc_pingpong, ibv_uc_pingpong, ibv_ud_pingpong)"
	for _, t := range []struct{ name, transport string }{{"rc", "RC"}, {"uc", "UC"}, {"ud", "UD"}, {"srq", "RC"}} {
		name := "ibv_" + t.name + "_pingpong"
		var max int64
		if t.transport == "UD" {
			max = 4096 // a UD message is one packet: the largest RoCE MTU
		}
		var qpt kinds.QPTimeout
		if t.transport == "RC" {
			// pp_connect_ctx sets .timeout = 14, .retry_cnt = 7 on the way
			// to RTS (rdma-core libibverbs/examples), with no option.
			qpt = kinds.QPTimeout{Default: 14, Fixed: name + " sets QP timeout 14 itself and has no option for it; perftest's ib_send_lat takes -u"}
		}
		d.Tools = append(d.Tools, kinds.Tool{Name: name, Flavor: Flavor, RDMA: true, Data: kinds.DataBoth, FixedTransport: t.transport, TransportWhy: why,
			NoIWARP: "the pingpong tools connect their QPs themselves (LID, QPN and GID swapped over TCP, then modify to RTR), never through the RDMA CM, which iWARP requires",
			Sizes:   true, MaxSize: max, Iterations: true, QPTimeout: qpt,
			// ibv_rc_pingpong's defaults: 1000 iterations of 4096 bytes;
			// under TCG a 300-iteration run took 4–9 s (BENCHMARKS.md).
			Pace:    kinds.Pace{Start: 6 * time.Second, PerIteration: time.Millisecond, Rate: 0.1e9 / 8, Iterations: 1000, Size: 4096},
			Metrics: []string{"pp_bw", "pp_lat"},
			Program: &kinds.Program{Name: name, Packages: pkg, Version: kinds.Version{RDMACore: true}},
			Chart:   "pingpong", Hint: hint, HeadlineSmallest: true,
			View: kinds.View{
				Headline: []kinds.Figure{{Metric: "pp_bw", ShowSize: true, With: []kinds.Figure{{Metric: "pp_lat"}}}},
				Glance:   kinds.Figure{Metric: "pp_bw", At: kinds.Largest},
				Charts: []kinds.Chart{{ID: "pp", Title: "Pingpong throughput vs message size",
					Series: []kinds.Series{{Metric: "pp_bw", Name: "throughput"}}, MinSizes: 2}},
			}})
	}
	return d
}

// Options are the options pingpong's tools take beyond the common ones, by
// their descriptor's flags (toolopts.Standard); engine/lab decodes a
// workload's through them (toolopts.Taker).
func (Kind) Options(t kinds.Tool) []toolopts.Option { return toolopts.Standard(t) }
