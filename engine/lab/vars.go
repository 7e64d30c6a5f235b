package lab

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	ctyjson "github.com/zclconf/go-cty/cty/json"
)

// EnvPrefix names environment variables that set lab variables:
// RLAB_VAR_user=alice sets var.user.
const EnvPrefix = "RLAB_VAR_"

// baseCtx is the scope every expression sees: var, local, path and the
// functions.
func (l *loader) baseCtx() *hcl.EvalContext {
	if l.localObj == cty.NilVal || l.localObjLen != len(l.locals) {
		l.localObj, l.localObjLen = objOrEmpty(l.locals), len(l.locals)
	}
	return l.ctxWithLocals(l.localObj)
}

// ctxWithLocals is baseCtx with local as the locals' object.
func (l *loader) ctxWithLocals(local cty.Value) *hcl.EvalContext {
	if l.varObj == cty.NilVal || l.varObjLen != len(l.vars) {
		l.varObj, l.varObjLen = objOrEmpty(l.vars), len(l.vars)
	}
	vars := map[string]cty.Value{
		"var":   l.varObj,
		"local": local,
		"path":  cty.ObjectVal(map[string]cty.Value{"lab": cty.StringVal(l.lab.Dir)}),
	}
	return &hcl.EvalContext{Variables: vars, Functions: l.funcs}
}

func objOrEmpty(m map[string]cty.Value) cty.Value {
	if len(m) == 0 {
		return cty.EmptyObjectVal
	}
	return cty.ObjectVal(m)
}

var variableSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "type"}, {Name: "default"}, {Name: "description"}, {Name: "sensitive"}},
	Blocks:     []hcl.BlockHeaderSchema{{Type: "validation"}},
}

type varDecl struct {
	v          *Variable
	typ        cty.Type
	hasDefault bool
	valueRange *hcl.Range // where the value came from, for diagnostics
	validation []*hcl.Block
	// invalid: a value was given but could not be used (already
	// diagnosed), so the variable is not also "required".
	invalid bool
}

