package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/engine/lab"
)

// TestCheckProblemsRedacted: rlab check prints what preflight finds, and a
// finding quotes the lab (an rxe's name) and the host's facts (its login
// user, its work dir under that user's home): with user = var.login, which
// the plan and rlab run redact, check printed the value (attack round
// 14), three times for this host; rlab run's error holds the same findings
// redacted.
func TestCheckProblemsRedacted(t *testing.T) {
	const secret = "Zq9xLOGINs3cret"
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
rxe "a" {
  host   = host.a
  netdev = "eth1"
  name   = "r${var.login}"
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
	// What the host answers when logged in as that user.
	f := &proto.Facts{Hostname: "a", Kernel: "6.1.0", Arch: "x86_64", User: secret, UID: 1000,
		Netdevs:   []proto.Netdev{{Name: "eth1", State: "up", Addrs: []string{"192.168.50.1/24"}}},
		RXEModule: "loadable", MemlockSoft: 8 << 20, MemlockHard: 8 << 20,
		WorkDir: "/home/" + secret + "/.cache/rlab/runs/x", FreeBytes: 1}
	problems := checkProblems(l, map[string]*proto.Facts{"a": f})
	if len(problems) < 2 {
		t.Fatalf("want the root and disk findings, got %v", problems)
	}
	for _, p := range problems {
		if s := p.String(); strings.Contains(s, secret) {
			t.Errorf("a finding shows the sensitive value: %s", s)
		}
	}
}
