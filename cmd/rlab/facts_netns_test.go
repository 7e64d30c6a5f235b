package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rlab-dev/rlab/engine/testbed"
)

var (
	factsBinOnce sync.Once
	factsBin     string
	factsBinErr  error
)

// rlabBin is the rlab under test: $RLAB_BIN (make test-netns builds it with
// the agent embedded), else built here.
func rlabBin(t *testing.T) string {
	t.Helper()
	if b := os.Getenv("RLAB_BIN"); b != "" {
		return b
	}
	factsBinOnce.Do(func() {
		factsBin = filepath.Join(os.TempDir(), "rlab-facts-test")
		out, err := exec.Command("go", "build", "-o", factsBin, ".").CombinedOutput()
		if err != nil {
			factsBinErr = fmt.Errorf("build rlab: %v: %s", err, out)
		}
	})
	if factsBinErr != nil {
		t.Fatal(factsBinErr)
	}
	return factsBin
}

func runRlab(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(rlabBin(t), args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	cmd.Env = append(os.Environ(), "SSH_AUTH_SOCK=")
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return o.String(), e.String(), code
}

// bedLab writes a lab for the bed: its direct hosts and those behind the
// bastion (jump), plus extra HCL.
func bedLab(t *testing.T, bed *testbed.Bed, knownHosts, extra string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "lab \"bed\" {}\n\nssh {\n  user          = %q\n  identity_file = %q\n  known_hosts   = %q\n}\n\n", bed.User, bed.KeyFile, knownHosts)
	for _, h := range bed.Hosts {
		fmt.Fprintf(&b, "host %q {\n  address = %q\n", h.Name, h.Addr)
		if h.Behind {
			fmt.Fprintf(&b, "  jump    = %q\n", bed.User+"@"+bed.Bastion.Addr+":22")
		}
		b.WriteString("}\n")
	}
	b.WriteString(extra)
	p := filepath.Join(t.TempDir(), "bed.hcl")
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestFactsAndCheckNetns(t *testing.T) {
	bed := testbed.Start(t, testbed.Options{Hosts: 2, BehindBastion: 1})
	labFile := bedLab(t, bed, bed.KnownHosts, "")

	out, stderr, code := runRlab(t, "facts", "-json", labFile)
	if code != 0 {
		t.Fatalf("rlab facts -json: exit %d\n%s%s", code, out, stderr)
	}
	var got map[string]struct {
		Facts *struct {
			Kernel  string `json:"kernel"`
			Netdevs []struct {
				Name  string   `json:"name"`
				Addrs []string `json:"addrs"`
			} `json:"netdevs"`
			RXE string `json:"rxe_module"`
		} `json:"facts"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("facts -json output: %v\n%s", err, out)
	}
	for _, h := range bed.Hosts {
		f := got[h.Name].Facts
		if f == nil {
			t.Errorf("no facts for %s: %+v", h.Name, got[h.Name])
			continue
		}
		if !strings.Contains(fmt.Sprint(f.Netdevs), h.Addr+"/") {
			t.Errorf("%s: netdevs %v lack %s", h.Name, f.Netdevs, h.Addr)
		}
	}
	// Warm: every host has the agent, nothing is shipped.
	_, stderr, code = runRlab(t, "facts", "-v", labFile)
	if code != 0 || !strings.Contains(stderr, "agent: 0 bytes shipped to 3 hosts") {
		t.Errorf("warm facts: exit %d, stderr:\n%s", code, stderr)
	}

	// check: this kernel has no rdma_rxe; say so and exit 1.
	rxeLab := bedLab(t, bed, bed.KnownHosts, "\nrxe \"h0\" {\n  host   = host.h0\n  netdev = \"eth0\"\n}\n")
	out, stderr, code = runRlab(t, "check", rxeLab)
	if code != 1 {
		t.Errorf("rlab check: exit %d, want 1\n%s%s", code, out, stderr)
	}
	if !strings.Contains(out, `host "h0": kernel `) || !strings.Contains(out, "has no rdma_rxe module: install the distribution's extra kernel modules package") {
		t.Errorf("rlab check output lacks the rdma_rxe problem:\n%s", out)
	}
	// A host down: exit 2, its error named, the others' facts printed.
	bed.StopSSHD(t, bed.Host("h1"))
	out, stderr, code = runRlab(t, "facts", "-json", labFile)
	if code != 2 {
		t.Errorf("facts with h1 down: exit %d, want 2", code)
	}
	got = nil
	json.Unmarshal([]byte(out), &got)
	if got["h0"].Facts == nil || got["b0"].Facts == nil || !strings.Contains(got["h1"].Error, `host "h1"`) || !strings.Contains(got["h1"].Error, "connection refused") {
		t.Errorf("facts with h1 down:\n%s\n%s", out, stderr)
	}
	out, _, code = runRlab(t, "check", rxeLab)
	if code != 2 || !strings.Contains(out, `host "h1"`) || !strings.Contains(out, "rdma_rxe") {
		t.Errorf("check with h1 down: exit %d, want 2 with h0's problem and h1's error:\n%s", code, out)
	}
}

func TestFactsHostKeysNetns(t *testing.T) {
	bed := testbed.Start(t, testbed.Options{Hosts: 2})
	kh := filepath.Join(t.TempDir(), "known_hosts")
	labFile := bedLab(t, bed, kh, "")
	out, _, code := runRlab(t, "facts", labFile)
	if code != 2 || !strings.Contains(out, "unknown host key") || !strings.Contains(out, "--accept-new-host-keys") {
		t.Fatalf("unknown hosts: exit %d\n%s", code, out)
	}
	out, stderr, code := runRlab(t, "facts", "--accept-new-host-keys", labFile)
	if code != 0 {
		t.Fatalf("--accept-new-host-keys: exit %d\n%s%s", code, out, stderr)
	}
	b, _ := os.ReadFile(kh)
	if n := strings.Count(string(b), "ssh-ed25519"); n != 2 {
		t.Errorf("known_hosts has %d keys, want 2:\n%s", n, b)
	}
	// Now strict again, and it passes.
	if out, stderr, code := runRlab(t, "facts", labFile); code != 0 {
		t.Errorf("after recording: exit %d\n%s%s", code, out, stderr)
	}
}