func (l *loader) decodeVariables(blocks []*hcl.Block) {
	l.vars, l.varObj = map[string]cty.Value{}, cty.NilVal
	decls := map[string]*varDecl{}
	var order []string
	for _, b := range blocks {
		name := b.Labels[0]
		if !validName(name) {
			l.errorf(b.LabelRanges[0].Ptr(), "Invalid variable name", "A variable name must start with a letter or '_' and hold only letters, digits, '_' and '-'.")
			continue
		}
		if prev := decls[name]; prev != nil {
			l.errorf(b.LabelRanges[0].Ptr(), fmt.Sprintf("Duplicate variable %q", name), "A variable named %q is already declared at %s. Remove or rename one of them.", name, prev.v.Range)
			continue
		}
		// default = null is a value (the variable is optional and null);
		// a null description or sensitive is unset.
		content := l.content(b.Body, variableSchema)
		def := content.Attributes["default"]
		content = l.unsetNulls(content, variableSchema, &hcl.EvalContext{Functions: l.funcs})
		if def != nil {
			content.Attributes["default"] = def
		}
		d := &varDecl{v: &Variable{Name: name, Range: b.DefRange}, typ: cty.DynamicPseudoType, validation: nil}
		if a := content.Attributes["type"]; a != nil {
			t, diags := typeexpr.TypeConstraint(a.Expr)
			l.add(diags...)
			if !diags.HasErrors() {
				d.typ = t
			}
		}
		d.v.Type = d.typ
		if a := content.Attributes["description"]; a != nil {
			d.v.Description, _ = l.evalString(a, &hcl.EvalContext{Functions: l.funcs})
		}
		if a := content.Attributes["sensitive"]; a != nil {
			d.v.Sensitive, _ = l.evalBool(a, &hcl.EvalContext{Functions: l.funcs})
		}
		if a := content.Attributes["default"]; a != nil {
			if d.v.Sensitive {
				l.lab.Hidden = append(l.lab.Hidden, a.Expr.Range())
			}
			d.hasDefault = true // even when invalid: its error is reported
			v, diags := a.Expr.Value(&hcl.EvalContext{Functions: l.funcs})
			l.add(diags...)
			if !diags.HasErrors() {
				if cv, ok := l.convertVar(d, v, a.Expr.Range().Ptr()); ok {
					d.v.Value, d.v.Source = cv, "default"
					d.valueRange = a.Expr.Range().Ptr()
				}
			}
		}
		for _, vb := range content.Blocks {
			d.validation = append(d.validation, vb)
		}
		decls[name] = d
		order = append(order, name)
	}

	// Sources in rising precedence: environment, var files, -var.
	for _, kv := range l.opts.Env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(k, EnvPrefix) {
			continue
		}
		name := strings.TrimPrefix(k, EnvPrefix)
		if d := decls[name]; d != nil { // like Terraform, unknown env vars are ignored
			l.setRaw(d, v, "env", EnvPrefix+name)
		}
	}
	for _, vf := range l.opts.VarFiles {
		l.readVarFile(vf, decls)
	}
	keys := make([]string, 0, len(l.opts.Vars))
	for k := range l.opts.Vars {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		d := decls[k]
		if d == nil {
			l.errorf(nil, "Value for undeclared variable", "A -var was given for %q, but the lab declares no such variable.%s Declare it with variable %q { }, or drop the -var.", k, didYouMean(k, order), k)
			continue
		}
		l.setRaw(d, l.opts.Vars[k], "var", "-var "+k)
	}

	sensitive := 0 // bytes of l.lab.Sensitive
	for _, name := range order {
		d := decls[name]
		if d.v.Source == "" && !d.hasDefault && !d.invalid {
			l.errorf(d.v.Range.Ptr(), "No value for required variable", "Variable %q has no default. Give it one, or set it with -var %s=VALUE, a -var-file, or %s%s.", name, name, EnvPrefix, name)
			d.v.Value = cty.UnknownVal(d.typ)
		}
		if d.v.Source == "" {
			d.v.Value = cty.UnknownVal(d.typ)
		}
		l.vars[name] = d.v.Value
		l.lab.Variables = append(l.lab.Variables, d.v)
		if d.v.Sensitive && d.v.Value.IsWhollyKnown() {
			vals := leafStrings(d.v.Value)
			for _, v := range vals {
				sensitive += len(v)
			}
			if sensitive > MaxSensitiveBytes {
				l.errorf(d.v.Range.Ptr(), "Sensitive values too large", "The lab's sensitive values, this variable's included, hold more than %d bytes together. rlab looks for each of them, in every encoding it writes, in everything it stores or shows, and the matcher grows with them (a 5 MB value held rlab report for minutes in 10 GB). A password, a token or a key is a few kilobytes: keep large data out of sensitive variables, in a file the host reads.", MaxSensitiveBytes)
			} else {
				l.lab.Sensitive = append(l.lab.Sensitive, vals...)
			}
		}
	}
	for _, name := range order {
		l.checkValidations(decls[name])
	}
}

// convertVar converts v to the variable's type.
func (l *loader) convertVar(d *varDecl, v cty.Value, rng *hcl.Range) (cty.Value, bool) {
	// Checked before the conversion (a number written out as a string is
	// as long as its exponent) and after it (text read as a number).
	if hugeValue(v, false, MaxEvalOps) {
		d.invalid = true
		l.errorf(rng, NumberLimitSummary, "%s", numberDetail(fmt.Sprintf("the value for variable %q", d.v.Name)))
		return cty.NilVal, false
	}
	if typeHasSet(d.typ) && crowdedDeep(v) {
		d.invalid = true
		l.errorf(rng, SetLimitSummary, "%s", setDetail(fmt.Sprintf("the value for variable %q", d.v.Name)))
		return cty.NilVal, false
	}
	cv, err := convert.Convert(v, d.typ)
	if err == nil && hugeValue(cv, false, MaxEvalOps) {
		d.invalid = true
		l.errorf(rng, NumberLimitSummary, "%s", numberDetail(fmt.Sprintf("the value for variable %q", d.v.Name)))
		return cty.NilVal, false
	}
	if err != nil {
		d.invalid = true
		l.errorf(rng, "Invalid value for variable", "The value for variable %q is not a %s: %s.", d.v.Name, d.typ.FriendlyName(), err)
		return cty.NilVal, false
	}
	return cv, true
}

