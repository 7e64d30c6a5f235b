package lab

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/rlab-dev/rlab/engine/results"
	"github.com/rlab-dev/rlab/kinds"
	"github.com/zclconf/go-cty/cty"
)

// The workload block and its expect blocks: their schemas and decoders.
// workloadSchema is what every workload has; the options only some tools
// take are their family's (family.go).

var workloadSchema = &hcl.BodySchema{
	Attributes: append([]hcl.AttributeSchema{
		{Name: "tool"}, {Name: "server"}, {Name: "client"}, {Name: "host"}, {Name: "timeout"}, {Name: "repeat"},
	}, metaSchema...),
	Blocks: []hcl.BlockHeaderSchema{{Type: "expect"}},
}

func (l *loader) decodeWorkloads(blocks []*hcl.Block) {
	l.workloadByName = map[string]*Workload{}
	objs := map[string][]keyedObj{}
	for _, b := range blocks {
		label := b.Labels[0]
		if d := l.decls["workload"][label]; d == nil || d.block != b {
			continue
		}
		content, remain := l.partialContent(b.Body, workloadSchema)
		ctx := l.baseCtx().NewChild()
		ctx.Variables = l.deviceObjs
		sc := &scope{ctx: ctx, where: "a workload block", blockTypes: []string{"host", "rxe", "siw", "rdma"}}
		for _, in := range l.expand(label, content, sc) {
			l.enter(in)
			w := l.decodeWorkload(b, l.unsetNulls(content, workloadSchema, in.sc.ctx), remain, in)
			w.Index = len(l.lab.Workloads)
			l.workloadByName[w.Name] = w
			l.lab.Workloads = append(l.lab.Workloads, w)
			objs[label] = append(objs[label], keyedObj{in.key, refObject("workload", w.Name, map[string]cty.Value{
				"tool": cty.StringVal(w.Tool),
			})})
		}
	}
	l.workloadObjs = map[string]cty.Value{
		"host": l.deviceObjs["host"], "rxe": l.deviceObjs["rxe"], "siw": l.deviceObjs["siw"], "rdma": l.deviceObjs["rdma"],
		"workload": collect(l.decls["workload"], objs),
	}
	l.recordKeys("workload", objs)
}

