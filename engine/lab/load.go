package lab

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/rlab-dev/rlab/engine/rundir"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/rlab-dev/rlab/kinds"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
)

// Bounds on input: lab files are written by hand, so anything past these is
// a mistake (or hostile), and rejecting it early keeps the loader fast.
const (
	MaxFileBytes  = 4 << 20 // one lab file
	MaxNesting    = 128     // brackets, braces and parentheses
	MaxInstances  = 10000   // instances of one block (count / for_each)
	maxSuggestGap = 3       // edit distance for "did you mean"
)

var rootSchema = &hcl.BodySchema{
	Blocks: []hcl.BlockHeaderSchema{
		{Type: "lab", LabelNames: []string{"name"}},
		{Type: "variable", LabelNames: []string{"name"}},
		{Type: "locals"},
		{Type: "ssh"},
		{Type: "host", LabelNames: []string{"name"}},
		{Type: "rxe", LabelNames: []string{"name"}},
		{Type: "siw", LabelNames: []string{"name"}},
		{Type: "rdma", LabelNames: []string{"name"}},
		{Type: "capture", LabelNames: []string{"name"}},
		{Type: "workload", LabelNames: []string{"name"}},
		{Type: "group", LabelNames: []string{"name"}},
		{Type: "impair", LabelNames: []string{"name"}},
		{Type: "program", LabelNames: []string{"name"}},
	},
}

// loader holds the state of one Load call.
type loader struct {
	opts  LoadOptions
	lab   *Lab
	diags hcl.Diagnostics
	funcs map[string]function.Function
	// budget meters evaluation (budget.go); every parsed expression and
	// every function is metered against it.
	budget budget

	// duringPairs counts the workloads every capture and impairment
	// names in during, all blocks together (MaxDuringPairs).
	duringPairs int

	vars   map[string]cty.Value
	locals map[string]cty.Value
	// varObj and localObj are vars and locals as the objects an
	// expression sees, built once per size of the map (baseCtx): building
	// them for every expression made a lab of a few thousand locals cost
	// the square of that (6,000 one-line locals: 39 s in validate).
	varObj, localObj       cty.Value
	varObjLen, localObjLen int
	localSet               map[string]bool // localNames, to look up
	localNames             []string

	// Declarations by block type and label, for reference checks before evaluation.
	decls map[string]map[string]*decl
	// Instance keys by block type and label, once that type is expanded.
	keys map[string]map[string][]string

	hostObjs, deviceObjs, workloadObjs map[string]cty.Value
	hostByName                         map[string]*Host
	warnedRoot                         map[*Host]bool

	deviceByName   map[string]*Device
	workloadByName map[string]*Workload
	programByName  map[string]*kinds.Source
	programObjs    cty.Value // program.NAME objects, for program workloads

	// The instance being decoded, for diagnostics (see enter).
	instExpr hcl.Expression
	instCtx  *hcl.EvalContext
}

// decl is one labelled block before expansion.
type decl struct {
	blockType, name string
	block           *hcl.Block
	repeated        bool // has count or for_each
	countStyle      bool // count (tuple) rather than for_each (object)
}

func (l *loader) add(d ...*hcl.Diagnostic) {
	for _, x := range d {
		if x == nil {
			continue
		}
		if limitDiag(x) || x.Summary == EvalLimitSummary || l.budget.spent != nil && x.Summary == l.budget.spent.summary() && x.Detail == l.budget.spent.detail() {
			if l.budget.shown {
				continue // one overrun, reported once
			}
			l.budget.shown = true
		}
		suggestSorted(x)
		l.diags = append(l.diags, x)
	}
}

