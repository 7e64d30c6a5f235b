package lab

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"

	"github.com/rlab-dev/rlab/engine/results"
	"github.com/rlab-dev/rlab/kinds"
)

// Unit functions turn a number written with its unit, as a view shows it,
// into the unit a metric is recorded in: `result.bw_avg > gbps("20 Mb/s")`.
// One function per recorded unit (gbps for Gb/s, usec for usec, ...), so the
// unit a condition compares in is written in it, and a function that does
// not match the metric it is compared with is a load-time error.
var unitFuncs = []struct{ name, unit string }{
	{"gbps", "Gb/s"}, {"mbps", "Mb/s"},
	{"mpps", "Mpps"}, {"kpps", "kpps"},
	{"usec", "usec"}, {"seconds", "s"},
}

// unitFuncTarget is the unit function name converts to.
func unitFuncTarget(name string) (kinds.Unit, bool) {
	for _, f := range unitFuncs {
		if f.name == name {
			u, ok := kinds.LookupUnit(f.unit)
			return u, ok
		}
	}
	return kinds.Unit{}, false
}

// addUnitFuncs adds the unit functions to fs.
func addUnitFuncs(fs map[string]function.Function) {
	for _, f := range unitFuncs {
		to, ok := kinds.LookupUnit(f.unit)
		if !ok {
			panic("lab: unit function " + f.name + " converts to unknown unit " + f.unit)
		}
		fs[f.name] = unitFunc(f.name, to)
	}
}

func unitFunc(name string, to kinds.Unit) function.Function {
	return function.New(&function.Spec{
		Description: fmt.Sprintf("converts a %s written with its unit to %s", to.Dim, to.Name),
		Params:      []function.Parameter{{Name: "quantity", Type: cty.String}},
		Type:        function.StaticReturnType(cty.Number),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			f, err := convertQuantity(name, to, args[0].AsString())
			if err != nil {
				return cty.NilVal, function.NewArgError(0, err)
			}
			return cty.NumberFloatVal(f), nil
		},
	})
}

// convertQuantity is what unit function fn does with its argument s. Its
// error ends without a period: HCL adds one to a function's.
func convertQuantity(fn string, to kinds.Unit, s string) (float64, error) {
	q, err := kinds.ParseQuantity(s)
	if err != nil {
		return 0, fmt.Errorf("%s. %s", err, acceptedUnits(fn, to))
	}
	if q.Unit.Dim != to.Dim {
		return 0, fmt.Errorf("%s() converts a %s to %s, and %q is a %s%s", fn, to.Dim, to.Name, s, q.Unit.Dim, funcFor(q.Unit, "; use %s(%q) to compare with a metric in "+q.Unit.Name, s))
	}
	return q.In(to)
}

// acceptedUnits is the hint of a bad unit: what fn reads.
func acceptedUnits(fn string, to kinds.Unit) string {
	s := fmt.Sprintf("%s() reads a %s in %s", fn, to.Dim, strings.Join(kinds.UnitsOf(to.Dim), ", "))
	switch to.Dim {
	case kinds.Bandwidth:
		s += ` (b is a bit and B a byte: 1 MB/s = 8 Mb/s; KiB/s, MiB/s, GiB/s are powers of 1024)`
	case kinds.Time:
		s += ` (m is milli, u and µ micro)`
	}
	return s + fmt.Sprintf(`, as in %s("%s")`, fn, example(to.Dim))
}

func example(d kinds.Dimension) string {
	switch d {
	case kinds.Bandwidth:
		return "20 Mb/s"
	case kinds.Time:
		return "1.5 ms"
	}
	return "761 pps"
}

// funcFor formats msg with the unit function that gives u (as its first
// argument), or is "" when none does.
func funcFor(u kinds.Unit, msg string, args ...any) string {
	for _, f := range unitFuncs {
		if t, ok := kinds.LookupUnit(f.unit); ok && t.Same(u) {
			return fmt.Sprintf(msg, append([]any{f.name}, args...)...)
		}
	}
	return ""
}

// checkUnits checks, at load time, the unit functions of an expect
// condition: each argument known before the run (a literal, var.*, local.*)
// has a unit of its function's dimension, and a comparison (or a sum) of a
// unit function with a result (or another unit function) is in one unit. It reports whether all were
// fine; each problem is a diagnostic at its range.
func (l *loader) checkUnits(expr hcl.Expression, w *Workload, ctx *hcl.EvalContext) bool {
	se, isSyntax := expr.(hclsyntax.Expression)
	if !isSyntax {
		return true
	}
	ok := true
	hclsyntax.VisitAll(se, func(n hclsyntax.Node) hcl.Diagnostics {
		switch x := n.(type) {
		case *hclsyntax.FunctionCallExpr:
			to, isUnit := unitFuncTarget(x.Name)
			if !isUnit || len(x.Args) != 1 || readsResult(x.Args[0]) {
				return nil
			}
			v, d := x.Args[0].Value(ctx)
			if d.HasErrors() || !v.IsWhollyKnown() || v.IsNull() || v.IsMarked() || v.Type() != cty.String {
				return nil // evaluation says what is wrong
			}
			if _, err := convertQuantity(x.Name, to, v.AsString()); err != nil {
				msg := err.Error()
				if l.sensitive(v.AsString()) { // its unit is part of the secret: not echoed
					msg = fmt.Sprintf("The sensitive value given (not shown) is not one %s() reads. %s", x.Name, acceptedUnits(x.Name, to))
				}
				l.errorf(x.Args[0].Range().Ptr(), "Invalid unit", "%s.", msg)
				ok = false
			}
		}
		return nil
	})
	if !ok {
		return false // one diagnostic per mistake: not also the comparison it is in
	}
	hclsyntax.VisitAll(se, func(n hclsyntax.Node) hcl.Diagnostics {
		switch x := n.(type) {
		case *hclsyntax.BinaryOpExpr:
			if !unitOp(l.budget.op(x.Op)) {
				return nil
			}
			a, aok := l.exprUnit(x.LHS, w)
			b, bok := l.exprUnit(x.RHS, w)
			if !aok || !bok || a.fn == "" && b.fn == "" || a.unit.Same(b.unit) {
				return nil // two results are the lab's business, as before units
			}
			m, fn := a, b
			if a.fn != "" {
				m, fn = b, a
			}
			fix := funcFor(m.unit, " Use %s(...) to compare with %s.", m.what)
			if fix == "" {
				fix = fmt.Sprintf(" Write the threshold as a number in %s.", m.unit.Name)
			}
			if a.unit.Dim != b.unit.Dim {
				l.errorf(x.Range().Ptr(), "Unit does not match", "%s is in %s (a %s) and %s gives %s (a %s): they cannot be compared.%s",
					m.what, m.unit.Name, m.unit.Dim, fn.what, fn.unit.Name, fn.unit.Dim, fix)
			} else {
				l.errorf(x.Range().Ptr(), "Unit does not match", "%s is in %s and %s gives %s: the comparison would be off by their ratio.%s",
					m.what, m.unit.Name, fn.what, fn.unit.Name, fix)
			}
			ok = false
		}
		return nil
	})
	return ok
}

