// Package metricblock decodes `metric "NAME" { pattern, unit, better }`
// blocks, the numbers a program or exec workload reads from its output
// (kinds.OutputMetric), for the families that take them. It is shared code
// of the families, not a family: it imports kinds and hcl only.
package metricblock

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/rlab-dev/rlab/kinds"
	"github.com/zclconf/go-cty/cty"
)

// Schema is the metric block's header, for a family's body schema.
var Schema = hcl.BlockHeaderSchema{Type: "metric", LabelNames: []string{"name"}}

var metricSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "pattern", Required: true}, {Name: "unit"}, {Name: "better"}, {Name: "from"}}}

// Decode decodes `metric "NAME" { pattern, unit, better, from }` blocks
// (program and exec workloads). A name must be a new one: not a metric a
// tool records, nor one of the same workload twice. from = "server" reads
// the server's output and only a two-sided workload (pair) has one; "client"
// (the default) reads the client's, or the one command's.
func Decode(blocks hcl.Blocks, ctx *hcl.EvalContext, pair bool) ([]kinds.OutputMetric, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	var out []kinds.OutputMetric
	seen := map[string]hcl.Range{}
	for _, b := range blocks {
		if b.Type != "metric" {
			continue
		}
		m := kinds.OutputMetric{Name: b.Labels[0]}
		errf := func(r hcl.Range, summary, detail string, args ...any) {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: fmt.Sprintf(detail, args...), Subject: r.Ptr()})
		}
		ok := true
		switch {
		case !validMetricName(m.Name):
			errf(b.LabelRanges[0], "Invalid metric name", "A metric name starts with a letter and holds lowercase letters, digits and '_', so an expect reads it as result.NAME.")
			ok = false
		case isKnownMetric(m.Name):
			errf(b.LabelRanges[0], "Metric name taken", "%q is a metric rlab records itself; name this one differently (the name is results.json's and expect's result.NAME).", m.Name)
			ok = false
		}
		if prev, dup := seen[m.Name]; dup {
			errf(b.LabelRanges[0], "Duplicate metric", "This workload reads a metric %q already, at %s.", m.Name, prev)
			ok = false
		}
		seen[m.Name] = b.DefRange
		c, ds := b.Body.Content(metricSchema)
		diags = append(diags, ds...)
		str := func(n string) (string, bool) {
			at := c.Attributes[n]
			if at == nil {
				return "", true
			}
			v, ds := at.Expr.Value(ctx)
			diags = append(diags, ds...)
			if ds.HasErrors() {
				return "", false
			}
			if v.Type() != cty.String || v.IsNull() || !v.IsKnown() {
				errf(at.Expr.Range(), "Invalid "+n, "%s is a string.", n)
				return "", false
			}
			return v.AsString(), true
		}
		p, pok := str("pattern")
		if pok && c.Attributes["pattern"] != nil {
			if _, err := kinds.CompileOutputMetric(p); err != nil {
				errf(c.Attributes["pattern"].Expr.Range(), "Invalid pattern", "The pattern is not an RE2 regular expression: %s.", err)
				pok = false
			}
		}
		m.Pattern = p
		u, uok := str("unit")
		m.Unit = u
		bt, bok := str("better")
		if bok && bt != "" && bt != "higher" && bt != "lower" {
			errf(c.Attributes["better"].Expr.Range(), "Invalid better", "better is \"higher\" or \"lower\"; got %q.", bt)
			bok = false
		}
		m.Better = bt
		fr, fok := str("from")
		switch {
		case !fok:
		case fr == "" || fr == "client":
		case fr == kinds.FromServer && pair:
			m.From = kinds.FromServer
		case fr == kinds.FromServer:
			errf(c.Attributes["from"].Expr.Range(), "No server here", "from = \"server\" reads the server's output; this workload runs one command, whose output every metric reads. Remove from.")
			fok = false
		default:
			errf(c.Attributes["from"].Expr.Range(), "Invalid from", "from is \"client\" (the default) or \"server\": whose output the pattern reads; got %q.", fr)
			fok = false
		}
		bok = bok && fok
		if ok && pok && uok && bok && c.Attributes["pattern"] != nil {
			out = append(out, m)
		}
	}
	return out, diags
}

func validMetricName(s string) bool {
	if s == "" || len(s) > 64 || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	return strings.Trim(s, "abcdefghijklmnopqrstuvwxyz0123456789_") == ""
}

// isKnownMetric: a name (or an older alias) of a metric a tool records,
// or result's own size and repeat.
func isKnownMetric(n string) bool {
	if n == "size" || n == "repeat" {
		return true
	}
	if _, ok := kinds.MetricByName(n); ok {
		return true
	}
	_, _, ok := kinds.MetricByAlias(n)
	return ok
}
