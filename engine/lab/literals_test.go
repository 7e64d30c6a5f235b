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
// hcl parses it, by Load, Format and LabHeaderParses. The parts are
// counted per template, not per run (attack round 17, high: with `${1}`
// every 999 lines, no run passed the bound and a 100 KB heredoc took
// 17 s in rlab fmt, a 256 KiB lab/ file of a received run directory
// that long in rlab report): "interpolated" and "interpolated escapes".
func TestLongLiteralRunRefused(t *testing.T) {
	for name, src := range map[string]string{
		"heredoc":              "lab \"t\" {}\nlocals {\n  s = <<EOT\n" + strings.Repeat("\n", MaxLiteralRun+1) + "EOT\n}\n",
		"escapes":              "lab \"t\" {}\nlocals {\n  s = \"" + strings.Repeat("$${}", MaxLiteralRun) + "\"\n}\n",
		"interpolated":         "lab \"t\" {}\nlocals {\n  s = <<EOT\n" + strings.Repeat(strings.Repeat("\n", 99)+"${1}\n", MaxLiteralRun/90) + "EOT\n}\n",
		"interpolated escapes": "lab \"t\" {}\nlocals {\n  s = \"" + strings.Repeat("a$${b}${1}", MaxLiteralRun) + "\"\n}\n",
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
	// A run at the bound passes, and so do many templates, each under it,
	// and a template whose interpolations stand between its lines.
	for name, ok := range map[string]string{
		"run":       "lab \"t\" {}\nlocals {\n  s = <<EOT\n" + strings.Repeat("\n", MaxLiteralRun-1) + strings.Repeat("${1}\n", 3) + "EOT\n}\n",
		"templates": "lab \"t\" {}\nlocals {\n" + strings.Repeat("  s = <<EOT\n"+strings.Repeat("\n", MaxLiteralRun/2)+"EOT\n", 10) + "}\n",
		"lines":     "lab \"t\" {}\nlocals {\n  s = <<EOT\n" + strings.Repeat("${1}x\n", 10*MaxLiteralRun) + "EOT\n}\n",
	} {
		if r := LongLiteralRun(name+".hcl", []byte(ok)); r != nil {
			t.Errorf("%s: refused at %v", name, r)
		}
	}
}

// TestUnaryChainRefused: more than MaxNesting `!` or `-` in a row (lines
// between them too) is refused before hcl parses it, with its own
// diagnostic, by Load, Format, a -var-file and Unparsable (a folder's
// split, rlab report's lab-name lookup). 250 KB of `!` took hcl's parser
// to Go's stack limit, a fatal error (attack round 17, labs). A chain at
// the bound, and `--` in strings and comments, pass.
func TestUnaryChainRefused(t *testing.T) {
	for name, chain := range map[string]string{
		"bang":       strings.Repeat("!", MaxNesting+1) + "true",
		"minus":      strings.Repeat("-", MaxNesting+1) + "1",
		"mixed":      strings.Repeat("!-", MaxNesting/2+1) + "1",
		"over lines": strings.Repeat("!\n", MaxNesting+1) + "true",
	} {
		t.Run(name, func(t *testing.T) {
			src := "lab \"t\" {}\nlocals {\n  x = (" + chain + ")\n}\n"
			dir := t.TempDir()
			p := filepath.Join(dir, "lab.hcl")
			if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, diags := Load([]string{p}, LoadOptions{}); !diags.HasErrors() || diags[0].Summary != UnarySummary {
				t.Errorf("Load: %v, want %q", diags, UnarySummary)
			}
			if _, diags := Format(p, []byte(src)); !diags.HasErrors() || diags[0].Summary != UnarySummary {
				t.Errorf("Format: %v, want %q", diags, UnarySummary)
			}
			if !Unparsable(p, []byte(src)) {
				t.Error("Unparsable: false")
			}
			vf := filepath.Join(dir, "v.hcl")
			if err := os.WriteFile(vf, []byte("x = ("+chain+")\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			ok := filepath.Join(dir, "ok.hcl")
			os.WriteFile(ok, []byte("lab \"t\" {}\nvariable \"x\" {\n  default = 1\n}\n"), 0o644)
			if _, diags := Load([]string{ok}, LoadOptions{VarFiles: []string{vf}}); !diags.HasErrors() || diags[0].Summary != UnarySummary {
				t.Errorf("-var-file: %v, want %q", diags, UnarySummary)
			}
		})
	}
	for name, ok := range map[string]string{
		"at the bound": "lab \"t\" {}\nlocals {\n  x = (" + strings.Repeat("!", MaxNesting) + "true)\n}\n",
		"dashes":       "# " + strings.Repeat("-", 400) + "\nlab \"t\" {}\nlocals {\n  x = \"" + strings.Repeat("-", 400) + "\"\n}\n",
	} {
		if r := longUnaryChain(name, []byte(ok)); r != nil {
			t.Errorf("%s: refused at %v", name, r)
		}
	}
}
