package lab

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/rlab-dev/rlab/kinds"
	"github.com/rlab-dev/rlab/kinds/toolopts"
	"github.com/zclconf/go-cty/cty"
)

// A family's own workload attributes. The engine decodes the attributes
// every workload has (workloadSchema: tool, server, client, host, timeout,
// repeat, expect, count, for_each); the rest of the block (hcl's remain
// body) is the tool's family's, as Packer and Nomad hand a block's rest to
// its kind, in two abilities of its registered kinds.Kind value:
// toolopts.Taker names the options its tools take (sizes, iterations,
// duration, qps, bytes, transport, args, exec's command, or one of its
// own), each with its rules, which the engine decodes here with its own
// evaluation (references checked, file:line:col); BodyDecoder decodes what
// is left itself (program's commands and ready, exec's and program's
// metric blocks). An argument no ability takes is reported with a "did you
// mean" over the engine's and the family's names, or, when other tools
// take it, as not valid for this tool, naming those tools.

// BodyDecoder is a family that decodes workload attributes of its own
// (implemented by its registered kinds.Kind value).
type BodyDecoder interface {
	// Attributes names what it decodes (for "did you mean").
	Attributes() []string
	// DecodeWorkload decodes body (what the common schema left) into w. ctx
	// holds the workload's scope plus self (kinds.SelfRef placeholders) and
	// program (the program blocks); oneHost: the lab set host rather than
	// server and client; def is the block's definition range.
	DecodeWorkload(body hcl.Body, ctx *hcl.EvalContext, w *kinds.Workload, oneHost bool, def hcl.Range) hcl.Diagnostics
}

// decoderOf returns the family decoder of a tool, if it has one.
func decoderOf(tool string) (BodyDecoder, bool) {
	k, ok := kinds.KindOf(tool)
	if !ok {
		return nil, false
	}
	d, ok := k.(BodyDecoder)
	return d, ok
}

// partialContent is content that keeps what the schema does not name, for
// the tool's family.
func (l *loader) partialContent(body hcl.Body, schema *hcl.BodySchema) (*hcl.BodyContent, hcl.Body) {
	c, remain, diags := body.PartialContent(schema)
	l.add(diags...)
	return c, remain
}

// evaluator is toolopts.Eval over the loader, in a workload's scope.
type evaluator struct {
	l  *loader
	sc *scope
}

func (e evaluator) Value(a *hcl.Attribute) (cty.Value, bool)        { return e.l.value(a, e.sc) }
func (e evaluator) Str(a *hcl.Attribute) (string, bool)             { return e.l.str(a, e.sc) }
func (e evaluator) Size(a *hcl.Attribute) (int64, bool)             { return e.l.size(a, e.sc) }
func (e evaluator) Duration(a *hcl.Attribute) (time.Duration, bool) { return e.l.duration(a, e.sc) }
func (e evaluator) StrList(a *hcl.Attribute) ([]string, bool)       { return e.l.strList(a, e.sc) }
func (e evaluator) Integer(a *hcl.Attribute, lo, hi int64) (int64, bool) {
	return e.l.integer(a, e.sc, lo, hi)
}
func (e evaluator) SizeValue(v cty.Value, rng *hcl.Range, name string) (int64, bool) {
	return e.l.sizeValue(v, rng, name)
}
func (e evaluator) Errorf(rng *hcl.Range, summary, detail string, args ...any) {
	e.l.errorf(rng, summary, detail, args...)
}

// optionsOf returns the options tool takes beyond the common ones (its
// family's toolopts.Taker), nil when its family takes none.
func optionsOf(t Tool) []toolopts.Option {
	k, ok := kinds.KindOf(t.Name)
	if !ok {
		return nil
	}
	if tk, ok := k.(toolopts.Taker); ok {
		return tk.Options(t)
	}
	return nil
}

// takers returns, by option name, the tools that take it, sorted.
func takers() map[string][]string {
	out := map[string][]string{}
	for _, t := range kinds.All() {
		for _, o := range optionsOf(t) {
			out[o.Name] = append(out[o.Name], t.Name)
		}
		if dec, ok := decoderOf(t.Name); ok {
			for _, n := range dec.Attributes() {
				if !slices.Contains(out[n], t.Name) {
					out[n] = append(out[n], t.Name)
				}
			}
		}
	}
	for _, ts := range out {
		sort.Strings(ts)
	}
	return out
}

// anyOption returns an option named n that some tool takes (for a block
// whose tool is missing or unknown).
func anyOption(n string) (toolopts.Option, bool) {
	for _, t := range kinds.All() {
		for _, o := range optionsOf(t) {
			if o.Name == n {
				return o, true
			}
		}
	}
	return toolopts.Option{}, false
}

// decodeOptions decodes the options the workload's tool takes from what the
// common schema left, in the family's order, and returns them (by name)
// and the rest of the block.
func (l *loader) decodeOptions(b *hcl.Block, remain hcl.Body, w *Workload, tool Tool, sc *scope) (hcl.Attributes, hcl.Body) {
	opts := optionsOf(tool)
	schema := &hcl.BodySchema{}
	for _, o := range opts {
		schema.Attributes = append(schema.Attributes, hcl.AttributeSchema{Name: o.Name})
	}
	c, rest := l.partialContent(remain, schema)
	attrs := l.unsetNulls(c, schema, sc.ctx).Attributes
	in := toolopts.In{Eval: evaluator{l, sc}, Tool: tool, W: &w.Workload, Attrs: attrs, Def: b.DefRange}
	for _, o := range opts {
		if a := attrs[o.Name]; a != nil {
			o.Decode(in, a)
		} else if o.Absent != nil {
			o.Absent(in)
		}
	}
	return attrs, rest
}