// hcl's own "did you mean" names the first name within two edits in map
// order, so one lab was told "pow" on one load and "log" on the next, "ra"
// was told "rxe" and then "rdma" (both found by FuzzLoad). suggestSorted
// gives its unknown-function and unknown-variable diagnostics rlab's
// suggestion instead: the closest name, the first in sorted order of
// equals. rlab's own "Unknown variable" (refs.go) already suggests that way
// and says more after it, so the patterns leave it alone.
var (
	unknownFuncRe = regexp.MustCompile(`^There is no function named "([^"]*)"\.(?: Did you mean "[^"]*"\?)?$`)
	unknownVarRe  = regexp.MustCompile(`^There is no variable named "([^"]*)"\.(?: Did you mean "[^"]*"\?)?$`)
)

func suggestSorted(d *hcl.Diagnostic) {
	if d == nil || d.EvalContext == nil {
		return
	}
	re, what := unknownFuncRe, "function"
	switch d.Summary {
	case "Call to unknown function":
	case "Unknown variable":
		re, what = unknownVarRe, "variable"
	default:
		return
	}
	m := re.FindStringSubmatch(d.Detail)
	if m == nil {
		return
	}
	var names []string
	for ctx := d.EvalContext; ctx != nil; ctx = ctx.Parent() {
		if what == "function" {
			for n := range ctx.Functions {
				names = append(names, n)
			}
		} else {
			for n := range ctx.Variables {
				names = append(names, n)
			}
		}
	}
	sort.Strings(names)
	d.Detail = fmt.Sprintf("There is no %s named %q.", what, m[1]) + didYouMean(m[1], names)
}

func (l *loader) errorf(subj *hcl.Range, summary, detail string, args ...any) {
	l.add(&hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: fmt.Sprintf(detail, args...), Subject: subj,
		Expression: l.instExpr, EvalContext: l.instCtx})
}

// warnf is errorf for a warning.
func (l *loader) warnf(subj *hcl.Range, summary, detail string, args ...any) {
	l.add(&hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: summary, Detail: fmt.Sprintf(detail, args...), Subject: subj,
		Expression: l.instExpr, EvalContext: l.instCtx})
}

// Load parses one file or a folder of *.hcl, evaluates variables, locals,
// for_each and count, resolves references and validates. lab is nil only when
// the files could not be parsed at all.
func Load(paths []string, opts LoadOptions) (*Lab, hcl.Diagnostics) {
	l := &loader{
		opts: opts,
		lab:  &Lab{Files: map[string][]byte{}},
	}
	files := l.readFiles(paths)
	if l.diags.HasErrors() || len(files) == 0 {
		return nil, l.diags
	}
	l.funcs = l.budget.meterFuncs(functions(l.lab.Dir))
	l.decode(files)
	return l.lab, dedupe(l.diags)
}

// dedupe drops repeats of one diagnostic (same severity, summary, detail
// and range), which for_each and count produce once per instance, and folds
// the instances of one problem into one diagnostic: the same severity,
// summary and range with a detail that differs only by the instance (the
// host it names) is said once, with the other instances' keys after it. A
// class of 24 VMs with one mistake in its host block gets one warning.
func dedupe(diags hcl.Diagnostics) hcl.Diagnostics {
	seen := map[string]bool{}
	first := map[string]int{}  // severity, summary, range -> index in out
	more := map[int][]string{} // index in out -> the other instances' keys
	firstKey := map[int]string{}
	out := diags[:0:0]
	for _, d := range diags {
		k := fmt.Sprintf("%d\x00%s\x00%s\x00%v", d.Severity, d.Summary, d.Detail, d.Subject)
		if seen[k] {
			continue
		}
		seen[k] = true
		if key, ok := instanceKey(d); ok && d.Subject != nil {
			fk := fmt.Sprintf("%d\x00%s\x00%v", d.Severity, d.Summary, d.Subject)
			// Only other instances fold: two problems of one instance at
			// one range are both said.
			if i, dup := first[fk]; dup && !slices.Contains(more[i], key) && key != firstKey[i] {
				more[i] = append(more[i], key)
				continue
			} else if !dup {
				first[fk] = len(out)
				firstKey[len(out)] = key
			}
		}
		out = append(out, d)
	}
	for i, keys := range more {
		d := *out[i]
		shown := keys
		if len(shown) > 5 {
			shown = shown[:5]
		}
		list := strings.Join(shown, ", ")
		if len(keys) > len(shown) {
			list += fmt.Sprintf(" and %d more", len(keys)-len(shown))
		}
		d.Detail += fmt.Sprintf(" The same for %d other instance(s) of this block: %s.", len(keys), list)
		out[i] = &d
	}
	return out
}

