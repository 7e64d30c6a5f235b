package lab

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// EmptyExpansion is a block whose count or for_each evaluated to no
// instance: an empty map from a terraform output, a student list not
// filled in, count = 0.
type EmptyExpansion struct {
	Block, Name string    // the block: workload "write_bw"
	Attr        string    // "for_each" or "count"
	Range       hcl.Range // the attribute's expression
}

// AllowEmptyFlag is the command-line flag that lets a lab, or a --only
// selection, with no workload through (NoWorkloads).
const AllowEmptyFlag = "--allow-empty"

// NoWorkloads is the error for a lab that would run nothing, nil when it has
// a workload: a run of it would pass (tests="0") having measured nothing, so
// a nightly job or a class check would go green on an empty student list.
// It names each count or for_each of a workload that came out empty, at its
// expression (else those of the other blocks), or the lab block when no workload block exists at all.
// The commands that run or check a lab report it unless AllowEmptyFlag.
func (l *Lab) NoWorkloads() hcl.Diagnostics {
	if l == nil || len(l.Workloads) > 0 {
		return nil
	}
	hint := fmt.Sprintf("A run would pass having run nothing. Fill in what it ranges over, or pass %s if a lab without workloads is what you mean.", AllowEmptyFlag)
	var out hcl.Diagnostics
	for _, first := range []bool{true, false} {
		if len(out) > 0 {
			break // the workloads' own for_each is the cause to name
		}
		for _, e := range l.EmptyExpansions {
			if (e.Block == "workload") != first {
				continue
			}
			out = append(out, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Lab has no workloads",
				Detail:  fmt.Sprintf("The %s of %s %q is empty, so it makes no %s and lab %q has no workload to run. %s", e.Attr, e.Block, e.Name, e.Block, l.Name, hint),
				Subject: e.Range.Ptr()})
		}
	}
	if len(out) == 0 {
		out = append(out, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Lab has no workloads",
			Detail:  fmt.Sprintf("Lab %q declares no workload block. %s", l.Name, hint),
			Subject: l.Range.Ptr()})
	}
	return out
}

// noteEmpty records that the count or for_each a of block label came out
// empty (see NoWorkloads); the block's type is the declared block holding a.
func (l *loader) noteEmpty(label string, a *hcl.Attribute) {
	e := EmptyExpansion{Name: label, Attr: a.Name, Range: a.Expr.Range()}
	for blockType, decls := range l.decls {
		d := decls[label]
		if d == nil {
			continue
		}
		if b, ok := d.block.Body.(*hclsyntax.Body); ok && b.SrcRange.Filename == e.Range.Filename && b.SrcRange.ContainsOffset(e.Range.Start.Byte) {
			e.Block = blockType
			break
		}
	}
	l.lab.EmptyExpansions = append(l.lab.EmptyExpansions, e)
}
