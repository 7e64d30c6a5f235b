package lab

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRegexBounded: a match costs its pattern's program times its text, and
// both fit the byte budget: regexall of "0?" × 10,000 over 100,000 zeros, a
// 117-byte lab, took rlab validate 122 s. Each call below is refused
// within seconds; ordinary patterns over ordinary text match as before.
func TestRegexBounded(t *testing.T) {
	const pat, text = `replace(format("%010000d", 0), "0", "0?")`, `format("%0100000d", 0)`
	for _, c := range []struct{ name, expr string }{
		{name: "regexall", expr: "length(regexall(" + pat + ", " + text + "))"},
		{name: "regex", expr: "regex(join(\"\", [\"(?:\", " + pat + ", \")1\"]), " + text + ")"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "lab.hcl")
			must(t, os.WriteFile(p, []byte("host \"a\" {\n  address = \"192.0.2.1\"\n}\nlab \"r\" {\n  description = \"${"+c.expr+"}\"\n}\n"), 0o644))
			start := time.Now()
			_, diags := Load([]string{p}, LoadOptions{})
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("took %s, want under 5s", took.Round(time.Millisecond))
			}
			if !strings.Contains(diagLines(diags), "matching its pattern") {
				t.Errorf("not refused naming the match:\n%s", diagLines(diags))
			}
		})
	}
	t.Run("ordinary", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "lab.hcl")
		must(t, os.WriteFile(p, []byte(`host "a" {
  address = "192.0.2.1"
}
lab "r" {
  description = "${regex("([a-z]+)-([0-9]+)", "node-42")[1]} ${length(regexall("[0-9]+", format("%020000d", 0)))}"
}
`), 0o644))
		l, diags := Load([]string{p}, LoadOptions{})
		if diags.HasErrors() {
			t.Fatalf("errors:\n%s", diagLines(diags))
		}
		if want := "42 1"; l.Description != want {
			t.Errorf("description %q, want %q", l.Description, want)
		}
	})
}