// instanceKey is the for_each key (quoted) or count index of the instance a
// diagnostic is about (enter), if it names one.
func instanceKey(d *hcl.Diagnostic) (string, bool) {
	if d.EvalContext == nil {
		return "", false
	}
	for ctx := d.EvalContext; ctx != nil; ctx = ctx.Parent() {
		if v, ok := ctx.Variables["each"]; ok && v.Type().IsObjectType() && v.Type().HasAttribute("key") {
			if k := v.GetAttr("key"); k.Type() == cty.String && k.IsKnown() && !k.IsNull() {
				return strconv.Quote(k.AsString()), true
			}
		}
		if v, ok := ctx.Variables["count"]; ok && v.Type().IsObjectType() && v.Type().HasAttribute("index") {
			if k := v.GetAttr("index"); k.Type() == cty.Number && k.IsKnown() && !k.IsNull() {
				return k.AsBigFloat().Text('f', 0), true
			}
		}
	}
	return "", false
}

// LoadSource loads one lab file given as bytes, as Load does with a path
// (name is used in diagnostics); file() reads relative to dir.
func LoadSource(name string, src []byte, dir string, opts LoadOptions) (*Lab, hcl.Diagnostics) {
	l := loadSource(name, src, dir, opts)
	if l.lab == nil {
		return nil, l.diags
	}
	return l.lab, dedupe(l.diags)
}

// loadSource is LoadSource with the loader kept, for tests of its budget;
// l.lab is nil when the file did not parse.
func loadSource(name string, src []byte, dir string, opts LoadOptions) *loader {
	l := &loader{opts: opts, lab: &Lab{Files: map[string][]byte{}, Dir: dir}}
	f := l.parse(name, src)
	if f == nil || l.diags.HasErrors() {
		l.lab = nil
		return l
	}
	l.funcs = l.budget.meterFuncs(functions(dir))
	l.decode([]parsedFile{*f})
	return l
}

type parsedFile struct {
	name string
	body hcl.Body
	file *hcl.File
}

func (l *loader) readFiles(paths []string) []parsedFile {
	var names []string
	inFolder := map[string]bool{}
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			l.errorf(nil, "Cannot read lab", "Could not read %s: %s. Give a lab file or a folder of *.hcl files.", p, err)
			continue
		}
		if l.lab.Dir == "" {
			l.lab.Dir = p
			if !st.IsDir() {
				l.lab.Dir = filepath.Dir(p)
			}
		}
		if !st.IsDir() {
			names = append(names, p)
			continue
		}
		m, _ := filepath.Glob(filepath.Join(p, "*.hcl"))
		sort.Strings(m)
		if len(m) == 0 {
			l.errorf(nil, "No lab files", "The folder %s has no *.hcl files. Give a lab file or a folder holding one.", p)
		}
		names = append(names, m...)
		for _, n := range m {
			inFolder[n] = true
		}
	}
	var out []parsedFile
	for _, n := range names {
		// A file named directly may be a pipe (<(cmd)); one found in a
		// folder must be a regular file: a FIFO named *.hcl hung the load,
		// a symlink to /dev/zero took all memory. Both read bounded.
		//
		// And a file of the lab stays in its folder, as file()'s do
		// (promise 38): a course repository's labs/x.hcl could be a
		// symlink to ~/.git-credentials or /proc/self/environ, and the
		// parse error of validate, plan or graph showed its lines.
		read := readBounded
		switch {
		case l.opts.Confined:
			read = rundir.ReadPath
		case inFolder[n] || symlinkToRegular(n):
			read = readInFolder
		}
		src, err := read(n)
		if err != nil {
			l.errorf(nil, "Cannot read lab file", "Could not read %s: %s.", n, err)
			continue
		}
		if f := l.parse(n, src); f != nil {
			out = append(out, *f)
		}
	}
	return out
}