func (l *loader) decodeWorkload(b *hcl.Block, content *hcl.BodyContent, remain hcl.Body, in instance) *Workload {
	w := &Workload{Workload: kinds.Workload{Name: in.name, Slug: in.slug, Options: kinds.Options{Timeout: DefaultTimeout, Repeat: 1}}, Range: b.DefRange}
	attrs := content.Attributes
	sc := in.sc
	ta := attrs["tool"]
	if ta == nil {
		l.errorf(b.DefRange.Ptr(), "Missing tool", "Workload %s needs tool = one of: %s.", w.Name, strings.Join(ToolNames(), ", "))
		l.checkToolless(attrs, remain, sc)
		return w
	}
	name, ok := l.str(ta, sc)
	if !ok {
		l.checkToolless(attrs, remain, sc)
		return w
	}
	tool, ok := LookupTool(name)
	if !ok {
		l.errorf(ta.Expr.Range().Ptr(), "Unsupported tool", "%q is not a workload tool.%s The tools are: %s.", name, didYouMean(name, ToolNames()), strings.Join(ToolNames(), ", "))
		l.checkToolless(attrs, remain, sc)
		return w
	}
	w.Tool = name

	notFor := func(attr, why string) {
		if a := attrs[attr]; a != nil {
			l.errorf(a.NameRange.Ptr(), "Argument not valid for "+name, "%s %s", attr, why)
		}
	}
	// Sides.
	oneHost := tool.OneHost || (tool.HostOrPair && attrs["host"] != nil)
	switch {
	case oneHost && tool.HostOrPair:
		notFor("server", "runs the program between server and client; on host it runs one command. Keep host, or server and client.")
		notFor("client", "runs the program between server and client; on host it runs one command. Keep host, or server and client.")
		if v, ok := l.value(attrs["host"], sc); ok {
			if n, ok := l.resolveRef(attrs["host"], v, "host", "host"); ok {
				w.Host = l.hostByName[n]
			}
		}
	case tool.OneHost:
		notFor("server", "is not an exec argument; exec runs one command on host.")
		notFor("client", "is not an exec argument; exec runs one command on host.")
		if a := attrs["host"]; a == nil {
			l.errorf(b.DefRange.Ptr(), "Missing host", "An exec workload needs host = host.NAME, the host to run the command on.")
		} else if v, ok := l.value(a, sc); ok {
			if n, ok := l.resolveRef(a, v, "host", "host"); ok {
				w.Host = l.hostByName[n]
			}
		}
	default:
		notFor("host", fmt.Sprintf("is only for exec workloads; %s runs between server and client.", name))
		kind := "host"
		if tool.RDMA {
			kind = "rxe"
		}
		if tool.HostOrPair {
			kind = "host, rxe"
		}
		for _, side := range []string{"server", "client"} {
			a := attrs[side]
			if a == nil {
				l.errorf(b.DefRange.Ptr(), "Missing "+side, "%s runs between two sides; set %s = %s.NAME.", name, side, kind)
				continue
			}
			v, ok := l.value(a, sc)
			if !ok {
				continue
			}
			refKind := kind
			device := tool.RDMA || (tool.HostOrPair && refBlockOf(v) != "host")
			if device {
				refKind = deviceRefBlock(v) // rxe.X, siw.X or rdma.X
			} else if tool.HostOrPair {
				refKind = "host"
			}
			n, ok := l.resolveRef(a, v, refKind, side+" of "+name)
			if !ok {
				continue
			}
			if device {
				r := l.deviceByName[n]
				if r == nil {
					continue
				}
				if side == "server" {
					w.ServerDevice, w.ServerHost = r, r.Host
				} else {
					w.ClientDevice, w.ClientHost = r, r.Host
				}
			} else if side == "server" {
				w.ServerHost = l.hostByName[n]
			} else {
				w.ClientHost = l.hostByName[n]
			}
		}
	}

	// The tool's own options (its family's), then the common ones.
	opts, remain := l.decodeOptions(b, remain, w, tool, sc)
	if a := attrs["timeout"]; a != nil {
		if d, ok := l.duration(a, sc); ok {
			w.Timeout = d
		}
	}
	if a := attrs["repeat"]; a != nil {
		if n, ok := l.integer(a, sc, 1, defaultRepeatLimit); ok {
			w.Repeat = int(n)
		}
	}
	l.decodeFamily(b, remain, w, tool, oneHost, sc)
	l.checkIWARP(w, b, attrs, opts, remain) // after the family's: a program's needs
	for _, eb := range content.Blocks {
		if e := l.decodeExpect(eb, w, sc); e != nil {
			w.Expects = append(w.Expects, e)
		}
	}
	return w
}

// checkToolless reports what is wrong in a workload block whose tool is
// missing or unknown, as far as it can be told without the tool: undeclared
// references, and values that are no size, duration, number or list for any
// tool that takes them. The tool's own rules (which arguments, which sides)
// wait for a known tool; an unknown tool does not hide the block's other
// errors.
func (l *loader) checkToolless(attrs hcl.Attributes, remain hcl.Body, sc *scope) {
	var inOrder []*hcl.Attribute // source order, so the diagnostics read top to bottom
	for _, a := range attrs {
		inOrder = append(inOrder, a)
	}
	own, _ := remain.JustAttributes() // a block in it (metric) is not checked here
	for _, a := range own {
		inOrder = append(inOrder, a)
	}
	sort.Slice(inOrder, func(i, j int) bool { return inOrder[i].Range.Start.Byte < inOrder[j].Range.Start.Byte })
	ev := evaluator{l, sc}
	for _, a := range inOrder {
		switch a.Name {
		case "server", "client", "host":
			l.value(a, sc)
		case "timeout":
			l.duration(a, sc)
		case "repeat":
			l.integer(a, sc, 1, defaultRepeatLimit)
		case "count", "for_each", "tool":
		default:
			if o, ok := anyOption(a.Name); ok && o.Check != nil {
				o.Check(ev, a)
			} else if ok {
				l.value(a, sc)
			}
		}
	}
}

var expectSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "condition", Required: true}, {Name: "message"}}}

// ResultAttrs lists the attributes result.* has in an expect condition of
// the given tool: its metrics' names (the names of results.json, summary.md,
// the report and rlab compare), plus size and repeat.
func ResultAttrs(tool string) []string {
	var out []string
	for _, n := range results.ToolMetrics(tool) {
		if m, ok := results.MetricByName(n); ok {
			out = append(out, m.Name)
		}
	}
	return append(out, "size", "repeat")
}

