package lab

import (
	"strings"
	"testing"
)

// TestUnitSensitiveNotEchoed: a sensitive variable given to a unit
// function with a unit it does not read is reported without any part of
// its value (the redactor replaces the value whole, not its unit alone).
func TestUnitSensitiveNotEchoed(t *testing.T) {
	src := `lab "t" {}
variable "min" {
  sensitive = true
  default   = "20 Hunter2/s"
}
host "a" { address = "192.0.2.1" }
workload "w" {
  tool    = "exec"
  host    = host.a
  command = ["true"]
  expect {
    condition = result.duration > seconds(var.min)
  }
}
`
	_, diags := LoadSource("lab.hcl", []byte(src), t.TempDir(), LoadOptions{})
	if len(diags) != 1 || diags[0].Summary != "Invalid unit" {
		t.Fatalf("diagnostics %v, want one Invalid unit", diags)
	}
	if d := diags[0].Detail; strings.Contains(d, "Hunter2") || !strings.Contains(d, "seconds() reads a time in") {
		t.Errorf("detail %q: want the accepted units and no part of the secret", d)
	}
}
