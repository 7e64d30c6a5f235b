package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunRefusesVMsThatDoNotFit: rlab run of a class whose VMs' memory no
// machine has (8 × 1TiB) exits 1 before it makes anything, with the numbers
// and the fix; rlab plan of it says the same. (The engine's test injects
// the machine's figures: engine/run TestRunRefusesVMsThatDoNotFit; this one
// reads this machine's.)
func TestRunRefusesVMsThatDoNotFit(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "big.hcl")
	src := `lab "big" {}
host "server" {
  for_each = toset(["a", "b", "c", "d"])
  vm {
    memory = "1TiB"
    network "pair" {
      name    = "pair-${each.key}"
      address = "10.99.0.1/24"
    }
  }
}
host "client" {
  for_each = toset(["a", "b", "c", "d"])
  vm {
    memory = "1TiB"
    network "pair" {
      name    = "pair-${each.key}"
      address = "10.99.0.2/24"
    }
  }
}
workload "x" {
  for_each = toset(["a", "b", "c", "d"])
  tool     = "tcp"
  server   = host.server[each.key]
  client   = host.client[each.key]
}
`
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/proc/meminfo"); err != nil {
		t.Skip("no /proc/meminfo: this machine's memory is unknown, so nothing is refused")
	}
	out, _, code := rlab(t, "plan", p)
	if code != exitOK || !strings.Contains(out, "Local VMs: 8, with 8TiB of guest memory and 8 vCPUs in all") || !strings.Contains(out, "they do not fit, and rlab run refuses to boot them") {
		t.Errorf("plan: exit %d, want the cost and that it does not fit:\n%s", code, out)
	}
	runDir := filepath.Join(dir, "run")
	_, errOut, code := rlab(t, "run", "--out", runDir, p)
	if code != exitFail || !strings.Contains(errOut, "8 local VMs need 8TiB of guest memory in all, but this machine has") || !strings.Contains(errOut, `set memory = "`) {
		t.Errorf("run: exit %d, want 1 and the refusal with its numbers:\n%s", code, errOut)
	}
	if _, err := os.Stat(runDir); !os.IsNotExist(err) {
		t.Errorf("refused run made %s (%v)", runDir, err)
	}
}
