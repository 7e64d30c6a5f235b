package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOutputMasked: what validate, plan and plan -json print, on stdout
// and stderr, holds no sensitive value, wherever the lab or the user put
// it: the lab's description, a metric's unit, an expect's message, a
// command's argv, and the lab file's own path, which validate prints as
// it is (the value given as -var names the file: a course's per-student
// lab). The path was the one print no spot redaction covered; the
// output's one writer (maskOutput) masks it (failed before: 1 print).
func TestOutputMasked(t *testing.T) {
	const tok = "CANARYtok93x"
	dir := filepath.Join(t.TempDir(), "lab-"+tok)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(dir, "lab.hcl")
	src := `lab "s" {
  description = "uses ${var.tok}"
}
variable "tok" {
  type      = string
  sensitive = true
}
host "a" { address = "127.0.0.1" }
workload "w" {
  tool    = "exec"
  host    = host.a
  command = ["echo", "value=5", var.tok]
  metric "value" {
    pattern = "value=([0-9]+)"
    unit    = "u${var.tok}"
  }
  expect {
    condition = result.value > 6
    message   = "want more than ${var.tok}"
  }
}
`
	if err := os.WriteFile(f, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"validate", "-var", "tok=" + tok, f},
		{"plan", "-var", "tok=" + tok, f},
		{"plan", "-json", "-var", "tok=" + tok, f},
	} {
		out, errOut, code := rlab(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", args[:len(args)-1], code, out, errOut)
		}
		if n := strings.Count(out+errOut, tok); n > 0 {
			t.Errorf("%v prints the sensitive value %d times:\n%s%s", args[:len(args)-1], n, out, errOut)
		}
		if !strings.Contains(out+errOut, "(sensitive)") {
			t.Errorf("%v: no (sensitive) in\n%s%s", args[:len(args)-1], out, errOut)
		}
	}
}
