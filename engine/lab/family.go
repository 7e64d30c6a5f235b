package lab

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/rlab-dev/rlab/kinds"
	"github.com/zclconf/go-cty/cty"
)

// A family's own workload attributes. The engine decodes the attributes
// every workload has (workloadSchema); the rest of the block (hcl's remain
// body) goes to the tool's family when it decodes attributes of its own
// (BodyDecoder: program's server_command, ready and metric blocks; exec's
// metric blocks), as Packer and Nomad hand a block's rest to its kind.

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

// workloadSchemaFamily is the common schema without command, which a
// family that decodes its own (program's one-sided form, with self.*)
// reads itself.
var workloadSchemaFamily = func() *hcl.BodySchema {
	s := &hcl.BodySchema{Blocks: workloadSchema.Blocks}
	for _, a := range workloadSchema.Attributes {
		if a.Name != "command" {
			s.Attributes = append(s.Attributes, a)
		}
	}
	return s
}()

// decodeFamily hands what the common schema left to the tool's family, or
// reports it as unsupported with the names a workload block takes.
func (l *loader) decodeFamily(b *hcl.Block, remain hcl.Body, w *Workload, tool Tool, oneHost bool, sc *scope) {
	dec, ok := decoderOf(w.Tool)
	if !ok {
		names := []string{}
		for _, a := range workloadSchema.Attributes {
			names = append(names, a.Name)
		}
		l.contentNamed(remain, &hcl.BodySchema{}, append(names, "expect"))
		return
	}
	if tool.HostOrPair {
		_, remain, _ = b.Body.PartialContent(workloadSchemaFamily)
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
	l.add(ds...)
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
		if w.ServerRXE != nil {
			add("server_device")
			add("gid_index")
		}
		if w.ClientRXE != nil {
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

// refKindOf is the kind of a reference value (host, rxe, ...), "" when it
// is none.
func refKindOf(v cty.Value) string {
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