// setRaw sets a variable from a command-line or environment string: taken
// literally for string variables, parsed as an HCL expression otherwise (as
// Terraform does).
func (l *loader) setRaw(d *varDecl, raw, source, what string) {
	shown := raw
	if d.v.Sensitive {
		shown = "(sensitive)"
	}
	var v cty.Value
	switch {
	case d.typ == cty.String || d.typ == cty.DynamicPseudoType:
		v = cty.StringVal(raw)
	case d.typ.IsPrimitiveType():
		// A number or bool is read from the string, as Terraform does:
		// n=abc is "not a number", not an expression naming a variable.
		if longDigits(raw) {
			d.invalid = true
			l.errorf(nil, NumberLimitSummary, "%s", numberDetail(fmt.Sprintf("the value %s for variable %q", what, d.v.Name)))
			return
		}
		cv, err := convert.Convert(cty.StringVal(raw), d.typ)
		if err != nil {
			d.invalid = true
			l.errorf(nil, "Invalid value for variable", "The value %s=%q for variable %q is not a %s.", what, shown, d.v.Name, d.typ.FriendlyName())
			return
		}
		v = cv
	default:
		if tooDeep([]byte(raw)) >= 0 || longUnaryChain(what, []byte(raw)) != nil {
			d.invalid = true
			l.errorf(nil, "Nesting too deep", "The value %s for variable %q nests brackets, braces, parentheses or unary operators more than %d levels. Flatten the value.", what, d.v.Name, MaxNesting)
			return
		}
		expr, diags := hclsyntax.ParseExpression([]byte(raw), what, hcl.InitialPos)
		if diags.HasErrors() {
			d.invalid = true
			l.errorf(nil, "Invalid value for variable", "The value %s=%q for variable %q is not a valid %s expression: %s.", what, shown, d.v.Name, d.typ.FriendlyName(), diags[0].Summary)
			return
		}
		l.budget.meterExprs(expr)
		var vd hcl.Diagnostics
		v, vd = expr.Value(&hcl.EvalContext{Functions: l.funcs})
		if vd.HasErrors() {
			d.invalid = true
			l.errorf(nil, "Invalid value for variable", "The value %s=%q for variable %q is not a %s: %s", what, shown, d.v.Name, d.typ.FriendlyName(), strings.TrimSuffix(vd[0].Detail, "."))
			return
		}
	}
	if cv, ok := l.convertVar(d, v, nil); ok {
		d.v.Value, d.v.Source, d.valueRange = cv, source, nil
	}
}

