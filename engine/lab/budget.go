package lab

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
)

// Bounds on evaluating one lab. Lab files are bounded (MaxFileBytes), but
// what they compute is not: a 326-byte lab of nested join() over range()
// asked for gigabytes, and three nested for over range(1000) a billion
// iterations. `rlab validate` is what one runs first on an untrusted lab,
// so evaluation is metered, and past these it stops with a diagnostic.
const (
	// MaxEvalOps bounds the work of one Load: every iteration of a for
	// expression, splat or %{for}, and every value a function reads or
	// makes (one operation per element, deep).
	MaxEvalOps = 300_000
	// MaxEvalBytes bounds the bytes of strings that functions and string
	// templates make in one Load (file() included).
	MaxEvalBytes = 64 << 20
)

// EvalLimitSummary is the summary of the diagnostic for a lab that passed
// MaxEvalOps or MaxEvalBytes.
const EvalLimitSummary = "Lab evaluation too large"

// budget meters one Load's evaluation. Once spent, every metered point
// returns an unknown value without a diagnostic, so evaluation winds down
// quickly (an error would be collected once per remaining iteration of each
// enclosing for); the first overrun is reported once (see loader.add and
// loader.reportBudget).
type budget struct {
	steps, bytes int64
	spent        *limitError // the first overrun
	shown        bool        // loader.add kept its diagnostic
	// funcs are the functions as defined (meterFuncs): which parameters
	// read a number, for an argument's check (numbers.go).
	funcs map[string]function.Function
	// ops maps each comparison's own == or != (equal.go) to hclsyntax's.
	ops map[*hclsyntax.Operation]*hclsyntax.Operation
	// until, when set, ends evaluation by the clock (Lab.EvalUntil): the
	// expect conditions a run evaluates at its end run after the
	// evaluation guard of the command has ended.
	until time.Time
	limit time.Duration // until's length, for the diagnostic
}

// limitError is the overrun, carried through a function call's error to
// loader.add, which turns it into EvalLimitSummary.
type limitError struct {
	what    string // what needed more than the limit: "join", "a for expression", ...
	measure string // "steps" or "bytes"
	limit   int64
	at      *hcl.Range
}

func (e *limitError) Error() string {
	if e.measure == "set" {
		return fmt.Sprintf("%s would make a set of more than %d different values that share a key", e.what, e.limit)
	}
	if e.measure == "number" {
		return fmt.Sprintf("%s makes or reads a number past the lab's limit (about 1e-30 to 1e1000, at most %d digits)", e.what, MaxNumberDigits)
	}
	if e.measure == "time" {
		return fmt.Sprintf("%s was still being evaluated when the run's %d s for its expect conditions ran out", e.what, e.limit)
	}
	return fmt.Sprintf("%s needs more than the lab's evaluation limit of %d %s", e.what, e.limit, e.measure)
}

func (e *limitError) summary() string {
	if e.measure == "set" {
		return SetLimitSummary
	}
	if e.measure == "number" {
		return NumberLimitSummary
	}
	return EvalLimitSummary
}

func (e *limitError) detail() string {
	if e.measure == "set" {
		return setDetail(e.what)
	}
	if e.measure == "number" {
		return numberDetail(e.what)
	}
	if e.measure == "time" {
		return fmt.Sprintf("The run evaluates its expect conditions in at most %d s, and this lab's took longer when it reached %s: this condition and the ones after it are not decided. "+
			"A condition compares a result with a number; one that loops or calls functions over large values does its work outside the lab.", e.limit, e.what)
	}
	if e.measure == "bytes" {
		return fmt.Sprintf("Evaluating this lab made more than %d MiB of strings (in functions, string templates and the values its blocks hold, each instance its own) when it reached %s. "+
			"A lab's data is small; a value this large is almost always an unintended join(), format() or template inside a for or over range(). "+
			"Build smaller values, or produce large data outside the lab and give the host a file to read.", e.limit>>20, e.what)
	}
	return fmt.Sprintf("Evaluating this lab took more than %d steps (for-expression iterations and values read or made by functions) when it reached %s. "+
		"A lab's loops are small; this many is almost always an unintended nested for or a large range(). "+
		"Narrow the loops (a for over the hosts or students, not over range()), or compute the list outside the lab and read it with jsondecode(file(...)).", e.limit, e.what)
}

