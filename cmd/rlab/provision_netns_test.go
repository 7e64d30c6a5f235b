package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/engine/testbed"
)

// provLab is a lab on the bed whose tools this machine has (tcpdump for the
// capture; the tcp workload is the agent's own), with become, plus extra.
func provLab(t *testing.T, bed *testbed.Bed, hostExtra, extra string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "lab \"prov\" {}\n\nssh {\n  user          = %q\n  identity_file = %q\n  known_hosts   = %q\n  become        = true\n}\n\n", bed.User, bed.KeyFile, bed.KnownHosts)
	for _, h := range bed.Hosts {
		fmt.Fprintf(&b, "host %q {\n  address = %q\n%s}\n", h.Name, h.Addr, hostExtra)
	}
	b.WriteString(`
capture "c" {
  host   = host.h0
  netdev = "any"
  filter = "tcp"
}

workload "tcp" {
  tool   = "tcp"
  server = host.h0
  client = host.h1
  bytes  = "1MiB"
}
`)
	b.WriteString(extra)
	p := filepath.Join(t.TempDir(), "prov.hcl")
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

type provJSON struct {
	Host      string   `json:"host"`
	Family    string   `json:"family"`
	Installed []string `json:"installed"`
	Error     string   `json:"error"`
}

// TestProvisionCmdNetns: rlab provision and rlab run --provision on real
// sshd hosts sharing this machine's packages: what the lab needs is there,
// so nothing is installed, twice (idempotent: no package manager runs);
// a host whose kernel lacks rdma_rxe (an rxe on it) fails alone, named,
// while the other is ready; run --provision (and provision = true) run the
// lab after the provision phase.
func TestProvisionCmdNetns(t *testing.T) {
	bed := testbed.Start(t, testbed.Options{Hosts: 2})
	labFile := provLab(t, bed, "", "")
	for i := 0; i < 2; i++ {
		out := filepath.Join(t.TempDir(), "prov")
		stdout, stderr, code := runRlab(t, "provision", "--json", "--out", out, "--lock-wait", "30s", "--timeout", "5m", labFile)
		if code != 0 {
			t.Fatalf("rlab provision (%d): exit %d\n%s%s", i, code, stdout, stderr)
		}
		var got []provJSON
		if err := json.Unmarshal([]byte(stdout), &got); err != nil {
			t.Fatalf("provision --json: %v\n%s", err, stdout)
		}
		if len(got) != 2 {
			t.Fatalf("hosts %+v", got)
		}
		for _, h := range got {
			if h.Error != "" || len(h.Installed) != 0 || h.Family != "debian" {
				t.Errorf("host %s: %+v", h.Host, h)
			}
		}
		if !strings.Contains(stderr, "host h0: nothing to install") || !strings.Contains(stderr, "host h1: nothing to install") {
			t.Errorf("progress lines:\n%s", stderr)
		}
		b, err := os.ReadFile(filepath.Join(out, "provision.json"))
		if err != nil || !strings.Contains(string(b), `"lab": "prov"`) {
			t.Errorf("provision.json: %v\n%s", err, b)
		}
		if st, err := os.Stat(out); err != nil || st.Mode().Perm() != 0o700 {
			t.Errorf("provision directory mode: %v %v", st, err)
		}
	}

	// An rxe on h0: this machine's Debian kernel has no rdma_rxe and no
	// package rlab knows ships it; h0 fails, h1 is ready, exit 2.
	rxeLab := provLab(t, bed, "", "\nrxe \"r\" {\n  host   = host.h0\n  netdev = \"eth0\"\n}\n")
	stdout, stderr, code := runRlab(t, "provision", "--out", filepath.Join(t.TempDir(), "p"), rxeLab)
	if code != 2 {
		t.Fatalf("provision with rxe: exit %d, want 2\n%s%s", code, stdout, stderr)
	}
	for _, w := range []string{`host "h0": provision: kernel`, "has no rdma_rxe module"} {
		if !strings.Contains(stdout, w) && !strings.Contains(stderr, w) {
			t.Errorf("output lacks %q\n%s%s", w, stdout, stderr)
		}
	}
	if !regexp.MustCompile(`(?m)^h1\s+debian\s+-\s+ready$`).MatchString(stdout) || !regexp.MustCompile(`(?m)^h0\s+\S+\s+-\s+failed$`).MatchString(stdout) {
		t.Errorf("table: want h0 failed, h1 ready:\n%s", stdout)
	}

	// rlab run --provision, and the lab's own provision = true.
	for _, args := range [][]string{
		{"run", "--provision", "--provision-lock-wait", "30s", "--provision-timeout", "5m", "--out", filepath.Join(t.TempDir(), "run"), labFile},
		{"run", "--out", filepath.Join(t.TempDir(), "run"), provLab(t, bed, "  provision = true\n", "")},
	} {
		stdout, stderr, code := runRlab(t, args...)
		if code != 0 {
			t.Fatalf("rlab %s: exit %d\n%s%s", strings.Join(args[:len(args)-1], " "), code, stdout, stderr)
		}
		ev, err := os.ReadFile(filepath.Join(args[len(args)-2], "events.jsonl"))
		if err != nil || !strings.Contains(string(ev), `"step":"provision"`) || !strings.Contains(string(ev), "nothing to install") {
			t.Errorf("rlab %s: events.jsonl has no provision step: %v", args[1], err)
		}
	}
}