func unitOp(op *hclsyntax.Operation) bool {
	switch op {
	case hclsyntax.OpGreaterThan, hclsyntax.OpGreaterThanOrEqual, hclsyntax.OpLessThan, hclsyntax.OpLessThanOrEqual,
		hclsyntax.OpEqual, hclsyntax.OpNotEqual, hclsyntax.OpAdd, hclsyntax.OpSubtract:
		return true
	}
	return false
}

// readsResult reports whether e refers to result.*: such an argument is
// known only when the run has a result.
func readsResult(e hclsyntax.Expression) bool {
	for _, t := range e.Variables() {
		if t.RootName() == "result" {
			return true
		}
	}
	return false
}

// operandUnit is the unit an operand of a condition is in.
type operandUnit struct {
	unit kinds.Unit
	what string // "result.bw_avg", "gbps()"
	fn   string // the unit function, when the operand is a call of one
}

// exprUnit is the unit e is in, when it can be told without the run: a
// unit function's call (in parentheses or scaled by a number literal), a
// result whose metric's unit the unit table knows (in parentheses).
func (l *loader) exprUnit(e hclsyntax.Expression, w *Workload) (operandUnit, bool) {
	switch x := e.(type) {
	case *hclsyntax.ParenthesesExpr:
		return l.exprUnit(x.Expression, w)
	case *meteredExpr: // budget.go's wrapper of an operand
		return l.exprUnit(x.Expression, w)
	case *hclsyntax.FunctionCallExpr:
		if u, ok := unitFuncTarget(x.Name); ok {
			return operandUnit{unit: u, what: x.Name + "()", fn: x.Name}, true
		}
	case *hclsyntax.ScopeTraversalExpr:
		if x.Traversal.RootName() != "result" {
			return operandUnit{}, false
		}
		a, ok := attrStep(x.Traversal, 1)
		if !ok {
			return operandUnit{}, false
		}
		if u, ok := kinds.LookupUnit(resultUnit(a.Name, w)); ok {
			return operandUnit{unit: u, what: "result." + a.Name}, true
		}
	case *hclsyntax.BinaryOpExpr:
		// A threshold times a margin (0.9 * kpps("761 pps")) keeps its
		// unit; a result times a number may be a conversion by hand
		// (result.bw_avg * 1000 is in Mb/s), so its unit is not told.
		var u operandUnit
		var ok bool
		_, lit := unmetered(x.RHS).(*hclsyntax.LiteralValueExpr)
		if (x.Op == hclsyntax.OpMultiply || x.Op == hclsyntax.OpDivide) && lit {
			u, ok = l.exprUnit(x.LHS, w)
		}
		if _, lit := unmetered(x.LHS).(*hclsyntax.LiteralValueExpr); x.Op == hclsyntax.OpMultiply && lit {
			u, ok = l.exprUnit(x.RHS, w)
		}
		return u, ok && u.fn != ""
	}
	return operandUnit{}, false
}

// resultUnit is the unit result.name of workload w is in, "" when unknown.
func resultUnit(name string, w *Workload) string {
	switch name {
	case "size":
		return "bytes"
	case "repeat":
		return "count"
	}
	for _, m := range w.Metrics {
		if m.Name == name {
			return m.UnitOf()
		}
	}
	if m, ok := results.MetricByName(name); ok {
		return m.Unit
	}
	if m, a, ok := kinds.MetricByAlias(name); ok && a.Scale == 1 {
		return m.Unit
	}
	return ""
}

// sensitive reports whether s holds the value of a sensitive variable.
func (l *loader) sensitive(s string) bool {
	for _, v := range l.lab.Sensitive {
		if v != "" && strings.Contains(s, v) {
			return true
		}
	}
	return false
}

// UnitFuncFor names the unit function that gives unit ("gbps" for "Gb/s",
// "usec" for pingpong's "usec/iter"), "" when none does.
func UnitFuncFor(unit string) string {
	u, ok := kinds.LookupUnit(unit)
	if !ok {
		return ""
	}
	return funcFor(u, "%s")
}