// charge adds work, or refuses it past the budget: it returns the overrun,
// or errSpent when an earlier one already stopped evaluation. Refused work
// is not counted, so steps and bytes are what evaluation was allowed.
func (b *budget) charge(what string, at *hcl.Range, steps, bytes int64) error {
	return b.chargeValue(what, at, steps, bytes, false)
}

// chargeValue is charge for a value that may hold a number past the
// lab's limit (huge): refused as the budget's overrun, so evaluation
// winds down the same way.
func (b *budget) chargeValue(what string, at *hcl.Range, steps, bytes int64, huge bool) error {
	if b.spent != nil {
		return errSpent
	}
	switch {
	case b.steps+steps > MaxEvalOps:
		b.spent = &limitError{what: what, measure: "steps", limit: MaxEvalOps, at: at}
	case b.bytes+bytes > MaxEvalBytes:
		b.spent = &limitError{what: what, measure: "bytes", limit: MaxEvalBytes, at: at}
	case huge:
		b.spent = &limitError{what: what, measure: "number", limit: MaxNumberExp2, at: at}
	case !b.until.IsZero() && time.Now().After(b.until):
		b.spent = &limitError{what: what, measure: "time", limit: int64(b.limit / time.Second), at: at}
	default:
		b.steps += steps
		b.bytes += bytes
		return nil
	}
	return b.spent
}

var errSpent = errors.New("evaluation stopped at the lab's evaluation limit")

// LimitEvalTime ends, d from now, what is left of evaluating the lab: its
// expect conditions, which a run evaluates at its end, after the command's
// evaluation guard (1 GiB, 60 s) has ended. They draw on what the load left
// of the budget, and a step of it may read a whole string of the lab: a
// 300-byte lab whose condition loops strlen() over a 12 MiB local, over
// range(result.repeat * 100000) so that it does not run at load, took
// 0.75 s an iteration: about 20 hours for the 100,000 the budget allows
// (SECURITY 148). Past d, the next metered step stops evaluation as the
// budget does (that condition is not decided, nor any later one: reading
// result is metered too), so evaluation ends at most one step after d.
func (l *Lab) LimitEvalTime(d time.Duration) {
	if l.meter == nil {
		return
	}
	l.meter.until, l.meter.limit = time.Now().Add(d), d
}

// chargeHeld charges the value a block instance keeps for one of its
// arguments, by its strings' bytes and a byte for each value (a list of
// empty strings is still written out a separator a value). Functions and
// templates pay for what they make, but a reference makes nothing: command
// = local.cmd in 10,000 instances shared one 1 MiB list that the plan,
// state.json and each workload's "asked for" text in report.html then
// wrote out once per instance, 10 GB after the evaluation guard had ended
// (SECURITY 148). Charged here, what all the lab's blocks hold is within
// MaxEvalBytes, so everything written out per instance is too.
func (b *budget) chargeHeld(a *hcl.Attribute, v cty.Value) error {
	steps, bytes, _ := sizeOf(v, MaxEvalBytes-b.bytes+1)
	return b.charge(fmt.Sprintf("the value of %s", a.Name), a.Expr.Range().Ptr(), 0, steps+bytes)
}

// remaining is how many steps are left, the most a size count may walk.
func (b *budget) remaining() int64 { return MaxEvalOps - b.steps + 1 }

// sizeOf counts v deeply: one step per value, and the bytes of its
// strings, and says whether v holds a number past MaxNumberExp2. It stops
// after limit steps, so counting costs no more than it charges.
func sizeOf(v cty.Value, limit int64) (steps, bytes int64, huge bool) {
	var walk func(v cty.Value)
	walk = func(v cty.Value) {
		if steps > limit {
			return
		}
		steps++
		v, _ = v.Unmark()
		if v.IsNull() || !v.IsKnown() {
			return
		}
		t := v.Type()
		switch {
		case t == cty.String:
			bytes += int64(len(v.AsString()))
		case t == cty.Number:
			huge = huge || hugeFloat(v.AsBigFloat())
		case t.IsListType(), t.IsSetType(), t.IsTupleType(), t.IsMapType(), t.IsObjectType():
			for it := v.ElementIterator(); it.Next() && steps <= limit; {
				_, e := it.Element()
				walk(e)
			}
		}
	}
	walk(v)
	return steps, bytes, huge
}