// ParseSource parses one lab file's bytes, with the bounds rlab applies
// before HCL sees the text.
func (l *loader) parse(name string, src []byte) *parsedFile {
	l.lab.Files[name] = src
	start := hcl.Range{Filename: name, Start: hcl.InitialPos, End: hcl.Pos{Line: 1, Column: 1, Byte: 0}}
	if len(src) > MaxFileBytes {
		l.errorf(&start, "Lab file too large", "%s has %d bytes; a lab file may have at most %d. Split it, or read bulk data with file() and jsondecode().", name, len(src), MaxFileBytes)
		return nil
	}
	if i := bytes.IndexByte(src, 0); i >= 0 {
		r := rangeAt(name, src, i)
		l.errorf(&r, "Lab file is not text", "%s holds a NUL byte, so it is binary, not an HCL lab file.", name)
		return nil
	}
	if !utf8.Valid(src) {
		i := 0
		for i < len(src) {
			r, n := utf8.DecodeRune(src[i:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			i += n
		}
		r := rangeAt(name, src, i)
		l.errorf(&r, "Invalid UTF-8", "Lab files must be UTF-8; the byte 0x%02x here is not. Re-save the file as UTF-8.", src[i])
		return nil
	}
	if i := tooDeep(src); i >= 0 {
		r := rangeAt(name, src, i)
		l.errorf(&r, "Nesting too deep", "Brackets, braces and parentheses nest more than %d levels here. Flatten the expression, or use locals.", MaxNesting)
		return nil
	}
	if i := tooManyTokens(src); i >= 0 {
		r := rangeAt(name, src, i)
		l.errorf(&r, TokensSummary, "%s", tokensDetail(name))
		return nil
	}
	hz := lexHazards(name, src)
	if r := hz.number; r != nil {
		l.errorf(r, NumberLimitSummary, "%s", numberDetail("this number"))
		return nil
	}
	if r := hz.unary; r != nil {
		l.errorf(r, UnarySummary, "More than %d unary operators (! and -) stand in a row here; hcl's parser goes one level deeper for each. Write the expression without them.", MaxNesting)
		return nil
	}
	if r := hz.literal; r != nil {
		l.errorf(r, LiteralRunSummary, "A template here has %d literal parts that each follow another (lines of a heredoc, or pieces a string's $${ or %%%%{ cuts it into; interpolations between them do not end the count), which hcl's parser takes time quadratic in. Read long text with file().", MaxLiteralRun)
		return nil
	}
	f, diags := hclsyntax.ParseConfig(src, name, hcl.InitialPos)
	if diags.HasErrors() {
		for _, d := range diags {
			hintTemplatedLabel(d, src)
		}
		l.add(syntaxErrors(diags)...)
		return nil
	}
	l.add(diags...)
	if body, ok := f.Body.(*hclsyntax.Body); ok {
		l.budget.meterExprs(body)
	}
	return &parsedFile{name: name, body: f.Body, file: f}
}

var networkLabelRe = regexp.MustCompile(`(?:^|[\s{])network\s+"[^"]*$`)

// hintTemplatedLabel says what to write instead of a template in a network
// block's label (network "pair-${each.key}"), the first thing an instructor
// tries for one network per student: HCL's own message only says templates
// are not allowed there.
func hintTemplatedLabel(d *hcl.Diagnostic, src []byte) {
	if d.Summary != "Invalid string literal" || d.Subject == nil || d.Subject.Start.Byte > len(src) {
		return
	}
	before := src[:d.Subject.Start.Byte]
	if i := bytes.LastIndexByte(before, '\n'); i >= 0 {
		before = before[i+1:]
	}
	if networkLabelRe.Match(before) {
		d.Detail += ` A block label is a literal. To name a VM's network from the lab's values, label the block and set its name: network "pair" { name = "pair-${each.key}" }.`
	}
}

// syntaxErrors orders syntax diagnostics by position and keeps the first of
// each kind: after an unclosed quote or brace the parser reports the same
// error on every following line, which would bury the real ones.
func syntaxErrors(diags hcl.Diagnostics) hcl.Diagnostics {
	ds := append(hcl.Diagnostics(nil), diags...)
	sort.SliceStable(ds, func(i, j int) bool {
		a, b := ds[i].Subject, ds[j].Subject
		return a != nil && (b == nil || a.Start.Byte < b.Start.Byte)
	})
	seen := map[string]bool{}
	var out hcl.Diagnostics
	for _, d := range ds {
		if !seen[d.Summary] {
			seen[d.Summary] = true
			out = append(out, d)
		}
	}
	return out
}

// tooDeep returns the offset where bracket nesting first passes MaxNesting,
// or -1. It ignores quoting: a string with that many open brackets is as
// unlikely in a lab as it is harmless to reject.
func tooDeep(src []byte) int {
	depth := 0
	for i, c := range src {
		switch c {
		case '(', '[', '{':
			depth++
			if depth > MaxNesting {
				return i
			}
		case ')', ']', '}':
			if depth > 0 {
				depth--
			}
		}
	}
	return -1
}

// rangeAt returns a one-byte range at offset off of src.
func rangeAt(name string, src []byte, off int) hcl.Range {
	line, col := 1, 1
	for i := 0; i < off && i < len(src); {
		_, n := utf8.DecodeRune(src[i:])
		if src[i] == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
		i += n
	}
	p := hcl.Pos{Line: line, Column: col, Byte: off}
	e := p
	if off < len(src) {
		e = hcl.Pos{Line: line, Column: col + 1, Byte: off + 1}
	}
	return hcl.Range{Filename: name, Start: p, End: e}
}

// decode runs the phases: root blocks of every file; variables; locals;
// declarations; then hosts, rxe, workloads and captures, each evaluated with
// the objects of the kinds before it in scope.
func (l *loader) decode(files []parsedFile) {
	l.lab.meter = &l.budget
	byType := map[string][]*hcl.Block{}
	for _, f := range files {
		content := l.content(f.body, rootSchema)
		for _, b := range content.Blocks {
			byType[b.Type] = append(byType[b.Type], b)
		}
	}
	l.decodeVariables(byType["variable"])
	l.decodeLocals(byType["locals"])
	l.decodeLab(byType["lab"], files[0].name)
	l.declare(byType)
	defaults := l.decodeSSHDefaults(byType["ssh"])
	l.decodeHosts(byType["host"], defaults)
	l.instExpr, l.instCtx = nil, nil
	l.decodeDevices(byType)
	l.instExpr, l.instCtx = nil, nil
	l.decodePrograms(byType["program"]) // program.go
	l.decodeWorkloads(byType["workload"])
	l.instExpr, l.instCtx = nil, nil
	l.checkTrials()
	l.decodeCaptures(byType["capture"])
	l.instExpr, l.instCtx = nil, nil
	l.decodeImpairs(byType["impair"]) // impair.go
	l.instExpr, l.instCtx = nil, nil
	l.decodeGroups(byType["group"])
	l.instExpr, l.instCtx = nil, nil
	l.checkUnusedHosts()
	l.reportBudget()
}

func (l *loader) decodeLab(blocks []*hcl.Block, first string) {
	if len(blocks) == 0 {
		r := hcl.Range{Filename: first, Start: hcl.InitialPos, End: hcl.InitialPos}
		l.errorf(&r, "Missing lab block", `Every lab needs one block naming it, like lab "quickstart" { description = "..." }.`)
		return
	}
	for _, b := range blocks[1:] {
		l.errorf(b.DefRange.Ptr(), "Duplicate lab block", "A lab has one lab block; the first is at %s. Remove this one.", blocks[0].DefRange)
	}
	b := blocks[0]
	l.lab.Name = b.Labels[0]
	l.lab.Range = b.DefRange
	if !validName(b.Labels[0]) {
		l.errorf(b.LabelRanges[0].Ptr(), "Invalid lab name", "A lab name starts with a letter and holds letters, digits, '_' and '-'; it names the run folder.")
	}
	schema := &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "description"}}}
	content := l.unsetNulls(l.content(b.Body, schema), schema, l.baseCtx())
	if a := content.Attributes["description"]; a != nil {
		l.lab.Description, _ = l.evalString(a, l.baseCtx())
	}
}

