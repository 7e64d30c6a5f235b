// Package toolopts holds the workload options some tool families take and
// others do not (transport, sizes, iterations, duration, qps, bytes, args),
// each with its rules, and the hook by which a family names the options its
// tools take. The engine (engine/lab) decodes only what every workload has
// (tool, server, client, host, timeout, repeat, expect, count, for_each);
// the rest of a workload block is the family's: engine/lab asks the tool's
// family for its Options (the Taker ability), decodes each through it, and
// tells a lab that sets an option its tool does not take which tools take
// it. A new option of one family is one Option value in that family's
// package (kinds/toolopts' own test registers a made-up family with one)
// and needs no change to the engine or here.
//
// It imports kinds and hcl; not steps, the engine or any family (it is
// shared code, not a family): internal/archtest checks it.
package toolopts

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/rlab-dev/rlab/kinds"
	"github.com/zclconf/go-cty/cty"
)

// DefaultTCPBytes is what a tcp workload sends when the lab gives neither
// bytes nor duration.
const DefaultTCPBytes = 1 << 30

// Eval evaluates an option's value as the engine evaluates every attribute
// of a lab: its references checked against the lab's declarations (with a
// "did you mean"), null and unknown values reported, sizes and durations
// read with their units. Each method reports what is wrong at the
// attribute (file:line:col) and returns false; Errorf adds a diagnostic of
// the family's own. engine/lab implements it.
type Eval interface {
	Value(a *hcl.Attribute) (cty.Value, bool)
	Str(a *hcl.Attribute) (string, bool)
	Integer(a *hcl.Attribute, lo, hi int64) (int64, bool)
	Size(a *hcl.Attribute) (int64, bool)
	SizeValue(v cty.Value, rng *hcl.Range, name string) (int64, bool)
	Duration(a *hcl.Attribute) (time.Duration, bool)
	StrList(a *hcl.Attribute) ([]string, bool)
	Errorf(rng *hcl.Range, summary, detail string, args ...any)
}

// In is what an option's rules see: the evaluator, the workload's tool,
// the workload being decoded (options earlier in the list already set),
// the tool's options the block gives (by name, for conflicts) and the
// block's definition range (for a missing option).
type In struct {
	Eval  Eval
	Tool  kinds.Tool
	W     *kinds.Workload
	Attrs hcl.Attributes
	Def   hcl.Range
}

// Option is one workload attribute a tool takes beyond the common ones.
type Option struct {
	Name string
	// Decode checks the attribute by the tool's rules and sets it in W.
	Decode func(in In, a *hcl.Attribute)
	// Absent, when set, runs when the block does not give the option (a
	// default, or a "Missing" diagnostic).
	Absent func(in In)
	// Check reports what is wrong with the value for any tool, when the
	// workload's tool is missing or unknown (an unknown tool does not hide
	// a bad size); nil: its references are checked only.
	Check func(ev Eval, a *hcl.Attribute)
}

// Taker is a family whose tools take options of their own (implemented by
// its registered kinds.Kind value): Options lists the ones tool takes, in
// the order they are decoded (transport before sizes: a UD message is one
// packet).
type Taker interface {
	Options(tool kinds.Tool) []Option
}

// Standard is the shared options a tool takes, chosen by its descriptor's
// flags (Tool.Sizes, Iterations, Duration, QPs, Bytes). transport and args
// are always in it: a tool whose transport is fixed, or that gets no flags,
// says why when a lab sets one.
func Standard(t kinds.Tool) []Option {
	out := []Option{Transport}
	for _, o := range []struct {
		on  bool
		opt Option
	}{{t.Sizes, Sizes}, {t.Iterations, Iterations}, {t.Duration, Duration}, {t.QPs, QPs}, {t.Bytes, Bytes}} {
		if o.on {
			out = append(out, o.opt)
		}
	}
	return append(out, Args)
}

// Transport is the RDMA transport (RC, UC, UD) of a tool that lets the lab
// choose it; the tool's first one when the lab does not.
var Transport = Option{Name: "transport",
	Decode: func(in In, a *hcl.Attribute) {
		s, ok := in.Eval.Str(a)
		if !ok {
			return
		}
		t := in.Tool
		switch {
		case t.Transports == nil:
			in.Eval.Errorf(a.Expr.Range().Ptr(), "Argument not valid for "+t.Name, "transport cannot be set: %s.", t.TransportWhy)
		case !slices.Contains(t.Transports, s):
			hint := ""
			if slices.Contains(t.Transports, strings.ToUpper(s)) {
				hint = fmt.Sprintf(" Write %q in capitals.", strings.ToUpper(s))
			} else if t.TransportWhy != "" {
				hint = " " + strings.ToUpper(t.TransportWhy[:1]) + t.TransportWhy[1:] + "."
			}
			in.Eval.Errorf(a.Expr.Range().Ptr(), "Unsupported transport", "%s supports transport %s; not %q.%s", t.Name, OrList(t.Transports), s, hint)
		default:
			in.W.Transport = s
		}
	},
	Absent: func(in In) {
		if in.Tool.Transports != nil {
			in.W.Transport = in.Tool.Transports[0]
		}
	},
	Check: func(ev Eval, a *hcl.Attribute) { ev.Value(a) },
}

// Sizes are the message sizes, each a run of the tool.
var Sizes = Option{Name: "sizes",
	Decode: func(in In, a *hcl.Attribute) {
		t := in.Tool
		if in.W.Transport == "UD" && t.MaxSize == 0 {
			t.MaxSize = 4096 // one UD message is one packet
		}
		in.W.Sizes = sizes(in.Eval, a, t)
	},
	Check: func(ev Eval, a *hcl.Attribute) { sizes(ev, a, kinds.Tool{}) },
}

