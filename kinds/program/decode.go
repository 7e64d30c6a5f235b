package program

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/rlab-dev/rlab/kinds"
	"github.com/rlab-dev/rlab/kinds/internal/metricblock"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// The program workload's own attributes, decoded from the part of the block
// the engine's common schema leaves (engine/lab hands it over through its
// BodyDecoder hook). The common ones (tool, server, client, host, sizes,
// iterations, timeout, repeat, expect) the engine has decoded already.

var bodySchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "program"}, {Name: "server_command"}, {Name: "client_command"}, {Name: "command"}, {Name: "ready"}, {Name: "needs"}},
	Blocks:     []hcl.BlockHeaderSchema{metricblock.Schema},
}

// Attributes names what DecodeWorkload reads, for the engine's "did you
// mean" over a workload block.
func (Kind) Attributes() []string {
	return []string{"program", "server_command", "client_command", "command", "ready", "needs", "metric"}
}

// DecodeWorkload decodes a program workload's own attributes into w. ctx
// holds self (kinds.SelfRef placeholders) and program (the program blocks);
// oneHost says the lab set host (the one-sided form: command) rather than
// server and client.
func (Kind) DecodeWorkload(body hcl.Body, ctx *hcl.EvalContext, w *kinds.Workload, oneHost bool, def hcl.Range) hcl.Diagnostics {
	content, diags := body.Content(bodySchema)
	a := content.Attributes
	errf := func(r hcl.Range, summary, detail string, args ...any) {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: fmt.Sprintf(detail, args...), Subject: r.Ptr()})
	}
	if p := a["program"]; p == nil {
		errf(def, "Missing program", "A program workload needs program = program.NAME, the program block it runs.")
	} else {
		v, ds := p.Expr.Value(ctx)
		diags = append(diags, ds...)
		if !ds.HasErrors() {
			if n, ok := refName(v, "program"); ok {
				w.Program = &kinds.Source{Name: n}
			} else {
				errf(p.Expr.Range(), "Invalid reference", "program takes a reference such as program.NAME, the name of a program block.")
			}
		}
	}
	argv := func(name string) []string {
		at := a[name]
		if at == nil {
			return nil
		}
		v, ds := at.Expr.Value(ctx)
		diags = append(diags, ds...)
		if ds.HasErrors() {
			return nil
		}
		lv, err := convert.Convert(v, cty.List(cty.String))
		if err != nil || lv.IsNull() || !lv.IsWhollyKnown() {
			errf(at.Expr.Range(), "Invalid "+name, `%s is an argv list of strings, like ["./server", "${self.port}"]; it never goes through a shell.`, name)
			return nil
		}
		var out []string
		for _, e := range lv.AsValueSlice() {
			if e.IsNull() {
				errf(at.Expr.Range(), "Invalid "+name, "%s holds a null element.", name)
				return nil
			}
			out = append(out, e.AsString())
		}
		if len(out) == 0 || out[0] == "" {
			errf(at.Expr.Range(), "Empty "+name, `%s is an argv list whose first element is the program, like ["./server", "${self.port}"].`, name)
			return nil
		}
		return out
	}
	notHere := func(name, why string) {
		if at := a[name]; at != nil {
			errf(at.NameRange, "Argument not valid here", "%s %s", name, why)
		}
	}
	if oneHost {
		notHere("server_command", "is for a workload between server and client; on host, the program runs command.")
		notHere("client_command", "is for a workload between server and client; on host, the program runs command.")
		notHere("ready", "waits for a server; a program on host runs one command.")
		if a["command"] == nil {
			errf(def, "Missing command", `A program workload on host needs command, an argv list like ["./bench", "${self.size}"].`)
		}
		w.Command = argv("command")
	} else {
		notHere("command", "is the one-sided form's (with host); between server and client set server_command and client_command.")
		for _, n := range []string{"server_command", "client_command"} {
			if a[n] == nil {
				errf(def, "Missing "+n, `A program workload between server and client needs server_command and client_command, argv lists like ["./server", "${self.port}"].`)
			}
		}
		w.ServerCommand, w.ClientCommand = argv("server_command"), argv("client_command")
		if r := a["ready"]; r != nil {
			v, ds := r.Expr.Value(ctx)
			diags = append(diags, ds...)
			if !ds.HasErrors() {
				if v.Type() != cty.String || v.IsNull() || !v.IsKnown() {
					errf(r.Expr.Range(), "Invalid ready", "ready is a regular expression (RE2) the server prints once it serves, like \"listening\".")
				} else if _, err := kinds.CompileOutputMetric(v.AsString()); err != nil {
					errf(r.Expr.Range(), "Invalid ready", "ready is not an RE2 regular expression: %s.", err)
				} else {
					w.Ready = v.AsString()
				}
			}
		}
	}
	if at := a["needs"]; at != nil {
		w.Needs = decodeNeeds(at, ctx, &diags)
	}
	ms, ds := metricblock.Decode(content.Blocks, ctx, !oneHost)
	w.Metrics = ms
	return append(diags, ds...)
}

// decodeNeeds reads needs, a list of kinds.Needs names: the operations the
// program posts that not every device does (the lab refuses them on siw).
func decodeNeeds(at *hcl.Attribute, ctx *hcl.EvalContext, diags *hcl.Diagnostics) []string {
	v, ds := at.Expr.Value(ctx)
	*diags = append(*diags, ds...)
	if ds.HasErrors() {
		return nil
	}
	bad := func(detail string, args ...any) []string {
		*diags = append(*diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid needs", Detail: fmt.Sprintf(detail, args...), Subject: at.Expr.Range().Ptr()})
		return nil
	}
	lv, err := convert.Convert(v, cty.List(cty.String))
	if err != nil || lv.IsNull() || !lv.IsWhollyKnown() {
		return bad(`needs is a list of the RDMA operations the program posts that not every device does, from: %s; like ["write_with_imm"].`, strings.Join(kinds.NeedNames(), ", "))
	}
	var out []string
	for _, e := range lv.AsValueSlice() {
		if e.IsNull() {
			return bad("needs holds a null element.")
		}
		n := e.AsString()
		if _, ok := kinds.NeedByName(n); !ok {
			return bad("%q is not an operation rlab knows a device may lack; needs takes: %s.", n, strings.Join(kinds.NeedNames(), ", "))
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// refName reads the name from a reference value (KIND.NAME).
func refName(v cty.Value, blockType string) (string, bool) {
	t := v.Type()
	if !t.IsObjectType() || !t.HasAttribute("kind") || !t.HasAttribute("name") {
		return "", false
	}
	k, n := v.GetAttr("kind"), v.GetAttr("name")
	if k.Type() != cty.String || n.Type() != cty.String || !k.IsKnown() || !n.IsKnown() || k.IsNull() || n.IsNull() || k.AsString() != blockType {
		return "", false
	}
	return n.AsString(), true
}
