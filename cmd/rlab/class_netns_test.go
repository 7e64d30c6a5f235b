package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/engine/results"
	"github.com/rlab-dev/rlab/engine/testbed"
)

// TestClassNetns runs a class lab through the real binary on real OpenSSH
// hosts behind a bastion (the netns bed, 4 hosts): `rlab run --keep --only
// ana` logs in to ana's hosts and the bastion only, then `rlab check
// --validate` says which students pass (bob's expect is planted to fail).
func TestClassNetns(t *testing.T) {
	bed := testbed.Start(t, testbed.Options{BehindBastion: 3, LogLevel: "INFO"})
	b0, b1, b2 := bed.Host("b0"), bed.Host("b1"), bed.Host("b2")
	var b strings.Builder
	fmt.Fprintf(&b, `lab "class-netns" {}
ssh {
  user          = %q
  identity_file = %q
  known_hosts   = %q
  jump          = host.bastion
}
host "bastion" { address = %q }
locals {
  students = {
    ana = { server = %q, client = %q, min_gbps = 0 }
    bob = { server = %q, client = %q, min_gbps = 1e9 }
  }
}
host "server" {
  for_each = local.students
  address  = each.value.server
}
host "client" {
  for_each = local.students
  address  = each.value.client
}
workload "hello" {
  for_each = local.students
  tool     = "exec"
  host     = host.server[each.key]
  command  = ["hostname"]
}
workload "bulk" {
  for_each = local.students
  tool     = "tcp"
  server   = host.server[each.key]
  client   = host.client[each.key]
  bytes    = "4MiB"
  expect {
    condition = result.tcp_gbps > each.value.min_gbps
    message   = "TCP between the student's VMs too slow"
  }
}
`, bed.User, bed.KeyFile, bed.KnownHosts, bed.Bastion.Addr, b0.Addr, b1.Addr, b2.Addr, b2.Addr)
	p := filepath.Join(t.TempDir(), "class.hcl")
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}

	before := map[string]int{}
	for _, h := range []*testbed.Host{bed.Bastion, b0, b1, b2} {
		before[h.Name] = bed.Logins(t, h)
	}
	out := filepath.Join(t.TempDir(), "run")
	stdout, stderr, code := runRlab(t, "run", "--keep", "--only", "ana", "--out", out, p)
	if code != exitOK {
		t.Fatalf("run --only ana: exit %d\n%s%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "students: 1 of 1 ready") {
		t.Errorf("run --only ana output lacks the students table:\n%s", stdout)
	}
	for _, h := range []*testbed.Host{bed.Bastion, b0, b1} {
		if bed.Logins(t, h) == before[h.Name] {
			t.Errorf("run --only ana: no login to %s (ana's host or the bastion)", h.Name)
		}
	}
	if n := bed.Logins(t, b2) - before[b2.Name]; n != 0 {
		t.Errorf("run --only ana logged in to bob's host %d times", n)
	}
	for _, f := range []string{"students/ana/hosts/server.ana/facts.json", "students/ana/results.json", "students/ana/summary.md", results.StudentsFile} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "students", "bob")); err == nil {
		t.Error("run --only ana made a folder for bob")
	}

	tests := []struct {
		args  []string
		code  int
		lines []string
	}{
		{nil, exitFail, []string{"students: 1 of 2 ready", "ana      3      1 ok, 0 failed  ready"}},
		{[]string{"--only", "ana"}, exitOK, []string{"students: 1 of 1 ready"}},
	}
	for _, tt := range tests {
		args := append(append([]string{"check", "--validate"}, tt.args...), "--out", filepath.Join(t.TempDir(), "check"), p)
		stdout, stderr, code := runRlab(t, args...)
		if code != tt.code {
			t.Errorf("rlab %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, tt.code, stdout, stderr)
			continue
		}
		for _, l := range tt.lines {
			if !strings.Contains(stdout, "\n  "+l+"\n") && !strings.HasPrefix(stdout, l+"\n") && !strings.Contains(stdout, "\n"+l+"\n") {
				t.Errorf("rlab %s: stdout lacks %q:\n%s", strings.Join(args, " "), l, stdout)
			}
		}
		if tt.code == exitFail && !strings.Contains(stdout, `bob: workload "bulk[\"bob\"]": wanted result.tcp_gbps > each.value.min_gbps at 4 MiB: got tcp_gbps = `) {
			t.Errorf("check: bob's failing expect not shown with what it got:\n%s", stdout)
		}
	}

	// bob's VM down: exit 2, ana still checked and ready, bob failed with
	// the connect error.
	bed.StopSSHD(t, b2)
	defer bed.StartSSHD(t, b2)
	stdout, stderr, code = runRlab(t, "check", "--validate", "--out", filepath.Join(t.TempDir(), "down"), p)
	if code != exitInfra {
		t.Fatalf("check with bob's host down: exit %d, want 2\n%s%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "ana      3      1 ok, 0 failed  ready") || !strings.Contains(stdout, `bob      3      0 ok, 1 failed  failed: connect to host "server[\"bob\"]"`) {
		t.Errorf("check with bob's host down:\n%s", stdout)
	}
}