// Iterations is how many messages a run sends.
var Iterations = Option{Name: "iterations",
	Decode: func(in In, a *hcl.Attribute) {
		if n, ok := in.Eval.Integer(a, 1, 1<<40); ok {
			in.W.Iterations = n
		}
	},
	Check: func(ev Eval, a *hcl.Attribute) { ev.Integer(a, 1, 1<<40) },
}

// Duration is how long a run lasts, instead of iterations or bytes.
var Duration = Option{Name: "duration",
	Decode: func(in In, a *hcl.Attribute) {
		d, ok := in.Eval.Duration(a)
		if !ok {
			return
		}
		in.W.Duration = d
		if in.Attrs["iterations"] != nil && in.Tool.Iterations {
			in.Eval.Errorf(a.NameRange.Ptr(), "Conflicting iterations and duration", "%s runs either a number of iterations or for a duration; keep one of them.", in.Tool.Name)
		}
	},
	Check: func(ev Eval, a *hcl.Attribute) { ev.Duration(a) },
}

// QPs is how many queue pairs a bandwidth tool opens.
var QPs = Option{Name: "qps",
	Decode: func(in In, a *hcl.Attribute) {
		if n, ok := in.Eval.Integer(a, 1, 16384); ok {
			in.W.QPs = int(n)
		}
	},
	Check: func(ev Eval, a *hcl.Attribute) { ev.Integer(a, 1, 16384) },
}

// Bytes is the amount a tcp workload sends (DefaultTCPBytes when the lab
// gives neither bytes nor duration).
var Bytes = Option{Name: "bytes",
	Decode: func(in In, a *hcl.Attribute) {
		n, ok := in.Eval.Size(a)
		if !ok {
			return
		}
		in.W.Bytes = n
		if in.Attrs["duration"] != nil {
			in.Eval.Errorf(a.NameRange.Ptr(), "Conflicting bytes and duration", "A tcp workload sends a number of bytes or for a duration; keep one of them.")
		}
	},
	Absent: func(in In) {
		if in.Attrs["duration"] == nil {
			in.W.Bytes = DefaultTCPBytes
		}
	},
	Check: func(ev Eval, a *hcl.Attribute) { ev.Size(a) },
}

// Args are extra flags appended to the tool's argv; a tool whose whole
// argv the lab writes (exec, program) says where it goes instead.
var Args = Option{Name: "args",
	Decode: func(in In, a *hcl.Attribute) {
		t := in.Tool
		if t.OneHost || t.HostOrPair {
			in.Eval.Errorf(a.NameRange.Ptr(), "Argument not valid for "+t.Name, "args adds flags to a workload tool; for %s put the whole argv in %s.", t.Name, map[bool]string{true: "command", false: "command, or server_command and client_command"}[t.OneHost])
		} else if args, ok := in.Eval.StrList(a); ok {
			in.W.Args = args
		}
	},
	Check: func(ev Eval, a *hcl.Attribute) { ev.StrList(a) },
}

// sizes reads a size or a list of sizes, each checked against the tool's
// fixed or largest size.
func sizes(ev Eval, a *hcl.Attribute, tool kinds.Tool) []int64 {
	v, ok := ev.Value(a)
	if !ok {
		return nil
	}
	var elems []cty.Value
	var rs []hcl.Range
	t := v.Type()
	if t.IsListType() || t.IsTupleType() || t.IsSetType() {
		elems = v.AsValueSlice()
		rs = ElemRanges(a.Expr, len(elems))
	} else {
		elems, rs = []cty.Value{v}, []hcl.Range{a.Expr.Range()}
	}
	if len(elems) == 0 {
		ev.Errorf(a.Expr.Range().Ptr(), "Invalid size", "sizes is empty; remove it to use the tool's default size, or list at least one.")
		return nil
	}
	var out []int64
	for i, e := range elems {
		n, ok := ev.SizeValue(e, rs[i].Ptr(), "sizes")
		if !ok {
			continue
		}
		switch {
		case tool.FixedSize != 0 && n != tool.FixedSize:
			ev.Errorf(rs[i].Ptr(), "Invalid size for "+tool.Name, "%s moves %d-byte atomic operands, so sizes must be [%d]; got %d.", tool.Name, tool.FixedSize, tool.FixedSize, n)
		case tool.MaxSize != 0 && n > tool.MaxSize:
			ev.Errorf(rs[i].Ptr(), "Invalid size for "+tool.Name, "%s sends each message as one UD datagram, which must fit the path MTU (at most %d bytes); got %d.", tool.Name, tool.MaxSize, n)
		default:
			out = append(out, n)
		}
	}
	return out
}

// ElemRanges returns the source range of each element of a literal list,
// so a bad element is pointed at exactly; otherwise the whole expression.
func ElemRanges(expr hcl.Expression, n int) []hcl.Range {
	out := make([]hcl.Range, n)
	tc, ok := expr.(*hclsyntax.TupleConsExpr)
	for i := range out {
		if ok && len(tc.Exprs) == n {
			out[i] = tc.Exprs[i].Range()
		} else {
			out[i] = expr.Range()
		}
	}
	return out
}

// OrList joins "a", "b", "c" as "a, b or c".
func OrList(xs []string) string {
	if len(xs) <= 1 {
		return strings.Join(xs, "")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " or " + xs[len(xs)-1]
}
