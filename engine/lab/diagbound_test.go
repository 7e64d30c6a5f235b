package lab

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

// TestWriteDiagnosticsBounded: hcl's writer finds a diagnostic's source
// lines by scanning its whole file from the start, so each diagnostic
// shown cost the file's length and a lab of many small mistakes took time
// quadratic in its size to print (attack round 15: `x{}` 4,000 times, a
// 16 KB lab, held `rlab validate` 53 s; 8,000 times (32 KB) 157 s; the 4 MiB a lab
// file may hold, weeks). Every command that loads a lab prints its
// diagnostics first. WriteDiagnostics shows at most 100 with their source
// lines and counts the rest in one line.
func TestWriteDiagnosticsBounded(t *testing.T) {
	const n, bound = 300, 100
	dir := t.TempDir()
	p := filepath.Join(dir, "lab.hcl")
	src := "lab \"u\" {}\n" + strings.Repeat("x{}\n", n)
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	l, diags := Load([]string{p}, LoadOptions{})
	errs, warns := 0, 0
	for _, d := range diags {
		if d.Severity == hcl.DiagError {
			errs++
		} else {
			warns++
		}
	}
	if errs != n || warns != 0 {
		t.Fatalf("the lab gave %d errors and %d warnings, want %d and none: %v", errs, warns, n, diags)
	}
	for _, color := range []bool{false, true} {
		var b strings.Builder
		if err := WriteDiagnostics(&b, SourceFiles(l, diags), diags, 0, color); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		shown := len(regexp.MustCompile(`(?m)^(\x1b\[3[13]m)?(Error|Warning)(\x1b\[0m)?: `).FindAllString(out, -1))
		if shown > bound {
			t.Errorf("colour %v: %d diagnostics shown with their source lines, want at most %d", color, shown, bound)
		}
		if want := "200 more errors not shown"; !strings.Contains(out, want) {
			t.Errorf("colour %v: the output does not say %q; its end:\n%s", color, want, out[max(0, len(out)-300):])
		}
	}
}
