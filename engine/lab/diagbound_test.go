package lab

import (
	"fmt"
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

// TestWriteDiagnosticScansItsLinesOnly: hcl's writer scans a diagnostic's
// whole file from the start to find its source lines, allocating for each
// line, so one diagnostic at the end of a long file cost the file: a 4 MB
// lab of two million comment lines and then 100 mistakes held `rlab
// validate` over 10 minutes (attack round 15), MaxShownDiagnostics or not.
// The writer is given the diagnostic's own lines: its allocations do not
// grow with the lines before them. The text is as before (line numbers
// included). (100,000 comment lines, 200,000 pieces: a file past
// MaxTokens is refused before it is parsed, SECURITY 234.)
func TestWriteDiagnosticScansItsLinesOnly(t *testing.T) {
	for _, pre := range []int{0, 100000} {
		dir := t.TempDir()
		p := filepath.Join(dir, "lab.hcl")
		src := "lab \"u\" {}\n" + strings.Repeat("#\n", pre) + "x{}\nhost \"h\" {\n  address = 1 + \"a\"\n}\n"
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		l, diags := Load([]string{p}, LoadOptions{})
		if len(diags) == 0 {
			t.Fatal("no diagnostics")
		}
		files := SourceFiles(l, diags)
		var out string
		allocs := testing.AllocsPerRun(1, func() {
			var b strings.Builder
			WriteDiagnostics(&b, files, diags, 0, false)
			out = b.String()
		})
		if pre > 0 && allocs > 20000 {
			t.Errorf("%d lines before the diagnostics: %.0f allocations to write them, want them not to grow with those lines", pre, allocs)
		}
		for _, want := range []string{
			fmt.Sprintf("on %s:%d,1-2:\n%4d: x{}\n%s^\n", p, pre+2, pre+2, strings.Repeat(" ", len(fmt.Sprintf("%4d: ", pre+2)))),
			fmt.Sprintf("on %s:%d,17-20:\n%4d:   address = 1 + \"a\"\n", p, pre+4, pre+4),
		} {
			if !strings.Contains(out, want) {
				t.Errorf("%d lines before: output lacks %q:\n%s", pre, want, out)
			}
		}
	}
}

// TestWriteDiagnosticShowsFewLines: hcl's writer prints every line of a
// diagnostic's context, and hcl gives each mistake in a template the whole
// template as context, so 100 mistakes at the head of a long heredoc
// printed the heredoc 100 times (attack round 16: an 80 KB lab of 100
// `${[]}` and 40,000 lines made `rlab validate` print 4 million lines,
// 35 MB, in 25 s; the 4 MiB a lab may hold, about 20 minutes and 1.7 GB).
// A diagnostic shows at most MaxSnippetLines source lines. (Each filler
// line starts with an interpolation, so no literal part follows another
// and the heredoc stays under MaxLiteralRun.)
func TestWriteDiagnosticShowsFewLines(t *testing.T) {
	const bad, filler = 100, 2000
	dir := t.TempDir()
	p := filepath.Join(dir, "lab.hcl")
	src := "lab \"t\" {}\nhost \"a\" { address = \"10.0.0.1\" }\nworkload \"w\" {\n  tool = \"exec\"\n  host = host.a\n  command = [\"echo\", <<EOT\n" +
		strings.Repeat("${[]}\n", bad) + strings.Repeat("${\"\"}x\n", filler) + "EOT\n  ]\n}\n"
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	l, diags := Load([]string{p}, LoadOptions{})
	if len(diags) < bad {
		t.Fatalf("the lab gave %d diagnostics, want at least %d: %v", len(diags), bad, diags)
	}
	for _, color := range []bool{false, true} {
		var b strings.Builder
		if err := WriteDiagnostics(&b, SourceFiles(l, diags), diags, 0, color); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		lines := len(regexp.MustCompile(`(?m)^ *[0-9]+: `).FindAllString(out, -1))
		if want := MaxShownDiagnostics * MaxSnippetLines; lines > want {
			t.Errorf("colour %v: %d source lines shown for %d diagnostics, want at most %d", color, lines, min(len(diags), MaxShownDiagnostics), want)
		}
		// Each still shows its own line, numbered as in the file.
		for _, want := range []string{"\n   7: ", fmt.Sprintf("\n%4d: ", 6+bad)} {
			if !strings.Contains(out, want) {
				t.Errorf("colour %v: output lacks %q", color, want)
			}
		}
	}
}