// resultAliases maps the older expect names of the tool's metrics (e.g.
// bw_avg_gbps) to their metric's name. They are still read, with a warning.
func resultAliases(tool string) map[string]string {
	out := map[string]string{}
	for _, n := range results.ToolMetrics(tool) {
		if m, ok := results.MetricByName(n); ok {
			for _, a := range m.Aliases {
				out[a.Name] = m.Name
			}
		}
	}
	return out
}

func (l *loader) decodeExpect(b *hcl.Block, w *Workload, sc *scope) *Expect {
	content := l.unsetNulls(l.content(b.Body, expectSchema), expectSchema, sc.ctx)
	ca := content.Attributes["condition"]
	if ca == nil || w.Tool == "" {
		return nil
	}
	aliases := resultAliases(w.Tool)
	attrs := append(ResultAttrs(w.Tool), metricNames(w)...)
	for a := range aliases {
		attrs = append(attrs, a)
	}
	e := &Expect{Condition: ca.Expr, Range: b.DefRange, ctx: sc.ctx, attrs: attrs}
	// The run writes the condition's source text for each instance and
	// size (results.json, report.html, the terminal), and a comment inside
	// it is text too: (result.exit_code == 0 /* 1 MiB */) in 10,000
	// instances loaded from a 1 MiB lab and was 10 GB of text to write
	// after the evaluation guard. Charged as a value the instance holds
	// (chargeHeld, SECURITY 163).
	if rng := ca.Expr.Range(); rng.End.Byte > rng.Start.Byte {
		if le, ok := l.budget.charge("the text of condition", rng.Ptr(), 0, int64(rng.End.Byte-rng.Start.Byte)).(*limitError); ok {
			l.add(le.diagnostic())
			return nil
		}
	}
	if a := content.Attributes["message"]; a != nil {
		e.Message, _ = l.str(a, sc)
	}
	esc := *sc
	esc.result = append(ResultAttrs(w.Tool), metricNames(w)...)
	esc.resultAliases = aliases
	if !l.checkRefs(ca.Expr, &esc) || !l.checkUnits(ca.Expr, w, sc.ctx) {
		return nil
	}
	// Evaluate once with unknown numbers to catch type errors now.
	unknown := map[string]cty.Value{}
	for _, n := range attrs {
		unknown[n] = cty.UnknownVal(cty.Number)
	}
	_, diags := e.Eval(unknown)
	var errs hcl.Diagnostics
	for _, d := range diags {
		if d.Summary != "Expect condition not decided" {
			errs = append(errs, d)
		}
	}
	l.add(errs...)
	if errs.HasErrors() {
		return nil
	}
	return e
}

// Eval evaluates the condition against a result object (attribute name to
// value; see ResultAttrs). Missing attributes are null, so a condition over a
// metric the run did not record is an error, not a silent pass.
func (e *Expect) Eval(result map[string]cty.Value) (bool, hcl.Diagnostics) {
	ctx := e.ctx
	if ctx == nil {
		ctx = &hcl.EvalContext{}
	}
	full := map[string]cty.Value{}
	for _, a := range e.attrs {
		full[a] = cty.NullVal(cty.Number)
	}
	for k, v := range result {
		full[k] = v
	}
	child := ctx.NewChild()
	child.Variables = map[string]cty.Value{"result": objOrEmpty(full)}
	v, diags := e.Condition.Value(child)
	if diags.HasErrors() {
		return false, diags
	}
	rng := e.Condition.Range()
	if v.IsNull() {
		return false, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid expect condition", Detail: "The condition is null; it must be true or false.", Subject: &rng}}
	}
	if !v.IsKnown() {
		if v.Type() == cty.Bool || v.Type() == cty.DynamicPseudoType {
			return false, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Expect condition not decided", Detail: "The condition depends on a result value that is missing.", Subject: &rng}}
		}
	}
	if v.Type() != cty.Bool {
		return false, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid expect condition", Detail: fmt.Sprintf("The condition must be true or false; it is %s. Compare a result, like result.bw_avg > 1.", article(v.Type())), Subject: &rng}}
	}
	return v.True(), nil
}
