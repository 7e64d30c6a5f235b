package lab

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestEvalBounded: the shapes of issue 24's unbounded labs (nested join
// over range, which asked for gigabytes; three nested for over range(1000),
// a billion iterations; a format width; setproduct; templates that double)
// stop at the evaluation budget with one diagnostic at the expression that
// passed it, naming the limit and what to do instead; the work done and the
// memory allocated stay within the budget, not the lab's demand.
func TestEvalBounded(t *testing.T) {
	for _, name := range []string{"eval_join_over_range", "eval_nested_for", "eval_format_width", "eval_setproduct", "eval_template_doubling", "eval_for_body_literal", "eval_swallowed_by_can"} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(corpus, "errors", name+".hcl")
			src, err := os.ReadFile(p)
			must(t, err)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			l := loadSource(p, src, filepath.Dir(p), LoadOptions{})
			runtime.ReadMemStats(&after)
			var limits []string
			for _, d := range dedupe(l.diags) {
				if d.Summary == EvalLimitSummary {
					limits = append(limits, d.Detail)
					if d.Subject == nil || d.Subject.Start.Line == 0 {
						t.Errorf("the diagnostic has no source range: %+v", d)
					}
				}
			}
			if len(limits) != 1 {
				t.Fatalf("%d %q diagnostics, want 1:\n%s", len(limits), EvalLimitSummary, diagLines(l.diags))
			}
			if !strings.Contains(limits[0], fmt.Sprint(MaxEvalOps)) && !strings.Contains(limits[0], fmt.Sprintf("%d MiB", MaxEvalBytes>>20)) {
				t.Errorf("the detail does not name the limit: %s", limits[0])
			}
			if l.budget.steps > MaxEvalOps || l.budget.bytes > MaxEvalBytes {
				t.Errorf("evaluation went on past the budget: %d steps, %d bytes", l.budget.steps, l.budget.bytes)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16*MaxEvalBytes {
				t.Errorf("loading allocated %d MiB in all, want at most %d", alloc>>20, 16*MaxEvalBytes>>20)
			}
		})
	}
}

// TestEvalBudgetHeadroom: every lab shipped and every valid corpus lab
// uses less than a tenth of the evaluation budget, so the limit stops only
// labs far beyond real ones.
func TestEvalBudgetHeadroom(t *testing.T) {
	var files []string
	for _, g := range []string{"../../labs/*.hcl", corpus + "/valid/*.hcl"} {
		m, _ := filepath.Glob(g)
		files = append(files, m...)
	}
	if len(files) == 0 {
		t.Skip("no labs found")
	}
	for _, p := range files {
		src, err := os.ReadFile(p)
		must(t, err)
		l := loadSource(p, src, filepath.Dir(p), LoadOptions{})
		if l.budget.spent != nil || l.budget.steps > MaxEvalOps/10 || l.budget.bytes > MaxEvalBytes/10 {
			t.Errorf("%s: %d steps and %d bytes of the budget", p, l.budget.steps, l.budget.bytes)
		}
	}
}

// TestVarFileUndeclaredOnce: a variables file with many values the lab
// does not declare gets one warning naming the first few (sorted, with a
// "did you mean"), not one per value (a million values made a million
// warnings, each printed with its source line found from the file's start).
func TestVarFileUndeclaredOnce(t *testing.T) {
	dir := t.TempDir()
	const n = 20000
	var hclSrc, jsonSrc strings.Builder
	hclSrc.WriteString("servr = \"x\"\n")
	jsonSrc.WriteString(`{"servr": "x"`)
	for i := range n {
		fmt.Fprintf(&hclSrc, "v%05d = %d\n", i, i)
		fmt.Fprintf(&jsonSrc, `, "v%05d": %d`, i, i)
	}
	jsonSrc.WriteString("}")
	for _, f := range []struct{ name, src string }{{"many.hcl", hclSrc.String()}, {"many.json", jsonSrc.String()}} {
		t.Run(f.name, func(t *testing.T) {
			p := filepath.Join(dir, f.name)
			must(t, os.WriteFile(p, []byte(f.src), 0o644))
			_, diags := Load([]string{filepath.Join(corpus, "folder")}, LoadOptions{VarFiles: []string{p}, Vars: map[string]string{"server": "h"}})
			if len(diags) != 1 || diags[0].Summary != "Value for undeclared variable" {
				t.Fatalf("want one warning, got %d:\n%s", len(diags), diagLines(diags[:min(len(diags), 5)]))
			}
			d := diags[0].Detail
			for _, want := range []string{fmt.Sprintf("sets %d values", n+1), `"servr" (Did you mean "server"?)`, `"v00000"`, `"v00008"`, fmt.Sprintf("and %d more", n+1-maxUndeclaredNamed)} {
				if !strings.Contains(d, want) {
					t.Errorf("detail lacks %q:\n%s", want, d)
				}
			}
			if strings.Contains(d, `"v00009"`) {
				t.Errorf("detail lists more than %d names:\n%s", maxUndeclaredNamed, d)
			}
		})
	}
}

// TestVarFileTooLarge: a variables file is bounded as a lab file is.
func TestVarFileTooLarge(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big.tfvars")
	must(t, os.WriteFile(p, []byte("x = \""+strings.Repeat("a", MaxFileBytes)+"\"\n"), 0o644))
	_, diags := Load([]string{filepath.Join(corpus, "folder")}, LoadOptions{VarFiles: []string{p}, Vars: map[string]string{"server": "h"}})
	if len(diags) != 1 || diags[0].Summary != "Variable file too large" {
		t.Fatalf("want one \"Variable file too large\", got:\n%s", diagLines(diags))
	}
}

// TestVarFileEvalBounded: expressions in a variables file and in -var are
// metered as the lab's are.
func TestVarFileEvalBounded(t *testing.T) {
	p := filepath.Join(t.TempDir(), "loop.tfvars")
	must(t, os.WriteFile(p, []byte("server = length([for i in range(1000) : [for j in range(1000) : [for k in range(1000) : k]]])\n"), 0o644))
	_, diags := Load([]string{filepath.Join(corpus, "folder")}, LoadOptions{VarFiles: []string{p}})
	if !strings.Contains(diagLines(diags), EvalLimitSummary) {
		t.Errorf("want %q, got:\n%s", EvalLimitSummary, diagLines(diags))
	}
}
