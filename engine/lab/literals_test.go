package lab

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLongLiteralRunRefused: hcl's parser melds a template's consecutive
// literal parts one at a time, copying the parts after each, so a
// template of n literal parts (a heredoc line is one; so is each `$${`)
// costs time quadratic in n, and nothing bounded it before the
// evaluation guard (attack round 16, high: `rlab fmt -check` of a
// heredoc of 100,000 empty lines (100 KB) took 33 s, the 4 MiB a lab
// file may hold about 16 hours; `rlab report` parses a received run
// directory's lab/ files for the lab's name outside the guard: 60 KB,
// 12 s). A file with a run of more than MaxLiteralRun is refused before
// hcl parses it, by Load, Format and LabHeaderParses.
func TestLongLiteralRunRefused(t *testing.T) {
	for name, src := range map[string]string{
		"heredoc": "lab \"t\" {}\nlocals {\n  s = <<EOT\n" + strings.Repeat("\n", MaxLiteralRun+1) + "EOT\n}\n",
		"escapes": "lab \"t\" {}\nlocals {\n  s = \"" + strings.Repeat("$${}", MaxLiteralRun) + "\"\n}\n",
	} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "lab.hcl")
			if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			_, diags := Load([]string{p}, LoadOptions{})
			if !diags.HasErrors() || diags[0].Summary != LiteralRunSummary {
				t.Errorf("Load: %v, want %q", diags, LiteralRunSummary)
			}
			if _, diags := Format(p, []byte(src)); !diags.HasErrors() || diags[0].Summary != LiteralRunSummary {
				t.Errorf("Format: %v, want %q", diags, LiteralRunSummary)
			}
			if LongLiteralRun(p, []byte(src)) == nil {
				t.Error("LongLiteralRun found no long run")
			}
		})
	}
	// A run at the bound, and many runs split by interpolations, pass.
	ok := "lab \"t\" {}\nlocals {\n  s = <<EOT\n" + strings.Repeat("\n", MaxLiteralRun-1) + strings.Repeat("${1}\n", 3) + "EOT\n}\n"
	if r := LongLiteralRun("ok.hcl", []byte(ok)); r != nil {
		t.Errorf("a run of %d refused at %v", MaxLiteralRun, r)
	}
}
