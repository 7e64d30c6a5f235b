// Package rping is the rping tool family: rping from rdmacm-utils, an RDMA CM
// connection and ping-pongs of RDMA READ/WRITE between two RDMA devices. It
// holds its descriptor (Kind.Desc), its op (Kind.NewOp) and its output
// parser (Kind.Parse: the "ping data" lines, failures read from stderr).
//
// It imports kinds, steps and engine/toolout; kinds/builtin registers it.
package rping

import (
	"time"

	"github.com/rlab-dev/rlab/engine/toolout"
	"github.com/rlab-dev/rlab/kinds"
	"github.com/rlab-dev/rlab/kinds/toolopts"
	"github.com/rlab-dev/rlab/steps"
)

// Flavor is the one flavor of rping's tools (kinds.Flavor).
const Flavor kinds.Flavor = "rping"

// Kind is the rping family; kinds/builtin registers it.
type Kind struct{}

// NewOp is the op of one rping workload.
func (Kind) NewOp(w *steps.Workload) (steps.Op, error) { return newOp(w) }

// Parse reads one run's output; rping reports its failures on stderr.
func (Kind) Parse(stdout []byte, opts toolout.Options) ([]toolout.Row, toolout.Info, error) {
	return parse(stdout, opts.Stderr)
}

// ReadsStderr says Parse reads opts.Stderr itself (toolout.StderrReader).
func (Kind) ReadsStderr() bool { return true }

// Desc is rping's descriptor.
func (Kind) Desc() kinds.Desc {
	return kinds.Desc{Name: "rping",
		Metrics: []kinds.Metric{{Name: "rping_count", Unit: "count", HigherIsBetter: true, Doc: "rping ping-pongs completed"}},
		Tools: []kinds.Tool{{Name: "rping", Flavor: Flavor, RDMA: true, Data: kinds.DataBoth, FixedTransport: "RC", RDMACM: true,
			TransportWhy: "rping always uses an RC connection through the RDMA CM",
			Sizes:        true, Iterations: true,
			// rlab's default count (step.go); rping's default size is 64 bytes.
			Pace:         kinds.Pace{Start: 6 * time.Second, PerIteration: time.Millisecond, Rate: 0.1e9 / 8, Iterations: rpingDefaultCount, Size: 64},
			Metrics:      []string{"rping_count"},
			Program:      &kinds.Program{Name: "rping", Packages: kinds.Packages{Debian: "rdmacm-utils", RHEL: "librdmacm-utils", SUSE: "librdmacm-utils"}, Version: kinds.Version{RDMACore: true}},
			NeedsModules: []string{"rdma_cm"},
			// rping's options (a I P p C S s c v V d q) set no timeout:
			// the kernel's RDMA CM chooses the QP's.
			QPTimeout: kinds.QPTimeout{Fixed: "rping has no option for it: the kernel's RDMA CM sets its QP timeout"},
			Chart:     "rping",
			View: kinds.View{
				Headline: []kinds.Figure{{Metric: "rping_count", Count: true, Word: "ping-pongs"}},
				Glance:   kinds.Figure{Metric: "rping_count", At: kinds.Largest},
			}}},
	}
}

// Options are the options rping's tools take beyond the common ones, by
// their descriptor's flags (toolopts.Standard); engine/lab decodes a
// workload's through them (toolopts.Taker).
func (Kind) Options(t kinds.Tool) []toolopts.Option { return toolopts.Standard(t) }