// meterFuncs wraps every function so that a call is charged for what it
// reads and makes, and one that would make more than the budget allows
// (join with a long separator, format with a huge width, setproduct) is
// refused before it allocates.
func (b *budget) meterFuncs(fs map[string]function.Function) map[string]function.Function {
	b.funcs = fs
	out := make(map[string]function.Function, len(fs))
	for name, f := range fs {
		switch name {
		case "try", "can": // they evaluate expressions that are metered themselves
			out[name] = f
			continue
		}
		if name == "contains" {
			f = b.containsFunc(f)
		}
		out[name] = b.meterFunc(name, f)
	}
	return out
}

func (b *budget) meterFunc(name string, f function.Function) function.Function {
	spec := &function.Spec{
		Description: f.Description(),
		Params:      f.Params(),
		VarParam:    f.VarParam(),
		Type: func(args []cty.Value) (cty.Type, error) {
			if b.spent != nil {
				return cty.DynamicPseudoType, nil // Impl answers unknown
			}
			// Matching a regular expression costs its program times its
			// input (regexwork.go), paid before madeValues matches.
			if n := regexWork(name, args); n > 0 {
				if err := b.charge(name+"() matching its pattern over its text", nil, n, 0); err != nil {
					return cty.NilType, err
				}
			}
			// A decoder's result type is built from the whole document
			// before Impl runs: refuse one that makes more values than
			// the budget has left by its text, before it is decoded.
			if n := madeValues(name, args, b.remaining()); n > b.remaining() {
				return cty.NilType, b.charge(name+"()", nil, n, 0)
			}
			return f.ReturnTypeForValues(args)
		},
		Impl: func(args []cty.Value, retType cty.Type) (cty.Value, error) {
			if b.spent != nil {
				return cty.UnknownVal(retType), nil
			}
			what := name + "()"
			var steps, bytes int64
			huge := false
			for _, a := range args {
				s, n, h := sizeOf(a, b.remaining())
				steps, bytes, huge = steps+s, bytes+n, huge || h
				// These read numbers out of text inside the call.
				if readsNumbers[name] && !huge {
					huge = hugeValue(a, true, b.remaining())
				}
			}
			if err := b.chargeValue(what, nil, steps+1, 0, huge); err != nil {
				return cty.UnknownVal(retType), err
			}
			if most, ok := setMakers[name]; ok {
				for _, a := range args {
					if err := b.chargeSet(what, nil, a, most); err != nil {
						return cty.UnknownVal(retType), err
					}
				}
			}
			if est := estimateBytes(name, args, bytes); est > 0 {
				if err := b.charge(what, nil, 0, est); err != nil {
					return cty.UnknownVal(retType), err
				}
			}
			v, err := f.Call(args)
			if err != nil {
				return v, err
			}
			s, n, h := sizeOf(v, b.remaining())
			if err := b.chargeValue(what, nil, s, n, h); err != nil {
				return cty.UnknownVal(retType), err
			}
			return v, nil
		},
	}
	return function.New(spec)
}

// decodedValues is an upper bound on the values a decoder makes of its
// text, counted in one pass that builds nothing, or 0 for the other
// functions: every value after a document's first follows one of these
// bytes (a YAML key and its value share one ':' or '?', so twice). A 16 MiB file
// of "0," made jsondecode take 2.1 GB and two minutes, and csvdecode 7 GB,
// before the budget saw the result.
func decodedValues(name string, args []cty.Value) int64 {
	if len(args) == 0 {
		return 0
	}
	if name == "split" || name == "regexall" {
		return 0 // madeValues
	}
	v, _ := args[0].Unmark()
	if v.IsNull() || !v.IsKnown() || v.Type() != cty.String {
		return 0
	}
	var seps string
	per := int64(1)
	switch name {
	case "jsondecode":
		seps = ",:[{"
	case "csvdecode":
		seps = ",\n"
	case "yamldecode":
		// '?' starts a key without ':' ("? a", its value null), and
		// YAML breaks lines at \r, NEL, LS and PS too (below): "?\r"
		// repeated made a million values in 2 MB that no other byte
		// here counted.
		seps, per = ",:[{-\n*?\r", 2
	default:
		return 0
	}
	s := v.AsString()
	if name != "csvdecode" && jsonDepth(s) > maxYAMLDepth {
		return 0 // the decoder's own refusal says why
	}
	n := int64(1)
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(seps, s[i]) >= 0 {
			n += per
		}
	}
	if name == "yamldecode" {
		for _, br := range []string{"\u0085", "\u2028", "\u2029"} {
			n += per * int64(strings.Count(s, br))
		}
	}
	return n
}

