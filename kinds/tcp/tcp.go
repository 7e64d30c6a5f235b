// Package tcp is the tcp tool family: the agent's own TCP bulk transfer
// (tcp.serve, tcp.send, tcp.wait), the baseline to set RDMA numbers beside.
// It is the smallest whole family and the one to copy when adding a tool:
//
//   - Kind.Desc is the descriptor: its tool (options it takes, chart) and the
//     metrics it records, with units; every layer reads these (the lab
//     checker, the plan, results, the report).
//   - Kind.NewOp is its op (steps.OpMaker): what runs on the hosts.
//   - a family whose output rlab parses also has Kind.Parse
//     (toolout.Parser); tcp has none, the agent measures it.
//   - one line in kinds/builtin registers Kind{}.
//
// It imports kinds and steps; kinds/builtin registers it.
package tcp

import (
	"time"

	"github.com/rlab-dev/rlab/kinds"
	"github.com/rlab-dev/rlab/kinds/toolopts"
	"github.com/rlab-dev/rlab/steps"
)

// Flavor is the one flavor of tcp's tools (kinds.Flavor).
const Flavor kinds.Flavor = "tcp"

// Kind is the tcp family; kinds/builtin registers it.
type Kind struct{}

// NewOp is the op of one tcp workload.
func (Kind) NewOp(w *steps.Workload) (steps.Op, error) { return newOp(w) }

// mibPerGb converts Gb/s into MiB/s.
const mibPerGb = 1e9 / 8 / (1 << 20)

// Desc is tcp's descriptor. Throughput is one quantity, recorded in Gb/s;
// MiB/s is a display choice (the old expect name tcp_mibps reads it so).
func (Kind) Desc() kinds.Desc {
	return kinds.Desc{Name: "tcp",
		Metrics: []kinds.Metric{{Name: "tcp_bw", Unit: "Gb/s", HigherIsBetter: true, Doc: "TCP bulk throughput", Aliases: []kinds.Alias{{Name: "tcp_gbps", Scale: 1}, {Name: "tcp_mibps", Scale: mibPerGb}}}},
		Retired: map[string]string{"tcp_bw_mib": "tcp_bw"}, // TCP throughput in MiB/s, until November 2026
		Tools: []kinds.Tool{{Name: "tcp", Flavor: Flavor, Data: kinds.DataClient, TransportWhy: "the tcp workload is a TCP stream", Duration: true, Bytes: true,
			// A 3 s run took 3.2–4.1 s under TCG (BENCHMARKS.md), which
			// moved 0.4 Gb/s (testdata's nightly run): 0.25 Gb/s to be safe.
			Pace:    kinds.Pace{Start: time.Second, Rate: 0.25e9 / 8},
			Metrics: []string{"tcp_bw"}, Chart: "tcp",
			View: kinds.View{
				Headline:   []kinds.Figure{{Metric: "tcp_bw"}},
				Glance:     kinds.Figure{Metric: "tcp_bw", At: kinds.Largest},
				Throughput: "tcp_bw",
			}}},
	}
}

// Options are the options tcp's tools take beyond the common ones, by
// their descriptor's flags (toolopts.Standard); engine/lab decodes a
// workload's through them (toolopts.Taker).
func (Kind) Options(t kinds.Tool) []toolopts.Option { return toolopts.Standard(t) }
