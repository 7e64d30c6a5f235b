package lab

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclwrite"
)

// Format returns src in the canonical HCL layout. A file that does not
// parse is returned unchanged with its diagnostics, so fmt never rewrites
// what it cannot read.
func Format(name string, src []byte) ([]byte, hcl.Diagnostics) {
	l := &loader{lab: &Lab{Files: map[string][]byte{}}}
	if l.parse(name, src) == nil {
		return src, l.diags
	}
	if _, diags := hclwrite.ParseConfig(src, name, hcl.InitialPos); diags.HasErrors() {
		return src, diags
	}
	return hclwrite.Format(src), nil
}

// UnifiedDiff returns a unified diff (3 lines of context) from a to b, both
// named name; "" when they are equal.
func UnifiedDiff(name string, a, b []byte) string {
	x, y := splitLines(string(a)), splitLines(string(b))
	ops := diffLines(x, y)
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s (formatted)\n", name, name)
	const ctx = 3
	changed := false
	for i := 0; i < len(ops); {
		if ops[i].mark == ' ' {
			i++
			continue
		}
		changed = true
		// A hunk: back up ctx lines, run until ctx*2 unchanged lines.
		start := max(i-ctx, 0)
		end := i
		for end < len(ops) {
			if ops[end].mark != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].mark == ' ' {
				run++
			}
			if run == len(ops) || run-end > 2*ctx {
				end = min(end+ctx, len(ops))
				break
			}
			end = run
		}
		ax, bx := ops[start].ai, ops[start].bi
		an, bn := 0, 0
		for _, o := range ops[start:end] {
			if o.mark != '+' {
				an++
			}
			if o.mark != '-' {
				bn++
			}
		}
		fmt.Fprintf(&out, "@@ -%d,%d +%d,%d @@\n", ax+1, an, bx+1, bn)
		for _, o := range ops[start:end] {
			out.WriteByte(o.mark)
			out.WriteString(o.text)
			out.WriteByte('\n')
		}
		i = end
	}
	if !changed {
		return ""
	}
	return out.String()
}

type diffOp struct {
	mark   byte // ' ', '-', '+'
	text   string
	ai, bi int // line index in a and b where this op stands
}

func splitLines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// diffLines is a longest-common-subsequence line diff; lab files are small,
// and past a bound it degrades to replacing everything.
func diffLines(a, b []string) []diffOp {
	var ops []diffOp
	if len(a)*len(b) > 4_000_000 {
		for i, l := range a {
			ops = append(ops, diffOp{'-', l, i, 0})
		}
		for j, l := range b {
			ops = append(ops, diffOp{'+', l, len(a), j})
		}
		return ops
	}
	lcs := make([][]int32, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int32, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			ops = append(ops, diffOp{' ', a[i], i, j})
			i, j = i+1, j+1
		case i < len(a) && (j == len(b) || lcs[i+1][j] >= lcs[i][j+1]):
			ops = append(ops, diffOp{'-', a[i], i, j})
			i++
		default:
			ops = append(ops, diffOp{'+', b[j], i, j})
			j++
		}
	}
	return ops
}
