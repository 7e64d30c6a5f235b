// Package madeup is a made-up tool family that exists to prove the claim
// kinds' doc makes: a new family is its package and one line that
// registers it. rlab ships without it; a test binary registers it with one
// line beside kinds/builtin's,
//
//	kinds.Register(madeup.Kind{})
//
// and every view then shows it (validate, plan, run, the run's headline,
// `rlab runs`, summary.md with RDMA vs TCP and alone vs together, the
// report's charts, RDMA vs TCP and loss sweep, `rlab compare`), because each
// reads what the family declares here and spells none of its names.
// madeup_test.go checks that nothing outside this package names it but
// those one-line registrations.
//
// Its tools: made_stream, an RDMA tool between two devices whose client
// prints "made SIZE GBPS RTT" (echo), and made_pipe, its baseline between
// two hosts (as tcp is RDMA's), whose client prints "pipe SIZE GBPS": a
// deterministic output that in-process agents and a real one run alike
// (no RDMA device needed for made_pipe), read by Parse. No package imports it, only
// tests do (a rule of internal/archtest: rlab ships without it); it imports
// kinds, kinds/toolopts, steps and engine/toolout, as a real family does.
package madeup

import (
	"fmt"
	"strings"
	"time"

	"github.com/rlab-dev/rlab/engine/toolout"
	"github.com/rlab-dev/rlab/kinds"
	"github.com/rlab-dev/rlab/kinds/toolopts"
)

// The made-up family's names (its tools, their flavors), for the tests that
// look for them in a view.
const (
	Flavor     kinds.Flavor = "made_stream"
	Tool                    = "made_stream"
	PipeFlavor kinds.Flavor = "made_pipe"
	PipeTool                = "made_pipe"
	// Gbps is made_stream's throughput (the one RDMA vs TCP, the loss
	// sweep and alone vs together set beside a baseline's), RTT its round
	// trip; PipeGbps is made_pipe's throughput, on the baseline's side.
	Gbps     = "made_gbps"
	RTT      = "made_rtt"
	PipeGbps = "made_pipe_gbps"
	// ChartTitle is the title of made_stream's chart in the report.
	ChartTitle = "Made-up throughput and round trip"
)

// Kind is the made-up family: the one value a test registers.
type Kind struct{}

// Desc is the made-up family's descriptor, its View included: its part of
// every view, as data.
func (Kind) Desc() kinds.Desc {
	return kinds.Desc{Name: "madeup",
		Metrics: []kinds.Metric{
			{Name: Gbps, Unit: "Gb/s", HigherIsBetter: true, Doc: "made-up throughput"},
			{Name: RTT, Unit: "usec", Doc: "made-up round trip"},
			{Name: PipeGbps, Unit: "Gb/s", HigherIsBetter: true, Doc: "made-up baseline throughput"},
		},
		Tools: []kinds.Tool{{Name: Tool, Flavor: Flavor, RDMA: true, Data: kinds.DataClient,
			TransportWhy: "made_stream has no transports", Sizes: true,
			Pace:    kinds.Pace{Start: time.Second, Unknown: "made_stream is made up"},
			Metrics: []string{Gbps, RTT}, Chart: "made",
			View: kinds.View{
				Headline: []kinds.Figure{{Metric: Gbps, Label: "made", ShowSize: true, At: kinds.Largest, With: []kinds.Figure{{Metric: RTT}}}},
				Glance:   kinds.Figure{Metric: Gbps, At: kinds.Largest, Word: "made"},
				Charts: []kinds.Chart{{ID: "made", Title: ChartTitle, Type: kinds.Bars,
					Series: []kinds.Series{{Metric: Gbps, Name: "throughput"}, {Metric: RTT, Name: "rtt"}}}},
				Throughput: Gbps,
			}},
			{Name: PipeTool, Flavor: PipeFlavor, Data: kinds.DataClient,
				TransportWhy: "made_pipe has no transports", Sizes: true,
				Pace:    kinds.Pace{Start: time.Second, Unknown: "made_pipe is made up"},
				Metrics: []string{PipeGbps}, Chart: "made_pipe",
				View: kinds.View{
					Headline:   []kinds.Figure{{Metric: PipeGbps, Label: "pipe", ShowSize: true, At: kinds.Largest}},
					Glance:     kinds.Figure{Metric: PipeGbps, At: kinds.Largest, Word: "pipe"},
					Throughput: PipeGbps,
				}}},
	}
}

// Options: made_stream takes the shared options its descriptor's flags
// name (sizes), decoded by engine/lab.
func (Kind) Options(t kinds.Tool) []toolopts.Option { return toolopts.Standard(t) }

// Parse reads the clients' "made SIZE GBPS RTT" and "pipe SIZE GBPS"
// lines.
func (Kind) Parse(out []byte, _ toolout.Options) ([]toolout.Row, toolout.Info, error) {
	var rows []toolout.Row
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var size int64
		var gbps, rtt float64
		if _, err := fmt.Sscanf(line, "pipe %d %g", &size, &gbps); err == nil {
			rows = append(rows, toolout.Row{Size: size, Values: []toolout.Value{{Metric: PipeGbps, Value: gbps}}})
			continue
		}
		if _, err := fmt.Sscanf(line, "made %d %g %g", &size, &gbps, &rtt); err != nil {
			return nil, toolout.Info{}, fmt.Errorf("made-up output line %q: %w", line, err)
		}
		rows = append(rows, toolout.Row{Size: size, Values: []toolout.Value{{Metric: Gbps, Value: gbps}, {Metric: RTT, Value: rtt}}})
	}
	return rows, toolout.Info{Source: "text"}, nil
}
