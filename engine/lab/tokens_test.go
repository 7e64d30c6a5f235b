package lab

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestManyTokensRefused: every parse of a lab file lexes it whole first,
// and hcl's lexer keeps about 100 bytes for each token before anything
// else happens, so a 4 MiB file of empty lines (a token each) took
// `rlab fmt` 15 s and 1.9 GB, one of heredocs of 1,000 empty lines (under
// MaxLiteralRun) 33 s and 2.1 GB, and `rlab validate` of the first hit
// the 1 GiB evaluation guard (attack round 16). A file of more than
// MaxTokens pieces is refused by one pass over its bytes before anything
// lexes it: by Load, Format, ParseSource's callers, a folder's split
// (labBlocks) and the report's lab-name lookup (LongLiteralRun), and in a
// -var-file; the diagnostic points at the piece past the bound.
func TestManyTokensRefused(t *testing.T) {
	heredoc := "s = <<EOT\n" + strings.Repeat("\n", MaxLiteralRun-1) + "EOT\n"
	for _, tc := range []struct {
		name, src string
		line      int // of the diagnostic
	}{
		{"empty lines", "lab \"t\" {}\n" + strings.Repeat("\n", MaxTokens+1), MaxTokens - 5}, // the first line is 7 pieces
		{"heredocs under the literal bound", "lab \"t\" {}\nlocals {\n" + strings.Repeat(heredoc, MaxTokens/MaxLiteralRun+1) + "}\n", 0},
		{"one long list", "lab \"t\" {}\nlocals {\n  l = [" + strings.Repeat("1,", MaxTokens/2) + "]\n}\n", 3},
		{"numbers and minus signs", "lab \"t\" {}\nlocals {\n  n = " + strings.Repeat("1-", MaxTokens/2) + "1\n}\n", 3},
		{"many attributes", "lab \"t\" {}\nlocals {\n" + strings.Repeat("a=1\n", MaxTokens/4) + "}\n", 0},
		{"non-ASCII characters", "lab \"t\" {}\n# " + strings.Repeat("€", MaxTokens) + "\n", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "lab.hcl")
			if err := os.WriteFile(p, []byte(tc.src), 0o644); err != nil {
				t.Fatal(err)
			}
			_, diags := Load([]string{p}, LoadOptions{})
			if !diags.HasErrors() || diags[0].Summary != TokensSummary {
				t.Fatalf("Load: %v, want %q", diags, TokensSummary)
			}
			if r := diags[0].Subject; r == nil || tc.line > 0 && r.Start.Line != tc.line {
				t.Errorf("Load: at %v, want line %d", r, tc.line)
			}
			if _, diags := Format(p, []byte(tc.src)); !diags.HasErrors() || diags[0].Summary != TokensSummary {
				t.Errorf("Format: %v, want %q", diags, TokensSummary)
			}
			if LongLiteralRun(p, []byte(tc.src)) == nil {
				t.Error("LongLiteralRun (the report's lookup) passed it")
			}
			if n := labBlocks(p); n != -1 {
				t.Errorf("labBlocks (a folder's split) = %d, want -1", n)
			}
			// The same text as a -var-file's value.
			lp := filepath.Join(dir, "ok.hcl")
			if err := os.WriteFile(lp, []byte("lab \"t\" {}\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			vf := filepath.Join(dir, "v.tfvars")
			if err := os.WriteFile(vf, []byte(strings.TrimPrefix(tc.src, "lab \"t\" {}\n")), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, diags := Load([]string{lp}, LoadOptions{VarFiles: []string{vf}}); !diags.HasErrors() || diags[0].Summary != TokensSummary {
				t.Errorf("-var-file: %v, want %q", diags, TokensSummary)
			}
		})
	}
	// At the bound, a file passes the check (and the labs of this
	// repository are far from it: TestLabsFarFromTokenBound).
	for _, src := range []string{strings.Repeat("\n", MaxTokens), strings.Repeat("a=1 # x\n", MaxTokens/6)} {
		if i := tooManyTokens([]byte(src)); i >= 0 {
			t.Errorf("a file of %d pieces refused at byte %d", MaxTokens, i)
		}
	}
}

// TestLabsFarFromTokenBound: no lab of this repository comes within a
// tenth of MaxTokens.
func TestLabsFarFromTokenBound(t *testing.T) {
	files, _ := filepath.Glob("../../labs/*.hcl")
	more, _ := filepath.Glob("../../testdata/labs/valid/*.hcl")
	files = append(files, more...)
	if len(files) < 5 {
		t.Fatalf("found %d lab files", len(files))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if n := countTokens(b); n > MaxTokens/10 {
			t.Errorf("%s: %d pieces, within a tenth of the bound %d", f, n, MaxTokens)
		}
	}
}