// MaxTrials bounds the trials (runs of a tool: each size × each repeat) of
// all a lab's workloads together. The plan holds each trial's argv and the
// run its samples: 100,000 sizes × repeat 1,000 (a 589 KB lab, valid by
// every other rule) took `rlab plan` past 10 GB in a minute. A class of
// 200 pairs, each sweeping 20 sizes 5 times, is 20,000.
const MaxTrials = 100_000

// checkTrials refuses a lab whose workloads run more than MaxTrials trials
// in all, at the workload that passes it.
func (l *loader) checkTrials() {
	total := 0
	for _, w := range l.lab.Workloads {
		total += max(len(w.Sizes), 1) * max(w.Repeat, 1)
		if total > MaxTrials {
			l.errorf(w.Range.Ptr(), "Too many trials", "The lab's workloads run more than %d trials (one per size and repeat of each workload) by this one, %s (%d sizes, repeat %d); rlab holds every trial's command and results. Use fewer sizes or repeats, or split the lab.", MaxTrials, w.Name, len(w.Sizes), max(w.Repeat, 1))
			return
		}
	}
}

// checkUnusedHosts warns about hosts no rxe, capture or workload uses and
// no other host jumps through: usually a forgotten workload or a typo.
func (l *loader) checkUnusedHosts() {
	if l.diags.HasErrors() {
		return // an error is the likelier reason; say that first
	}
	used := map[*Host]bool{}
	for _, h := range l.lab.Hosts {
		for j := h.JumpHost; j != nil && !used[j]; j = j.JumpHost {
			used[j] = true
		}
	}
	for _, r := range l.lab.Devices {
		used[r.Host] = true
	}
	for _, c := range l.lab.Captures {
		used[c.Host] = true
	}
	for _, im := range l.lab.Impairs {
		used[im.Host] = true
	}
	for _, w := range l.lab.Workloads {
		for _, h := range w.Hosts() {
			used[h] = true
		}
	}
	warned := map[string]bool{}
	for _, h := range l.lab.Hosts {
		if used[h] || warned[h.Block] {
			continue
		}
		warned[h.Block] = true // once per block, not per instance
		l.add(&hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: UnusedHostSummary, Subject: h.Range.Ptr(),
			Detail: fmt.Sprintf("No rxe, capture or workload uses host %s, and no host jumps through it, so a run only connects to it. Use it, or remove it.", h.Name)})
	}
}

