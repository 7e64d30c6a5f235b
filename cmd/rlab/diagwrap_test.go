package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/engine/lab"
)

// TestDiagsRedactedBeforeWrap: on a terminal hcl wraps a diagnostic's
// detail at the terminal's width, and a sensitive value with a space in it
// (a passphrase) quoted by a function's error was split over two lines
// that the redactor, run over the output, no longer matched: `rlab
// validate -var 'token=correct horse battery staple'` at 60 or 70 columns
// showed it (attack round 13). The lab chooses where the value falls in
// the line (a word before it), so every width is open to it.
func TestDiagsRedactedBeforeWrap(t *testing.T) {
	const secret = "correct horse battery staple"
	dir := t.TempDir()
	src := `lab "x" {}
variable "token" {
  type      = string
  sensitive = true
}
host "a" { address = "127.0.0.1" }
workload "w" {
  tool    = "exec"
  host    = host.a
  command = ["echo", tonumber(var.token)]
}
`
	if err := os.WriteFile(filepath.Join(dir, "lab.hcl"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	l, diags := lab.Load([]string{filepath.Join(dir, "lab.hcl")}, lab.LoadOptions{Vars: map[string]string{"token": secret}})
	if !diags.HasErrors() {
		t.Fatal("the lab loaded: want tonumber's error quoting the value")
	}
	for _, width := range []uint{0, 50, 60, 70, 80, 100} {
		for _, color := range []bool{false, true} {
			var b strings.Builder
			writeDiagsAs(&b, l, diags, width, color)
			out := b.String()
			for _, word := range strings.Fields(secret) {
				if strings.Contains(out, word) {
					t.Errorf("width %d, colour %v: %q of the sensitive value printed:\n%s", width, color, word, out)
				}
			}
			if !strings.Contains(out, "(sensitive)") {
				t.Errorf("width %d, colour %v: no (sensitive) in:\n%s", width, color, out)
			}
		}
	}
}
