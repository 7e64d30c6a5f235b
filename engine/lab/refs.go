package lab

import (
	"fmt"
	"math/big"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/rlab-dev/rlab/engine/results"
	"github.com/rlab-dev/rlab/kinds/toolopts"
)

// scope says what an expression may refer to besides var, local and path.
type scope struct {
	ctx        *hcl.EvalContext
	where      string   // "a host block", for messages
	blockTypes []string // block types whose objects are in scope
	each       bool
	count      bool
	result     []string // result.<attr> names, inside expect
	// resultAliases maps older result names (bw_avg_gbps) to the metric
	// they read (bw_avg): accepted, with a warning.
	resultAliases map[string]string
}

func (s *scope) allows(blockType string) bool {
	for _, k := range s.blockTypes {
		if k == blockType {
			return true
		}
	}
	return false
}

// checkRefs checks every reference in expr against the declarations, so a
// misspelt or dangling name gets a diagnostic at its exact range with a
// suggestion, rather than HCL's generic one. It reports whether all were fine.
func (l *loader) checkRefs(expr hcl.Expression, sc *scope) bool {
	ok := true
	for _, t := range expr.Variables() {
		if !l.checkRef(t, sc) {
			ok = false
		}
	}
	return ok
}

func attrStep(t hcl.Traversal, i int) (hcl.TraverseAttr, bool) {
	if len(t) <= i {
		return hcl.TraverseAttr{}, false
	}
	a, ok := t[i].(hcl.TraverseAttr)
	return a, ok
}

func (l *loader) checkRef(t hcl.Traversal, sc *scope) bool {
	root := t.RootName()
	rng := t.SourceRange().Ptr()
	step, hasStep := attrStep(t, 1)
	if hasStep {
		r := hcl.RangeBetween(t[0].SourceRange(), step.SrcRange)
		rng = &r
	}
	switch root {
	case "var":
		if !hasStep {
			l.errorf(rng, "Invalid reference", "A variable is referenced as var.NAME.")
			return false
		}
		if _, ok := l.vars[step.Name]; !ok {
			l.errorf(rng, "Reference to undeclared input variable", "No variable named %q is declared.%s Declare it with variable %q { }.", step.Name, didYouMean(step.Name, mapKeys(l.vars)), step.Name)
			return false
		}
	case "local":
		if !hasStep {
			l.errorf(rng, "Invalid reference", "A local value is referenced as local.NAME.")
			return false
		}
		if !l.localSet[step.Name] {
			sugg := didYouMean(step.Name, l.localNames)
			if sugg == "" {
				sugg = fmt.Sprintf(" Define it in a locals block: locals { %s = ... }.", step.Name)
			}
			l.errorf(rng, "Reference to undeclared local value", "No local value named %q is defined.%s", step.Name, sugg)
			return false
		}
	case "each":
		if !sc.each {
			l.errorf(t.SourceRange().Ptr(), `Reference to "each" without for_each`, "each.key and each.value exist only inside a block that sets for_each.")
			return false
		}
		if !hasStep || (step.Name != "key" && step.Name != "value") {
			l.errorf(rng, "Invalid each attribute", "each has two attributes: each.key and each.value.")
			return false
		}
	case "count":
		if !sc.count {
			l.errorf(t.SourceRange().Ptr(), `Reference to "count" without count`, "count.index exists only inside a block that sets count.")
			return false
		}
		if !hasStep || step.Name != "index" {
			l.errorf(rng, "Invalid count attribute", "count has one attribute: count.index.")
			return false
		}
	case "result":
		if sc.result == nil {
			l.errorf(t.SourceRange().Ptr(), "Invalid reference to result", "result.* exists only in the condition of an expect block.")
			return false
		}
		if !hasStep {
			l.errorf(rng, "Invalid reference", "A result value is referenced as result.NAME, e.g. result.%s.", sc.result[0])
			return false
		}
		found := false
		for _, a := range sc.result {
			found = found || a == step.Name
		}
		if now, old := sc.resultAliases[step.Name]; old && !found {
			l.add(&hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: "Deprecated result name", Subject: rng,
				Detail: fmt.Sprintf("result.%s is the old name of %s; write result.%s, the name results.json, summary.md, the report and rlab compare use. The old name still works.", step.Name, now, now)})
			found = true
		}
		if !found {
			l.errorf(rng, "Unsupported result attribute", "This workload's result has no attribute %q.%s It has: %s.", step.Name, didYouMean(step.Name, sc.result), resultAttrsText(sc.result))
			return false
		}
	case "host", "rxe", "siw", "rdma", "capture", "workload":
		if !hasStep {
			l.errorf(rng, "Invalid reference", "A %s is referenced as %s.NAME.", root, root)
			return false
		}
		d := l.decls[root][step.Name]
		if d == nil {
			sugg := didYouMean(step.Name, declNames(l.decls[root]))
			if sugg == "" {
				sugg = fmt.Sprintf(" Declare it with %s %q { ... }, or reference one of: %s.", root, step.Name, strings.Join(declNames(l.decls[root]), ", "))
				if len(l.decls[root]) == 0 {
					sugg = fmt.Sprintf(" Declare it with %s %q { ... }.", root, step.Name)
				}
			}
			l.errorf(rng, "Reference to undeclared "+root, "No %s named %q is declared.%s", root, step.Name, sugg)
			return false
		}
		if !sc.allows(root) {
			l.errorf(rng, "Invalid reference to "+root, "%s cannot refer to %s blocks here. %s", upperFirst(sc.where), root, allowedText(sc))
			return false
		}
		return l.checkKey(t, root, step.Name, d)
	default:
		if !knownRoots[root] {
			var names []string
			for n := range knownRoots {
				names = append(names, n)
			}
			sort.Strings(names)
			l.errorf(t.SourceRange().Ptr(), "Unknown variable", "There is no variable named %q.%s References start with one of: %s.", root, didYouMean(root, names), strings.Join(names, ", "))
			return false
		}
	}
	return true
}

