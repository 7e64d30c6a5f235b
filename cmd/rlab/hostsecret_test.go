package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHostErrorsRedacted: rlab facts and check print each unreachable host's
// error, which names how rlab reached it (user@address:port, the key file):
// a lab's sensitive value there is shown as (sensitive), as rlab run's status
// lines and plan show it (found in attack round 12: printed raw).
func TestHostErrorsRedacted(t *testing.T) {
	const secret = "s3cr3tZZuser"
	dir := t.TempDir()
	src := `lab "hostsecret" {}
variable "token" {
  type      = string
  sensitive = true
}
host "a" {
  address       = "127.0.0.1"
  port          = 1
  user          = var.token
  identity_file = "/nonexistent/${var.token}/id_ed25519"
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
	t.Setenv("SSH_AUTH_SOCK", "")
	for _, args := range [][]string{
		{"facts", "-var", "token=" + secret, dir},
		{"facts", "-json", "-var", "token=" + secret, dir},
		{"check", "-var", "token=" + secret, dir},
		{"check", "-json", "-var", "token=" + secret, dir},
	} {
		t.Run(strings.Join(args[:len(args)-3], " "), func(t *testing.T) {
			out, errText, code := rlab(t, args...)
			if code == exitOK {
				t.Fatalf("exit 0 for an unreachable host:\n%s%s", out, errText)
			}
			if strings.Contains(out+errText, secret) {
				t.Errorf("the sensitive value is shown:\n%s%s", out, errText)
			}
			if !strings.Contains(out+errText, "(sensitive)@127.0.0.1:1") {
				t.Errorf("the host's error is not there, redacted:\n%s%s", out, errText)
			}
		})
	}
}