func (l *loader) readVarFile(path string, decls map[string]*varDecl) {
	// A variables file holds secrets as the user wrote them, and a typo
	// on a secret's line (a quote left open, two values on a line) made
	// a syntax error that quoted the line: its diagnostics give the
	// position, summary and detail, never its lines (attack round 15).
	defer l.hideSource(path, len(l.diags))
	src, err := readBounded(path)
	if err != nil {
		l.errorf(nil, "Cannot read variable file", "Could not read -var-file %s: %s.", path, err)
		return
	}
	if len(src) > MaxFileBytes {
		l.errorf(nil, "Variable file too large", "-var-file %s has more than %d bytes, the bound of a lab file. Keep variables files to values a lab uses; read bulk data in the lab with file() and jsondecode().", path, MaxFileBytes)
		return
	}
	// Both parsers recurse once per bracket: 2 million of them (4 MB)
	// overflowed the stack, a fatal error after 1-2 GB.
	if i := tooDeep(src); i >= 0 {
		r := rangeAt(path, src, i)
		l.errorf(&r, "Nesting too deep", "Brackets, braces and parentheses nest more than %d levels here in -var-file %s. Flatten the value.", MaxNesting, path)
		return
	}
	if strings.EqualFold(filepath.Ext(path), ".json") {
		if jsonLongDigits(src) {
			l.errorf(nil, NumberLimitSummary, "%s", numberDetail("-var-file "+path))
			return
		}
		ty, err := ctyjson.ImpliedType(src)
		if err != nil {
			l.errorf(nil, "Invalid variable file", "-var-file %s is not valid JSON: %s.", path, err)
			return
		}
		v, err := ctyjson.Unmarshal(src, ty)
		if err != nil || !v.Type().IsObjectType() {
			l.errorf(nil, "Invalid variable file", "-var-file %s must hold one JSON object of variable values.", path)
			return
		}
		var undeclared []string
		for name, val := range v.AsValueMap() {
			d := decls[name]
			if d == nil {
				undeclared = append(undeclared, name)
				continue
			}
			if cv, ok := l.convertVar(d, val, nil); ok {
				d.v.Value, d.v.Source, d.valueRange = cv, "var-file", nil
			}
		}
		sort.Strings(undeclared)
		l.warnUndeclared(path, undeclared, nil, decls)
		return
	}
	// As a lab file: hcl lexes it whole first (a JSON one is decoded as
	// jsondecode of a lab's file() is, without hcl's lexer).
	if i := tooManyTokens(src); i >= 0 {
		r := rangeAt(path, src, i)
		l.errorf(&r, TokensSummary, "%s", tokensDetail("-var-file "+path))
		return
	}
	hz := lexHazards(path, src)
	if r := hz.number; r != nil {
		l.errorf(r, NumberLimitSummary, "%s", numberDetail("this number"))
		return
	}
	if r := hz.unary; r != nil {
		l.errorf(r, UnarySummary, "More than %d unary operators (! and -) stand in a row here in -var-file %s; hcl's parser goes one level deeper for each.", MaxNesting, path)
		return
	}
	if r := hz.literal; r != nil {
		l.errorf(r, LiteralRunSummary, "A template here in -var-file %s has %d literal parts that each follow another, which hcl's parser takes time quadratic in. Keep long text out of variables files.", path, MaxLiteralRun)
		return
	}
	f, diags := hclsyntax.ParseConfig(src, path, hcl.InitialPos)
	if diags.HasErrors() {
		l.add(diags[0])
		return
	}
	if body, ok := f.Body.(*hclsyntax.Body); ok {
		l.budget.meterExprs(body) // a variables file computes as a lab does
	}
	attrs, diags := f.Body.JustAttributes()
	l.add(diags...)
	names := make([]string, 0, len(attrs))
	for n := range attrs {
		names = append(names, n)
	}
	sort.Strings(names)
	var undeclared []string
	var first *hcl.Range
	for _, n := range names {
		a := attrs[n]
		d := decls[n]
		if d == nil {
			undeclared = append(undeclared, n)
			if first == nil || a.NameRange.Start.Byte < first.Start.Byte {
				first = a.NameRange.Ptr()
			}
			continue
		}
		v, diags := a.Expr.Value(&hcl.EvalContext{Functions: l.funcs})
		l.add(diags...)
		if diags.HasErrors() {
			continue
		}
		// A sensitive value's diagnostics point at its declaration, not
		// at the file: its source lines hold the value as written, which
		// the output's redactor misses when a long line is cut, a heredoc
		// is shown a line at a time, or the value is not of the type and
		// never became sensitive (attack round 14).
		rng := a.Expr.Range().Ptr()
		if d.v.Sensitive {
			rng = nil
		}
		if cv, ok := l.convertVar(d, v, rng); ok {
			d.v.Value, d.v.Source, d.valueRange = cv, "var-file", rng
		}
	}
	l.warnUndeclared(path, undeclared, first, decls)
}

// maxUndeclaredNamed is how many undeclared names the warning lists.
const maxUndeclaredNamed = 10

// warnUndeclared warns once per variables file about the values it sets
// for variables the lab does not declare (a warning, as in Terraform: one
// variables file often serves several labs), naming the first few in sorted
// order with a "did you mean": one warning per value was quadratic to print
// (each one's source line found from the file's start) and buried the rest
// (3,000 values took 28 s; a million, 2.2 GB).
func (l *loader) warnUndeclared(path string, names []string, subj *hcl.Range, decls map[string]*varDecl) {
	if len(names) == 0 {
		return
	}
	declared := make([]string, 0, len(decls))
	for n := range decls {
		declared = append(declared, n)
	}
	sort.Strings(declared)
	var b strings.Builder
	if len(names) == 1 {
		fmt.Fprintf(&b, "-var-file %s sets %q, but the lab declares no such variable, so it is ignored.%s", path, names[0], didYouMean(names[0], declared))
	} else {
		fmt.Fprintf(&b, "-var-file %s sets %d values the lab declares no variable for, so they are ignored:", path, len(names))
		for _, n := range names[:min(len(names), maxUndeclaredNamed)] {
			fmt.Fprintf(&b, "\n  %q", n)
			if s := didYouMean(n, declared); s != "" {
				b.WriteString(" (" + strings.TrimSpace(s) + ")")
			}
		}
		if len(names) > maxUndeclaredNamed {
			fmt.Fprintf(&b, "\n  and %d more", len(names)-maxUndeclaredNamed)
		}
	}
	// The warning names the file, line and column of the first value,
	// never its source line: that line holds the value, which may be a
	// secret the lab does not declare (it never became sensitive).
	// Terraform's warning quotes it; rlab's shows the position only.
	l.add(&hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: "Value for undeclared variable", Subject: subj, Detail: b.String(), Extra: NoSource{}})
}

var validationSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
	{Name: "condition", Required: true}, {Name: "error_message", Required: true},
}}

func (l *loader) checkValidations(d *varDecl) {
	for _, vb := range d.validation {
		content := l.content(vb.Body, validationSchema)
		cond, msgAttr := content.Attributes["condition"], content.Attributes["error_message"]
		if cond == nil || msgAttr == nil {
			continue
		}
		ok := true
		for _, t := range cond.Expr.Variables() {
			if t.RootName() != "var" || len(t) < 2 {
				l.errorf(t.SourceRange().Ptr(), "Invalid reference in variable validation", "A validation condition may refer only to the variable it validates, var.%s.", d.v.Name)
				ok = false
				continue
			}
			if a, isAttr := t[1].(hcl.TraverseAttr); !isAttr || a.Name != d.v.Name {
				l.errorf(t.SourceRange().Ptr(), "Invalid reference in variable validation", "A validation condition may refer only to the variable it validates, var.%s.", d.v.Name)
				ok = false
			}
		}
		if !ok || !d.v.Value.IsWhollyKnown() {
			continue
		}
		ctx := &hcl.EvalContext{
			Variables: map[string]cty.Value{"var": cty.ObjectVal(map[string]cty.Value{d.v.Name: d.v.Value})},
			Functions: l.funcs,
		}
		res, diags := cond.Expr.Value(ctx)
		l.add(diags...)
		if diags.HasErrors() {
			continue
		}
		res, err := convert.Convert(res, cty.Bool)
		if err != nil || res.IsNull() || !res.IsKnown() {
			l.errorf(cond.Expr.Range().Ptr(), "Invalid validation condition", "The condition must be true or false.")
			continue
		}
		if res.False() {
			msg, _ := l.evalString(msgAttr, &hcl.EvalContext{Functions: l.funcs})
			subj := d.valueRange
			if subj == nil {
				subj = d.v.Range.Ptr()
			}
			l.errorf(subj, "Invalid value for variable", "%s\n\nThis was checked by the validation rule at %s.", msg, cond.Range)
		}
	}
}

// MaxSensitiveBytes bounds a lab's sensitive values together (SECURITY
// 181): each is matched in about 50 encodings (redactForms), and the
// matcher's size and build time grow with them all, where a received run
// directory's lab chooses them (a 5 MB default of "<", whose encodings
// are up to nine times as long, took rlab report 600 MB with
// strings.Replacer, past 10 GB with the linear Replacer). Passwords,
// tokens and keys, a few kilobytes each, fit many times over.
const MaxSensitiveBytes = 32 << 10

// leafStrings lists the string forms of every primitive in v, for redaction.
func leafStrings(v cty.Value) []string {
	if v.IsNull() || !v.IsKnown() {
		return nil
	}
	t := v.Type()
	switch {
	case t == cty.String:
		if s := v.AsString(); s != "" {
			return []string{s}
		}
	case t == cty.Number:
		return []string{v.AsBigFloat().Text('f', -1)}
	case t.IsListType() || t.IsSetType() || t.IsTupleType() || t.IsMapType() || t.IsObjectType():
		var out []string
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			out = append(out, leafStrings(e)...)
		}
		return out
	}
	return nil
}