// notTaken rewrites a family's "Unsupported argument" diagnostics: an
// argument set to null is unset (as everywhere in a lab) and dropped; one
// other tools take is not valid for this one (naming those tools and what
// this one takes); any other gets a "did you mean" over the names a
// workload of this tool takes and those of every tool.
func (l *loader) notTaken(ds hcl.Diagnostics, remain hcl.Body, ctx *hcl.EvalContext, tool string, common, own []string) hcl.Diagnostics {
	by := takers()
	all := []string{}
	for n := range by {
		all = append(all, n)
	}
	sort.Strings(all)
	given, _ := remain.JustAttributes()
	names := append(append([]string(nil), common...), own...)
	var out hcl.Diagnostics
	for _, d := range ds {
		m := unsupportedRe.FindStringSubmatch(d.Detail)
		if m == nil || strings.Contains(d.Detail, "Did you mean") {
			out = append(out, d)
			continue
		}
		if a := given[m[1]]; a != nil && d.Summary == "Unsupported argument" && isNull(a.Expr, ctx) {
			continue
		}
		out = append(out, d)
		if ts := by[m[1]]; len(ts) > 0 && d.Summary == "Unsupported argument" {
			d.Summary = "Argument not valid for " + tool
			d.Detail = fmt.Sprintf("%s is an option of %s, not of %s.", m[1], toolopts.OrList(ts), tool)
			if len(own) > 0 {
				d.Detail += fmt.Sprintf(" Besides the common ones, %s takes %s.", tool, strings.Join(own, ", "))
			}
			continue
		}
		// The closest name, this tool's first on a tie: "iteration" on
		// tcp is told iterations, which then says which tools take it.
		if s := didYouMean(m[1], append(append([]string(nil), names...), all...)); s != "" {
			d.Detail += s
		} else {
			d.Detail += " Valid names here: " + strings.Join(names, ", ") + "."
		}
	}
	return out
}

// decodeFamily hands what the common schema left to the tool's family, or
// reports it as unsupported with the names a workload block takes.
func (l *loader) decodeFamily(b *hcl.Block, remain hcl.Body, w *Workload, tool Tool, oneHost bool, sc *scope) {
	common := []string{}
	for _, a := range workloadSchema.Attributes {
		common = append(common, a.Name)
	}
	common = append(common, "expect")
	own := []string{}
	for _, o := range optionsOf(tool) {
		own = append(own, o.Name)
	}
	dec, ok := decoderOf(w.Tool)
	if !ok {
		_, ds := remain.Content(&hcl.BodySchema{})
		sortUnsupported(ds)
		l.add(l.notTaken(ds, remain, sc.ctx, w.Tool, common, own)...)
		return
	}
	ctx := sc.ctx.NewChild()
	ctx.Variables = map[string]cty.Value{"self": selfObject(w, oneHost), "program": l.programObjs}
	if l.programObjs == cty.NilVal {
		ctx.Variables["program"] = cty.EmptyObjectVal
	}
	// A family's Body.Content reports unsupported arguments in map order:
	// file order here too, so a lab's diagnostics are the same every load.
	ds := dec.DecodeWorkload(remain, ctx, &w.Workload, oneHost, b.DefRange)
	sortUnsupported(ds)
	l.add(l.notTaken(ds, remain, sc.ctx, w.Tool, common, append(own, dec.Attributes()...))...)
	if w.Program != nil {
		if s := l.programByName[w.Program.Name]; s != nil {
			w.Program = s
		} else {
			w.Program = nil
		}
	}
}

// selfObject is what self.* evaluates to while the lab loads: placeholders
// the run fills (kinds.ExpandSelf). size and iterations exist only when
// the workload gives them; the devices only when its sides are devices.
func selfObject(w *Workload, oneHost bool) cty.Value {
	m := map[string]cty.Value{}
	add := func(n string) { m[n] = cty.StringVal(kinds.SelfRef(n)) }
	add("port")
	if !oneHost {
		add("server_address")
		if w.ServerDevice != nil {
			add("server_device")
			add("gid_index")
		}
		if w.ClientDevice != nil {
			add("client_device")
			add("gid_index")
		}
	}
	if len(w.Sizes) > 0 {
		add("size")
	}
	if w.Iterations > 0 {
		add("iterations")
	}
	return cty.ObjectVal(m)
}

// refBlockOf is the block of a reference value (host, rxe, ...), "" when it
// is none.
func refBlockOf(v cty.Value) string {
	t := v.Type()
	if !t.IsObjectType() || !t.HasAttribute("kind") {
		return ""
	}
	k := v.GetAttr("kind")
	if k.Type() != cty.String || !k.IsKnown() || k.IsNull() {
		return ""
	}
	return k.AsString()
}

// metricNames are the names of a workload's metric blocks, for result.*.
func metricNames(w *Workload) []string {
	var out []string
	for _, m := range w.Metrics {
		out = append(out, m.Name)
	}
	return out
}
