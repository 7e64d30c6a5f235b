package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/engine/remote"
)

// TestFactsShownRedacted: a host's facts name its login user, its work dir
// under that user's home and its RDMA devices; with user = var.login
// (which the plan and rlab run redact) rlab facts -json printed the value,
// and the table a device named by one (attack round 14).
func TestFactsShownRedacted(t *testing.T) {
	const secret = "Zq9xLOGINfacts"
	dir := t.TempDir()
	src := `lab "x" {}
variable "login" {
  type      = string
  sensitive = true
}
host "a" {
  address = "192.0.2.1"
  user    = var.login
}
workload "w" {
  tool    = "exec"
  host    = host.a
  command = ["true"]
}
`
	if err := os.WriteFile(filepath.Join(dir, "lab.hcl"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	l, diags := lab.Load([]string{filepath.Join(dir, "lab.hcl")}, lab.LoadOptions{Vars: map[string]string{"login": secret}})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	f := &proto.Facts{Hostname: "a", Kernel: "6.1.0", Arch: "x86_64", User: secret, UID: 1000, CPUs: 2,
		Netdevs: []proto.Netdev{{Name: "eth1", State: "up", Addrs: []string{"192.168.50.1/24"}}},
		RDMA:    []proto.RDMADevice{{Name: "r" + secret, Driver: "rxe", Parent: "eth1"}},
		WorkDir: "/home/" + secret + "/.cache/rlab/runs/x", FreeBytes: 1 << 30}
	res := shownFacts(l, []remote.Result{{Name: "a", Facts: f}})
	for _, asJSON := range []bool{false, true} {
		var b strings.Builder
		if asJSON {
			writeFactsJSON(&b, res)
		} else {
			writeFactsTable(&b, res)
		}
		if strings.Contains(b.String(), secret) {
			t.Errorf("json %v: the sensitive value is shown:\n%s", asJSON, b.String())
		}
		if !strings.Contains(b.String(), "(sensitive)") {
			t.Errorf("json %v: no (sensitive) in:\n%s", asJSON, b.String())
		}
	}
	if f.User != secret {
		t.Errorf("the facts themselves changed: user %q", f.User)
	}
}