// UnusedHostSummary is the summary of the warning for a host nothing uses
// (commands about hosts alone, such as facts, leave it out).
const UnusedHostSummary = "Unused host"

// validName reports whether s is a valid HCL identifier (block labels that
// are referenced must be).
func validName(s string) bool { return hclsyntax.ValidIdentifier(s) }

// declare records every host, rxe, capture and workload label, reporting
// invalid and duplicate names, so references can be checked before any of
// them is evaluated.
func (l *loader) declare(byType map[string][]*hcl.Block) {
	l.decls = map[string]map[string]*decl{}
	devices := map[string]*decl{} // rxe, siw and rdma labels share one namespace
	for _, blockType := range []string{"host", "rxe", "siw", "rdma", "capture", "workload", "impair", "group", "program"} {
		l.decls[blockType] = map[string]*decl{}
		for _, b := range byType[blockType] {
			name := b.Labels[0]
			if !validName(name) {
				l.errorf(b.LabelRanges[0].Ptr(), "Invalid "+blockType+" name", "A %s name must start with a letter or '_' and hold only letters, digits, '_' and '-', so it can be referenced as %s.NAME.", blockType, blockType)
				continue
			}
			if prev := l.decls[blockType][name]; prev != nil {
				l.errorf(b.LabelRanges[0].Ptr(), "Duplicate "+blockType+" "+fmt.Sprintf("%q", name), "A %s named %q is already declared at %s. Names of %s blocks must be unique; rename one of them.", blockType, name, prev.block.DefRange, blockType)
				continue
			}
			if prev := devices[name]; prev != nil && prev.blockType != blockType && slices.Contains(DeviceBlocks, blockType) {
				l.errorf(b.LabelRanges[0].Ptr(), "Duplicate device name "+fmt.Sprintf("%q", name), "%s %q is declared at %s; rxe, siw and rdma blocks share one set of names, so a workload's server and client name one device. Rename one of them.", prev.blockType, name, prev.block.DefRange)
				continue
			}
			d := &decl{blockType: blockType, name: name, block: b}
			if slices.Contains(DeviceBlocks, blockType) {
				devices[name] = d
			}
			content, _, _ := b.Body.PartialContent(&hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "count"}, {Name: "for_each"}}})
			if content != nil {
				if content.Attributes["count"] != nil {
					d.repeated, d.countStyle = true, true
				}
				if content.Attributes["for_each"] != nil {
					d.repeated, d.countStyle = true, false
				}
			}
			l.decls[blockType][name] = d
		}
	}
}

