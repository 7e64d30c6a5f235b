package lab

import (
	"regexp/syntax"

	"github.com/zclconf/go-cty/cty"
)

// regexWorkPerStep is how many (program instruction × input byte) pairs a
// regular expression's match may take for one step of the evaluation
// budget. Go's regexp runs in time linear in the input but also in the
// compiled pattern: regexall of "0?" × 10,000 over 100,000 zeros, a
// 117-byte lab whose strings the byte budget allows, took `rlab validate`
// 122 s (a pattern 10 times longer over a string 10 times longer: hours).
// At 300 the budget's 300,000 steps allow 9e7 pairs, seconds of matching;
// a 50-instruction pattern over a 1 MB file() still fits.
const regexWorkPerStep = 300

// regexWork is the steps a regex or regexall call would take to match, counted before it runs (and before madeValues
// runs regexall's pattern to count its matches); 0 for other calls.
func regexWork(name string, args []cty.Value) int64 {
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
	var pat, s string
	var ok1, ok2 bool
	switch name {
	case "regex", "regexall": // (pattern, string)
		pat, ok1 = str(0)
		s, ok2 = str(1)
	default:
		return 0
	}
	if !ok1 || !ok2 {
		return 0
	}
	re, err := syntax.Parse(pat, syntax.Perl)
	if err != nil {
		return 0 // the function says what is wrong
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return 0
	}
	return int64(len(prog.Inst)) * int64(len(s)+1) / regexWorkPerStep
}