// madeValues is an upper bound on the values a function makes of a string
// it is given, when that is far more than the string's own one value
// (decoders, split, regexall), counted before it runs (0: not one of
// them). limit is the most worth counting. split over 16 MiB of "," took
// 1.1 GB and regexall 2.3 GB before the budget saw their lists.
func madeValues(name string, args []cty.Value, limit int64) int64 {
	str := func(i int) (string, bool) {
		if i >= len(args) {
			return "", false
		}
		v, _ := args[i].Unmark()
		if v.IsNull() || !v.IsKnown() || v.Type() != cty.String {
			return "", false
		}
		return v.AsString(), true
	}
	switch name {
	case "split": // split(separator, string)
		sep, ok1 := str(0)
		s, ok2 := str(1)
		if !ok1 || !ok2 {
			return 0
		}
		if sep == "" {
			return int64(utf8.RuneCountInString(s)) + 1
		}
		return int64(strings.Count(s, sep)) + 1
	case "regexall": // regexall(pattern, string): a value per match and group
		pat, ok1 := str(0)
		s, ok2 := str(1)
		if !ok1 || !ok2 {
			return 0
		}
		re, err := regexp.Compile(pat)
		if err != nil {
			return 0 // the function says what is wrong
		}
		n := int64(len(re.FindAllStringIndex(s, int(min(limit, MaxEvalOps))+1)))
		return n * int64(1+re.NumSubexp())
	}
	return decodedValues(name, args)
}

var fmtVerbRe = regexp.MustCompile(`%[-+# 0]*(\d*)(?:\.(\d*))?`)

// estimateBytes is an upper bound on the bytes a function that can make far
// more than it reads would make, or 0 for the others (their result is
// counted after the call; it is no larger than a small multiple of their
// arguments, which are counted before). argBytes is the arguments' bytes.
func estimateBytes(name string, args []cty.Value, argBytes int64) int64 {
	str := func(i int) string {
		if i >= len(args) {
			return ""
		}
		v, _ := args[i].Unmark()
		if v.IsNull() || !v.IsKnown() || v.Type() != cty.String {
			return ""
		}
		return v.AsString()
	}
	length := func(v cty.Value) int64 {
		v, _ = v.Unmark()
		if v.IsNull() || !v.IsKnown() || !(v.Type().IsCollectionType() || v.Type().IsTupleType()) {
			return 1
		}
		return int64(v.LengthInt())
	}
	switch name {
	case "join": // the separator once between every two elements
		var n int64
		for _, a := range args[1:] {
			n += length(a)
		}
		return argBytes + n*int64(len(str(0)))
	case "format", "formatlist": // widths and precisions pad
		var pad int64
		for _, m := range fmtVerbRe.FindAllStringSubmatch(str(0), -1) {
			for _, d := range m[1:] {
				if n, err := strconv.ParseInt(d, 10, 64); err == nil {
					pad += n
				} else if d != "" {
					pad += MaxEvalBytes + 1
				}
			}
		}
		rows := int64(1)
		if name == "formatlist" {
			for _, a := range args[1:] {
				rows = max(rows, length(a))
			}
		}
		return rows * (argBytes + pad)
	case "replace": // an empty or regex pattern matches at every byte
		s, sub, repl := str(0), str(1), str(2)
		n := int64(len(s) + 1)
		if sub != "" && !(len(sub) > 1 && strings.HasPrefix(sub, "/") && strings.HasSuffix(sub, "/")) {
			n = int64(strings.Count(s, sub))
		}
		return int64(len(s)) + n*int64(len(repl))
	case "indent": // the spaces on every line
		if len(args) < 2 {
			return 0
		}
		v, _ := args[0].Unmark()
		spaces := int64(0)
		if v.IsKnown() && !v.IsNull() && v.Type() == cty.Number {
			f, _ := v.AsBigFloat().Float64()
			spaces = int64(max(0, min(f, float64(MaxEvalBytes+1))))
		}
		return int64(len(str(1))) + int64(strings.Count(str(1), "\n")+1)*spaces
	case "setproduct": // every combination
		n := int64(1)
		for _, a := range args {
			n *= max(length(a), 1)
			if n > MaxEvalOps {
				return MaxEvalBytes + 1
			}
		}
		return n * int64(len(args)) * 8
	case "jsonencode": // \u escapes
		return 6 * argBytes
	case "yamlencode": // every line indented by its depth (SECURITY 110)
		if len(args) == 0 {
			return 0
		}
		return yamlBytes(args[0])
	case "upper", "lower", "title", "strrev", "chomp", "trimspace", "trim", "trimprefix", "trimsuffix", "substr", "tostring":
		return 0
	}
	return 0
}