var knownRoots = map[string]bool{"var": true, "local": true, "path": true, "each": true, "count": true,
	"host": true, "rxe": true, "siw": true, "rdma": true, "capture": true, "workload": true, "result": true}

// checkKey checks a literal instance key (host.server["ana"], rxe.a[0])
// against the instances of a block already expanded, so a misspelt student
// gets a suggestion rather than HCL's bare "Invalid index".
func (l *loader) checkKey(t hcl.Traversal, blockType, label string, d *decl) bool {
	if len(t) < 3 {
		return true
	}
	idx, ok := t[2].(hcl.TraverseIndex)
	keys, expanded := l.keys[blockType][label]
	if !ok || !expanded || !idx.Key.IsKnown() || idx.Key.IsNull() {
		return true
	}
	rng := hcl.RangeBetween(t[0].SourceRange(), idx.SrcRange)
	if !d.repeated {
		l.errorf(&rng, "Unexpected instance key", "%s.%s has no count or for_each, so it has no instances to index; write %s.%s.", blockType, label, blockType, label)
		return false
	}
	var key string
	switch {
	case idx.Key.Type() == cty.String:
		key = idx.Key.AsString()
	case idx.Key.Type() == cty.Number:
		key = idx.Key.AsBigFloat().Text('f', -1)
	default:
		return true
	}
	for _, k := range keys {
		if k == key {
			return true
		}
	}
	shown := keys
	if len(shown) > 10 {
		shown = append(append([]string(nil), shown[:10]...), "...")
	}
	how := "for_each"
	if d.countStyle {
		how = "count"
	}
	l.errorf(&rng, "No such instance", "%s.%s has no instance %q; its %s gives %s.%s", blockType, label, key, how, strings.Join(shown, ", "), didYouMean(key, keys))
	return false
}

