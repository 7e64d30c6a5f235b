package lab

import (
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// TestVMNetworkNames: a network's name comes from its name attribute (per
// for_each instance) or else its label; a template in the label is a syntax
// error that says to write name instead.
func TestVMNetworkNames(t *testing.T) {
	l, diags := Load([]string{"../../labs/class-vms.hcl"}, LoadOptions{})
	if len(diags) > 0 {
		t.Fatalf("class-vms: %s", diagText(l, diags))
	}
	got := map[string]string{}
	for _, h := range l.Hosts {
		if len(h.VM.Networks) != 1 {
			t.Fatalf("%s: networks %+v, want 1", h.Name, h.VM.Networks)
		}
		got[h.Name] = h.VM.Networks[0].Name
	}
	for _, k := range []string{"ana", "bo", "cy"} {
		for _, b := range []string{"server", "client"} {
			if n := got[b+`["`+k+`"]`]; n != "pair-"+k {
				t.Errorf(`%s["%s"] joins %q, want pair-%s`, b, k, n, k)
			}
		}
	}

	_, diags = Load([]string{corpus + "/errors/vm_network_label_template.hcl"}, LoadOptions{})
	if len(diags) != 1 || !strings.Contains(diags[0].Detail, `network "pair" { name = "pair-${each.key}" }`) {
		t.Errorf("templated label: want one diagnostic saying to set name, got %v", diags)
	}
}

// TestOneDiagnosticPerProblem: a mistake in a block that for_each repeats
// 12 times is one warning naming the other instances, not 12 (the rejected
// class of issue 28 printed 24); its detail says the VM has no data
// network rather than "eth1..eth0".
func TestOneDiagnosticPerProblem(t *testing.T) {
	src := `
lab "t" {}
locals { s = toset(["k00", "k01", "k02", "k03", "k04", "k05", "k06", "k07", "k08", "k09", "k10", "k11"]) }
host "a" {
  for_each = local.s
  vm {}
}
host "b" {
  for_each = local.s
  vm {
    network "n" {
      name = "p-${each.key}"
    }
  }
}
rxe "a" {
  for_each = local.s
  host     = host.a[each.key]
  netdev   = "eth1"
}
rxe "b" {
  for_each = local.s
  host     = host.b[each.key]
  netdev   = "eth1"
}
workload "w" {
  for_each = local.s
  tool     = "ib_write_bw"
  server   = rxe.a[each.key]
  client   = rxe.b[each.key]
}
`
	_, diags := LoadSource("t.hcl", []byte(src), t.TempDir(), LoadOptions{})
	var warns []*hcl.Diagnostic
	for _, d := range diags {
		if d.Summary == "Netdev not on VM" {
			warns = append(warns, d)
		}
	}
	if len(warns) != 1 {
		t.Fatalf("want 1 Netdev not on VM warning, got %d: %v", len(warns), diags)
	}
	d := warns[0].Detail
	for _, want := range []string{`Host a["k00"] is a local VM with no data network`, "eth1 will not exist",
		`The same for 11 other instance(s) of this block: "k01", "k02", "k03", "k04", "k05" and 6 more.`} {
		if !strings.Contains(d, want) {
			t.Errorf("detail lacks %q:\n%s", want, d)
		}
	}
	if strings.Contains(d, "eth0;") || strings.Contains(d, "eth1..eth0") {
		t.Errorf("detail gives a nonsense range:\n%s", d)
	}
}

// TestDedupeFoldsOtherInstancesOnly: diagnostics at one range with one
// summary fold when they are about other instances, not when one instance
// has two problems there, nor without an instance.
func TestDedupeFoldsOtherInstancesOnly(t *testing.T) {
	rng := &hcl.Range{Filename: "t.hcl", Start: hcl.Pos{Line: 3, Column: 1}, End: hcl.Pos{Line: 3, Column: 5}}
	inst := func(k string) *hcl.EvalContext {
		return &hcl.EvalContext{Variables: map[string]cty.Value{"each": cty.ObjectVal(map[string]cty.Value{"key": cty.StringVal(k), "value": cty.StringVal(k)})}}
	}
	d := func(detail string, ctx *hcl.EvalContext) *hcl.Diagnostic {
		return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "S", Detail: detail, Subject: rng, EvalContext: ctx}
	}
	tests := []struct {
		name string
		in   hcl.Diagnostics
		want []string
	}{
		{"other instances", hcl.Diagnostics{d("a", inst("x")), d("b", inst("y")), d("c", inst("z"))},
			[]string{`a The same for 2 other instance(s) of this block: "y", "z".`}},
		{"one instance twice", hcl.Diagnostics{d("a", inst("x")), d("b", inst("x"))}, []string{"a", "b"}},
		{"no instance", hcl.Diagnostics{d("a", nil), d("b", nil)}, []string{"a", "b"}},
		{"repeat", hcl.Diagnostics{d("a", inst("x")), d("a", inst("x"))}, []string{"a"}},
	}
	for _, tt := range tests {
		var got []string
		for _, x := range dedupe(tt.in) {
			got = append(got, x.Detail)
		}
		if strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}