// meterExprs rewrites the expressions under node so that evaluating them is
// charged to b: each for expression pays one step per element of its
// collection before it iterates (so nested loops pay for every inner
// iteration) and for every value an iteration makes, a splat per element, a string template per byte it joins,
// and an == or != per element it compares. The rewrite wraps a child in a
// ParenthesesExpr-like node, which walks to the child itself, so
// Variables() and reference checks see the same traversals as before.
func (b *budget) meterExprs(node hclsyntax.Node) {
	if node == nil {
		return
	}
	// The lists and objects of a type (object({...}), tuple([...])) are
	// read as syntax, not evaluated: left as they are.
	inType := map[hclsyntax.Node]bool{}
	hclsyntax.VisitAll(node, func(n hclsyntax.Node) hcl.Diagnostics {
		if c, ok := n.(*hclsyntax.FunctionCallExpr); ok && typeConstructors[c.Name] {
			for _, a := range c.Args {
				hclsyntax.VisitAll(a, func(n hclsyntax.Node) hcl.Diagnostics {
					inType[n] = true
					return nil
				})
			}
		}
		return nil
	})
	hclsyntax.VisitAll(node, func(n hclsyntax.Node) hcl.Diagnostics {
		switch e := n.(type) {
		case *hclsyntax.ForExpr:
			e.CollExpr = b.meter(e.CollExpr, "a for expression", elements)
			// Each element it makes, deeply: a body may build a large
			// value on every iteration.
			e.ValExpr = b.meter(e.ValExpr, "a for expression", deep)
		case *hclsyntax.TupleConsExpr:
			// A list of references shares its elements, so a list of
			// twice a local of twice a local ... (30 lines) is 2^30
			// values that a conditional's type unification walks
			// (hours, 1.9 GB): charge each element deeply where a
			// list can double (two elements or more).
			if len(e.Exprs) > 1 && !inType[e] {
				for i := range e.Exprs {
					e.Exprs[i] = b.meter(e.Exprs[i], "a list", deep)
				}
			}
		case *hclsyntax.ObjectConsExpr:
			if len(e.Items) > 1 && !inType[e] {
				for i := range e.Items {
					e.Items[i].ValueExpr = b.meter(e.Items[i].ValueExpr, "an object", deep)
				}
			}
		case *hclsyntax.SplatExpr:
			e.Source = b.meter(e.Source, "a splat expression", elements)
		case *hclsyntax.TemplateJoinExpr:
			e.Tuple = b.meter(e.Tuple, "a %{for} template", deep)
		case *hclsyntax.TemplateExpr:
			for i, p := range e.Parts {
				if _, lit := p.(*hclsyntax.LiteralValueExpr); !lit {
					e.Parts[i] = b.meter(p, "a string template", deep)
				}
			}
		case *hclsyntax.BinaryOpExpr:
			if e.Op == hclsyntax.OpEqual || e.Op == hclsyntax.OpNotEqual {
				e.LHS = b.meter(e.LHS, "a comparison", deep)
				e.RHS = b.meter(e.RHS, "a comparison", deep)
				e.Op = b.equalOp(e.Op, e.SrcRange)
			}
			if numericOps[e.Op] {
				e.LHS = b.meter(e.LHS, "an arithmetic operand", operand)
				e.RHS = b.meter(e.RHS, "an arithmetic operand", operand)
			}
		case *hclsyntax.UnaryOpExpr:
			if e.Op == hclsyntax.OpNegate {
				e.Val = b.meter(e.Val, "an arithmetic operand", operand)
			}
		case *hclsyntax.FunctionCallExpr:
			if typeConstructors[e.Name] {
				break // a variable's type = list(string): read as syntax, not evaluated
			}
			for i := range e.Args {
				e.Args[i] = b.meter(e.Args[i], e.Name+"()", argument(e.Name, i))
			}
		case *hclsyntax.LiteralValueExpr:
			// Refused where it is written; the lab evaluates on with an
			// unknown number, which nothing writes out.
			if hugeNumber(e.Val) {
				rng := e.SrcRange
				b.chargeValue("this number", &rng, 0, 0, true)
				e.Val = cty.UnknownVal(cty.Number)
			}
		case *hclsyntax.ConditionalExpr:
			e.TrueResult = b.meter(e.TrueResult, "a conditional", elements)
			e.FalseResult = b.meter(e.FalseResult, "a conditional", elements)
		}
		return nil
	})
}