// sortUnsupported puts a body's "Unsupported argument" diagnostics in file
// order, in the places they hold among the others: hclsyntax reports them
// ranging over a map, so the same lab listed them in a different order
// from one load to the next (found by FuzzLoad's determinism check).
func sortUnsupported(diags hcl.Diagnostics) {
	var at []int
	var ds hcl.Diagnostics
	for i, d := range diags {
		if d.Summary == "Unsupported argument" && d.Subject != nil {
			at = append(at, i)
			ds = append(ds, d)
		}
	}
	sort.SliceStable(ds, func(i, j int) bool { return ds[i].Subject.Start.Byte < ds[j].Subject.Start.Byte })
	for k, i := range at {
		diags[i] = ds[k]
	}
}

var unsupportedRe = regexp.MustCompile(`^(?:An argument named|Blocks of type) "([^"]+)" (?:is|are) not expected here\.$`)

// content is Body.Content with a "did you mean" added to unsupported
// argument and block diagnostics, from the schema's names.
func (l *loader) content(body hcl.Body, schema *hcl.BodySchema) *hcl.BodyContent {
	return l.contentNamed(body, schema, nil)
}

// contentNamed is content whose "did you mean" also offers names (what
// another part of the block takes).
func (l *loader) contentNamed(body hcl.Body, schema *hcl.BodySchema, names []string) *hcl.BodyContent {
	c, diags := body.Content(schema)
	sortUnsupported(diags)
	for _, a := range schema.Attributes {
		names = append(names, a.Name)
	}
	for _, b := range schema.Blocks {
		names = append(names, b.Type)
	}
	for _, d := range diags {
		if m := unsupportedRe.FindStringSubmatch(d.Detail); m != nil && !strings.Contains(d.Detail, "Did you mean") {
			if s := didYouMean(m[1], names); s != "" {
				d.Detail += s
			} else {
				d.Detail += " Valid names here: " + strings.Join(names, ", ") + "."
			}
		}
	}
	l.add(diags...)
	return c
}