func allowedText(sc *scope) string {
	if len(sc.blockTypes) == 0 {
		return "Only var, local and path are in scope."
	}
	var ks []string
	for _, k := range sc.blockTypes {
		ks = append(ks, k+".NAME")
	}
	return "References here may name " + strings.Join(ks, ", ") + "."
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func declNames(m map[string]*decl) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func mapKeys(m map[string]cty.Value) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// didYouMean returns ` Did you mean "x"?` for the closest candidate, or "".
func didYouMean(name string, candidates []string) string {
	best, bestD := "", maxSuggestGap+1
	for _, c := range candidates {
		if d := EditDistance(name, c); d < bestD {
			best, bestD = c, d
		}
	}
	if best == "" || bestD > maxSuggestGap || bestD >= len(name) {
		return ""
	}
	return fmt.Sprintf(" Did you mean %q?", best)
}

// EditDistance is the Levenshtein distance between a and b, in runes: what
// "did you mean" suggestions (here and in rlab's other commands) rank by.
func EditDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// value evaluates one attribute: references checked, then evaluated; a null
// or unknown result is reported. Optional attributes that are null never get
// here: unsetNulls drops them first.
func (l *loader) value(a *hcl.Attribute, sc *scope) (cty.Value, bool) {
	v, ok := l.valueOrNull(a, sc)
	if ok && v.IsNull() {
		l.errorf(a.Expr.Range().Ptr(), "Null value for "+a.Name, "%q must have a value; remove the argument to use its default.", a.Name)
		return cty.NilVal, false
	}
	return v, ok
}

// unsetNulls returns content without the attributes whose value in ctx is
// null: as in Terraform, null leaves an argument unset, so its default
// applies (jump = var.direct ? null : host.bastion). A required argument set
// to null is reported as missing. An attribute that cannot be evaluated in
// ctx yet (it names a kind decoded later, or has an error) is kept: its
// evaluation reports it. count and for_each are not arguments of the block
// and are kept (null there is an error).
func (l *loader) unsetNulls(content *hcl.BodyContent, schema *hcl.BodySchema, ctx *hcl.EvalContext) *hcl.BodyContent {
	if content == nil {
		return nil
	}
	out := *content
	out.Attributes = hcl.Attributes{}
	for n, a := range content.Attributes {
		if n == "count" || n == "for_each" || !isNull(a.Expr, ctx) {
			out.Attributes[n] = a
			continue
		}
		for _, as := range schema.Attributes {
			if as.Name == n && as.Required {
				l.errorf(a.Expr.Range().Ptr(), "Missing required argument", "The argument %q is required, but its value is null, which leaves it unset. Give it a value.", n)
			}
		}
	}
	return &out
}

// isNull reports whether expr evaluates in ctx, without error, to null.
func isNull(expr hcl.Expression, ctx *hcl.EvalContext) bool {
	if lit, ok := expr.(*hclsyntax.LiteralValueExpr); ok {
		return lit.Val.IsNull()
	}
	if _, ok := expr.(*hclsyntax.TemplateExpr); ok {
		return false // a string
	}
	v, diags := expr.Value(ctx)
	return !diags.HasErrors() && v.IsKnown() && v.IsNull()
}

// valueOrNull is value, with null a valid result.
func (l *loader) valueOrNull(a *hcl.Attribute, sc *scope) (cty.Value, bool) {
	if !l.checkRefs(a.Expr, sc) {
		return cty.NilVal, false
	}
	v, diags := a.Expr.Value(sc.ctx)
	l.add(diags...)
	if diags.HasErrors() {
		return cty.NilVal, false
	}
	if !v.IsWhollyKnown() {
		// Unknown only follows an error reported elsewhere (e.g. a missing
		// required variable).
		return cty.NilVal, false
	}
	// A budget spent earlier has refused the lab already: the value is
	// kept, so that the rest is checked as before.
	if le, ok := l.budget.chargeHeld(a, v).(*limitError); ok {
		l.add(le.diagnostic())
		return cty.NilVal, false
	}
	return v, true
}

func (l *loader) typed(a *hcl.Attribute, sc *scope, t cty.Type) (cty.Value, bool) {
	v, ok := l.value(a, sc)
	if !ok {
		return v, false
	}
	cv, err := convert.Convert(v, t)
	if err != nil {
		l.errorf(a.Expr.Range().Ptr(), "Incorrect attribute value type", "Inappropriate value for attribute %q: %s is required, not %s.", a.Name, article(t), article(v.Type()))
		return cty.NilVal, false
	}
	return cv, true
}

func article(t cty.Type) string {
	n := t.FriendlyName()
	if strings.IndexByte("aeiou", n[0]) >= 0 {
		return "an " + n
	}
	return "a " + n
}

func (l *loader) evalString(a *hcl.Attribute, ctx *hcl.EvalContext) (string, bool) {
	return l.str(a, &scope{ctx: ctx, where: "this block"})
}

func (l *loader) evalBool(a *hcl.Attribute, ctx *hcl.EvalContext) (bool, bool) {
	return l.boolean(a, &scope{ctx: ctx, where: "this block"})
}

func (l *loader) str(a *hcl.Attribute, sc *scope) (string, bool) {
	v, ok := l.typed(a, sc, cty.String)
	if !ok {
		return "", false
	}
	return v.AsString(), true
}

func (l *loader) boolean(a *hcl.Attribute, sc *scope) (bool, bool) {
	v, ok := l.typed(a, sc, cty.Bool)
	if !ok {
		return false, false
	}
	return v.True(), true
}

// integer evaluates a whole number in [lo, hi].
func (l *loader) integer(a *hcl.Attribute, sc *scope, lo, hi int64) (int64, bool) {
	v, ok := l.typed(a, sc, cty.Number)
	if !ok {
		return 0, false
	}
	f := v.AsBigFloat()
	n, acc := f.Int64()
	if !f.IsInt() || acc != big.Exact || n < lo || n > hi {
		l.errorf(a.Expr.Range().Ptr(), "Invalid value for "+a.Name, "%q must be a whole number from %d to %d; got %s.", a.Name, lo, hi, f.Text('g', -1))
		return 0, false
	}
	return n, true
}

// sizeValue reads a byte size from a number or a string with a unit.
func (l *loader) sizeValue(v cty.Value, rng *hcl.Range, name string) (int64, bool) {
	var n int64
	var err error
	switch {
	case v.IsNull() || !v.IsKnown():
		err = fmt.Errorf("no value")
	case v.Type() == cty.Number:
		n, err = sizeFromNumber(v.AsBigFloat())
	case v.Type() == cty.String:
		n, err = ParseSize(v.AsString())
	default:
		err = fmt.Errorf("a size is a number of bytes or a string like \"64KiB\", not %s", article(v.Type()))
	}
	if err == nil && n <= 0 {
		err = fmt.Errorf("a size must be more than 0 bytes")
	}
	if err != nil {
		l.errorf(rng, "Invalid size", "%s: %s. Write a whole number of bytes or a string like \"4096\", \"64KiB\", \"1GiB\".", name, err)
		return 0, false
	}
	return n, true
}

func (l *loader) size(a *hcl.Attribute, sc *scope) (int64, bool) {
	v, ok := l.value(a, sc)
	if !ok {
		return 0, false
	}
	return l.sizeValue(v, a.Expr.Range().Ptr(), a.Name)
}

func (l *loader) duration(a *hcl.Attribute, sc *scope) (time.Duration, bool) {
	v, ok := l.value(a, sc)
	if !ok {
		return 0, false
	}
	var d time.Duration
	var err error
	if v.Type() != cty.String {
		err = fmt.Errorf("a duration is a string with a unit, like \"30s\"")
	} else {
		d, err = ParseDuration(v.AsString())
	}
	if err == nil && d <= 0 {
		err = fmt.Errorf("a duration must be more than zero")
	}
	if err != nil {
		l.errorf(a.Expr.Range().Ptr(), "Invalid duration", "%s: %s.", a.Name, err)
		return 0, false
	}
	return d, true
}

func (l *loader) strList(a *hcl.Attribute, sc *scope) ([]string, bool) {
	v, ok := l.typed(a, sc, cty.List(cty.String))
	if !ok {
		return nil, false
	}
	var out []string
	rs := toolopts.ElemRanges(a.Expr, v.LengthInt())
	for i, e := range v.AsValueSlice() {
		if e.IsNull() {
			l.errorf(rs[i].Ptr(), "Null value in list", "Element %d of %q is null; every element must be a string.", i, a.Name)
			return nil, false
		}
		out = append(out, e.AsString())
	}
	return out, true
}

// resultAttrsText lists what result.* has for a diagnostic: the tool's
// metrics by name, then the kernel counters (dozens for RDMA tools) by a
// few names and where the rest are described.
func resultAttrsText(attrs []string) string {
	var own, counters []string
	for _, a := range attrs {
		if _, ok := results.CounterByName(a); ok {
			counters = append(counters, a)
		} else {
			own = append(own, a)
		}
	}
	text := strings.Join(own, ", ")
	if len(counters) > 0 {
		text += fmt.Sprintf("; and the kernel counters of its devices (%s, ... %d in all: labs/README.md, \"Counters: what the stack saw\")",
			strings.Join(counters[:min(4, len(counters))], ", "), len(counters))
	}
	return text
}