type meterHow int

const (
	elements meterHow = iota // one step per element, at the top level
	deep                     // every value and byte, all the way down
	operand                  // read as a number: no number or numeric text past the limits (free)
	// argumentN+i: the i-th argument of a function: as operand when that
	// parameter is a number (free), unchecked otherwise.
	argumentN meterHow = 1 << 20
)

// argument is how a function call's i-th argument is metered. The name is
// looked up when the call is evaluated (meterExprs runs at parse time,
// before meterFuncs).
func argument(name string, i int) meterHow { return argumentN + meterHow(i) }

// typeConstructors are the calls a variable's type is written with
// (typeexpr reads them as syntax: a wrapped argument is not a type).
var typeConstructors = map[string]bool{"list": true, "map": true, "set": true, "object": true, "tuple": true, "optional": true}

// numericOps are the operators that read their operands as numbers.
var numericOps = map[*hclsyntax.Operation]bool{
	hclsyntax.OpAdd: true, hclsyntax.OpSubtract: true, hclsyntax.OpMultiply: true,
	hclsyntax.OpDivide: true, hclsyntax.OpModulo: true,
	hclsyntax.OpGreaterThan: true, hclsyntax.OpGreaterThanOrEqual: true,
	hclsyntax.OpLessThan: true, hclsyntax.OpLessThanOrEqual: true,
}

// readsNumbers are the functions that read numbers out of the text they
// are given, inside the call.
var readsNumbers = map[string]bool{
	"jsondecode": true, "yamldecode": true, "tonumber": true, "parseint": true,
	"format": true, "formatlist": true,
}

// numberParam says whether f's i-th argument is read as a number.
func numberParam(f function.Function, i int) bool {
	ps := f.Params()
	if i < len(ps) {
		return ps[i].Type.Equals(cty.Number)
	}
	vp := f.VarParam()
	return vp != nil && vp.Type.Equals(cty.Number)
}

func (b *budget) meter(e hclsyntax.Expression, what string, how meterHow) hclsyntax.Expression {
	if _, done := e.(*meteredExpr); done {
		return e
	}
	return &meteredExpr{ParenthesesExpr: &hclsyntax.ParenthesesExpr{Expression: e, SrcRange: e.Range()}, b: b, what: what, how: how}
}

// meteredExpr evaluates its child and charges the value's size.
type meteredExpr struct {
	*hclsyntax.ParenthesesExpr
	b    *budget
	what string
	how  meterHow
}

// unmetered is e without the wrapper meter put around it.
func unmetered(e hclsyntax.Expression) hclsyntax.Expression {
	if m, ok := e.(*meteredExpr); ok {
		return m.Expression
	}
	return e
}

// call is the function whose argument m is (argumentN).
func (m *meteredExpr) call() string { return strings.TrimSuffix(m.what, "()") }

