// Package exec is the exec tool family: one command (an argv, never through
// a shell) on one host; its exit code and output are kept, not parsed. It
// holds its descriptor (Kind.Desc), its op (Kind.NewOp) and its metric
// blocks' decoder (Kind.DecodeWorkload), whose numbers the op reads from
// the command's output.
//
// It imports kinds and steps; kinds/builtin registers it.
package exec

import (
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/rlab-dev/rlab/kinds"
	"github.com/rlab-dev/rlab/kinds/internal/metricblock"
	"github.com/rlab-dev/rlab/kinds/toolopts"
	"github.com/rlab-dev/rlab/steps"
)

// Flavor is the one flavor of exec's tools (kinds.Flavor).
const Flavor kinds.Flavor = "exec"

// Kind is the exec family; kinds/builtin registers it.
type Kind struct{}

// NewOp is the op of one exec workload.
func (Kind) NewOp(w *steps.Workload) (steps.Op, error) { return newOp(w) }

// Desc is exec's descriptor: it records only the common metrics.
func (Kind) Desc() kinds.Desc {
	return kinds.Desc{Name: "exec",
		Tools: []kinds.Tool{{Name: "exec", Flavor: Flavor, OneHost: true, TransportWhy: "exec runs a command as given", Chart: "exec", View: kinds.View{Output: true, Declared: true},
			Pace: kinds.Pace{Start: time.Second, Unknown: "the command's own time, which the lab does not say"}}}}
}

// Options are exec's own option, command (the argv it runs, required),
// then transport and args, which exec does not let a lab set: they say so
// and why (toolopts.Standard); engine/lab decodes them (toolopts.Taker).
func (Kind) Options(t kinds.Tool) []toolopts.Option {
	return append([]toolopts.Option{command}, toolopts.Standard(t)...)
}

// command is the argv exec runs, never through a shell.
var command = toolopts.Option{Name: "command",
	Decode: func(in toolopts.In, a *hcl.Attribute) {
		cmd, ok := in.Eval.StrList(a)
		if !ok {
			return
		}
		if len(cmd) == 0 || cmd[0] == "" {
			in.Eval.Errorf(a.Expr.Range().Ptr(), "Empty command", `command is an argv list whose first element is the program, like ["ip", "-br", "addr"].`)
		}
		in.W.Command = cmd
	},
	Absent: func(in toolopts.In) {
		in.Eval.Errorf(in.Def.Ptr(), "Missing command", `An exec workload needs command, an argv list like ["ip", "-br", "addr"].`)
	},
	Check: func(ev toolopts.Eval, a *hcl.Attribute) { ev.StrList(a) },
}

// Attributes names what exec decodes itself (engine/lab.BodyDecoder).
func (Kind) Attributes() []string { return []string{"metric"} }

// DecodeWorkload decodes exec's metric blocks, the numbers read from the
// command's output (kinds.OutputMetric); the engine decodes the rest.
func (Kind) DecodeWorkload(body hcl.Body, ctx *hcl.EvalContext, w *kinds.Workload, _ bool, _ hcl.Range) hcl.Diagnostics {
	content, diags := body.Content(&hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{metricblock.Schema}})
	ms, ds := metricblock.Decode(content.Blocks, ctx, false)
	w.Metrics = ms
	return append(diags, ds...)
}