// decodeLocals evaluates every local value in dependency order.
func (l *loader) decodeLocals(blocks []*hcl.Block) {
	l.locals, l.localObj = map[string]cty.Value{}, cty.NilVal
	attrs := map[string]*hcl.Attribute{}
	var names []string
	for _, b := range blocks {
		as, diags := b.Body.JustAttributes()
		l.add(diags...)
		var bn []string
		for n := range as {
			bn = append(bn, n)
		}
		sort.Slice(bn, func(i, j int) bool { return as[bn[i]].Range.Start.Byte < as[bn[j]].Range.Start.Byte })
		for _, n := range bn {
			if prev := attrs[n]; prev != nil {
				l.errorf(as[n].NameRange.Ptr(), fmt.Sprintf("Duplicate local value %q", n), "A local value named %q is already defined at %s. Rename or remove one of them.", n, prev.NameRange)
				continue
			}
			attrs[n] = as[n]
			names = append(names, n)
		}
	}
	l.localNames = names
	l.localSet = make(map[string]bool, len(names))
	for _, n := range names {
		l.localSet[n] = true
	}
	state := map[string]int{} // 0 new, 1 in progress, 2 done
	var visit func(n string, path []string)
	visit = func(n string, path []string) {
		switch state[n] {
		case 2:
			return
		case 1:
			a := attrs[n]
			l.errorf(a.NameRange.Ptr(), "Cycle in local values", "local.%s depends on itself: %s. Break the cycle.", n, strings.Join(append(path, "local."+n), " -> "))
			l.locals[n] = cty.DynamicVal
			state[n] = 2
			return
		}
		state[n] = 1
		a := attrs[n]
		var uses []string
		for _, t := range a.Expr.Variables() {
			if t.RootName() != "local" || len(t) < 2 {
				continue
			}
			ta, ok := t[1].(hcl.TraverseAttr)
			if !ok {
				continue
			}
			if attrs[ta.Name] == nil {
				continue // checkRefs reports it
			}
			visit(ta.Name, append(path, "local."+n))
			uses = append(uses, ta.Name)
		}
		if state[n] == 2 { // set by a cycle report
			return
		}
		if l.checkRefs(a.Expr, &scope{where: "locals"}) {
			// Only the locals it names: all of them, for each of
			// thousands, is the square of their number.
			seen := make(map[string]cty.Value, len(uses))
			for _, u := range uses {
				seen[u] = l.locals[u]
			}
			v, diags := a.Expr.Value(l.ctxWithLocals(objOrEmpty(seen)))
			l.add(diags...)
			if diags.HasErrors() {
				v = cty.DynamicVal
			}
			l.locals[n] = v
		} else {
			l.locals[n] = cty.DynamicVal
		}
		state[n] = 2
	}
	for _, n := range names {
		visit(n, nil)
	}
}

// readInFolder reads a lab file that must be a regular file, opened
// non-blocking (a FIFO does not wait for a writer) and checked, within its
// folder: opened through an os.Root of the folder, so a symlink (or ..)
// that leads out of it is refused, naming the way out.
func readInFolder(path string) ([]byte, error) {
	dir := filepath.Dir(path)
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	f, err := root.OpenFile(filepath.Base(path), os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if strings.Contains(err.Error(), "escapes") {
			return nil, fmt.Errorf("it is a symlink out of the lab's folder %s: rlab reads a lab's files only within its folder, as file() does (a lab from a course repository could name any file of yours); copy the file into the folder", dir)
		}
		return nil, err
	}
	defer f.Close()
	return readOpenRegular(f)
}

// ReadLabFile reads a lab file as Load reads one found in a folder: a
// regular file within its folder (no symlink out of it, no FIFO or
// device), at most MaxFileBytes+1 bytes. rlab fmt reads the files it
// rewrites so.
func ReadLabFile(path string) ([]byte, error) { return readInFolder(path) }

// symlinkToRegular reports whether path is a symlink to a regular file: a
// lab file named directly is read within its folder then, while one that
// is a pipe (<(cmd), /dev/fd/N) is read as it is.
func symlinkToRegular(path string) bool {
	lst, err := os.Lstat(path)
	if err != nil || lst.Mode()&os.ModeSymlink == 0 {
		return false
	}
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

// readOpenRegular reads f, opened non-blocking, if it is a regular file:
// at most MaxFileBytes+1 bytes.
func readOpenRegular(f *os.File) ([]byte, error) {
	if st, err := f.Stat(); err != nil {
		return nil, err
	} else if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file (%s)", st.Mode().Type())
	}
	return io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
}

// hideSource marks the diagnostics from the from'th on whose subject is in
// file as NoSource, so they are printed without file's lines.
func (l *loader) hideSource(file string, from int) {
	for _, d := range l.diags[min(from, len(l.diags)):] {
		if d.Subject != nil && d.Subject.Filename == file {
			d.Extra = NoSource{}
		}
	}
}