func (m *meteredExpr) Value(ctx *hcl.EvalContext) (cty.Value, hcl.Diagnostics) {
	if m.b.spent != nil {
		return cty.DynamicVal, nil
	}
	v, diags := m.Expression.Value(ctx)
	var steps, bytes int64
	huge := false
	how := m.how
	if how >= argumentN {
		how = -1
		f, ok := m.b.funcs[m.call()]
		if ok && numberParam(f, int(m.how-argumentN)) {
			how = operand
		}
		// HCL converts the argument to the parameter's set type
		// before the call: check it first (sets.go).
		if ok && setParam(f, int(m.how-argumentN)) {
			rng := m.SrcRange
			if hugeValue(v, false, MaxEvalOps) { // hashing a tiny number is slow too
				return cty.DynamicVal, appendLimit(diags, m.b.chargeValue(m.what, &rng, 0, 0, true))
			}
			if err := m.b.chargeSet(m.what, &rng, v, maxSetBucket); err != nil {
				return cty.DynamicVal, appendLimit(diags, err)
			}
		}
	}
	if m.what == "a conditional" {
		// Unifying the branches' types can make a set of a list.
		rng := m.SrcRange
		if hugeValue(v, false, MaxEvalOps) {
			return cty.DynamicVal, appendLimit(diags, m.b.chargeValue(m.what, &rng, 0, 0, true))
		}
		if err := m.b.chargeSet(m.what, &rng, v, maxSetBucket); err != nil {
			return cty.DynamicVal, appendLimit(diags, err)
		}
	}
	switch how {
	case operand:
		// A list expanded into a number parameter (max(xs...)) holds
		// what is read: look deep, but only for what needs no charge.
		huge = hugeValue(v, true, MaxEvalOps)
	case elements:
		u, _ := v.Unmark()
		steps = 1
		if u.IsKnown() && !u.IsNull() && (u.Type().IsCollectionType() || u.Type().IsTupleType() || u.Type().IsObjectType()) {
			steps += int64(u.LengthInt())
		}
	case deep:
		steps, bytes, huge = sizeOf(v, m.b.remaining())
	}
	if how == -1 || how == operand {
		if !huge {
			return v, diags
		}
	}
	rng := m.SrcRange
	if err := m.b.chargeValue(m.what, &rng, steps, bytes, huge); err != nil {
		var le *limitError
		if errors.As(err, &le) {
			diags = append(diags, le.diagnostic())
		}
		return cty.DynamicVal, diags
	}
	return v, diags
}

// appendLimit adds err's diagnostic when it is the overrun (not errSpent,
// an earlier overrun already reported).
func appendLimit(diags hcl.Diagnostics, err error) hcl.Diagnostics {
	var le *limitError
	if errors.As(err, &le) {
		diags = append(diags, le.diagnostic())
	}
	return diags
}

func (e *limitError) diagnostic() *hcl.Diagnostic {
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: e.summary(), Detail: e.detail(), Subject: e.at}
}

// limitDiag turns a function call that failed on the budget (hclsyntax's
// "Error in function call") into the evaluation limit's diagnostic, at the
// call's range; it reports whether d was one.
func limitDiag(d *hcl.Diagnostic) bool {
	extra, ok := hcl.DiagnosticExtra[hclsyntax.FunctionCallDiagExtra](d)
	if !ok {
		return false
	}
	var le *limitError
	if !errors.As(extra.FunctionCallError(), &le) {
		return false
	}
	d.Summary, d.Detail = le.summary(), le.detail()
	if le.at == nil {
		le.at = d.Subject
	}
	return true
}

// reportBudget adds the overrun's diagnostic when no evaluation returned it
// (try() and can() swallow errors).
func (l *loader) reportBudget() {
	if l.budget.spent != nil && !l.budget.shown {
		l.budget.shown = true
		l.diags = append(l.diags, l.budget.spent.diagnostic())
	}
}

// yamlBytes bounds what yamlencode writes for v: each value on a line of
// its own, indented two spaces a level, quoted and escaped (up to 4 bytes
// for one). A list nested 3,600 deep around 50,000 numbers is 7 KB of lab
// and 360 MB of YAML, made in one call before its result was counted
// (1 GB in validate). It stops once past MaxEvalBytes; the walk is no
// longer than sizeOf's of the same argument, which the call was charged.
func yamlBytes(v cty.Value) int64 {
	var n int64
	var walk func(v cty.Value, depth int64)
	walk = func(v cty.Value, depth int64) {
		if n > MaxEvalBytes {
			return
		}
		v, _ = v.Unmark()
		n += 2*depth + 16
		if v.IsNull() || !v.IsKnown() {
			return
		}
		t := v.Type()
		switch {
		case t == cty.String:
			n += 4 * int64(len(v.AsString()))
		case t.IsListType(), t.IsSetType(), t.IsTupleType(), t.IsMapType(), t.IsObjectType():
			for it := v.ElementIterator(); it.Next() && n <= MaxEvalBytes; {
				k, e := it.Element()
				if k.Type() == cty.String {
					n += 4 * int64(len(k.AsString())) // a key on its line
				}
				walk(e, depth+1)
			}
		}
	}
	walk(v, 0)
	return n
}
