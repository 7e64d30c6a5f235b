package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

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
	return runRlabWithin(t, 15*time.Minute, args...)
}

// runRlabWithin is runRlab with a liveness bound: a command still running
// after it fails the test (not a timing assertion: the bounds are minutes).
func runRlabWithin(t *testing.T, bound time.Duration, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	cmd := exec.CommandContext(ctx, rlabBin(t), args...)
	cmd.WaitDelay = 10 * time.Second
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	cmd.Env = append(os.Environ(), "SSH_AUTH_SOCK=")
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("rlab %s did not end within %s\n%s%s", strings.Join(args, " "), bound, o.String(), e.String())
	}
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
			RXE      string `json:"rxe_module"`
			Platform struct {
				Virtualization string `json:"virtualization"`
				DistroID       string `json:"distro_id"`
			} `json:"platform"`
		} `json:"facts"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("facts -json output: %v\n%s", err, out)
	}
	t.Logf("rlab facts -json:\n%s", out)
	for _, h := range bed.Hosts {
		f := got[h.Name].Facts
		if f == nil {
			t.Errorf("no facts for %s: %+v", h.Name, got[h.Name])
			continue
		}
		// The namespaces share this machine's sysfs, /proc and /etc.
		if f.Platform.Virtualization == "" || f.Platform.DistroID == "" {
			t.Errorf("%s: platform %+v lacks virtualization or distribution", h.Name, f.Platform)
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
	// --host gathers only the hosts named (b0 through its jump host): h1
	// being down is none of its business.
	out, stderr, code = runRlab(t, "facts", "-json", "--host", "b0,h0", labFile)
	got = nil
	json.Unmarshal([]byte(out), &got)
	if code != 0 || len(got) != 2 || got["b0"].Facts == nil || got["h0"].Facts == nil {
		t.Errorf("facts --host b0,h0 with h1 down: exit %d, want 0 and b0, h0 only:\n%s\n%s", code, out, stderr)
	}
	out, stderr, code = runRlab(t, "facts", "--host", "b00", labFile)
	if code != 1 || !strings.Contains(stderr, `--host "b00": lab "bed" has no host of that name; did you mean "b0"?`) {
		t.Errorf("facts --host b00: exit %d, want 1 naming the unknown host:\n%s%s", code, out, stderr)
	}
	out, _, code = runRlab(t, "check", rxeLab)
	if code != 2 || !strings.Contains(out, `host "h1"`) || !strings.Contains(out, "rdma_rxe") {
		t.Errorf("check with h1 down: exit %d, want 2 with h0's problem and h1's error:\n%s", code, out)
	}
}

// TestFactsHostKeysNetns: unknown host keys are refused naming the flag;
// with --accept-new-host-keys they are recorded in the user's known_hosts
// (--known-hosts) and the file the lab names is never written, even when
// it is an authorized_keys file or a path in a folder that does not exist
// (the attack: a lab's known_hosts pointing at ~/.ssh/authorized_keys2).
// Then strict again, and the hosts pass. A key pinned in the user's file
// wins over the lab's (refused as changed, naming both).
func TestFactsHostKeysNetns(t *testing.T) {
	bed := testbed.Start(t, testbed.Options{Hosts: 2})
	home := t.TempDir()
	userKH := filepath.Join(home, "mine", "known_hosts")
	for _, labKH := range []string{filepath.Join(home, ".ssh", "authorized_keys2"), filepath.Join(home, "no", "such", "dir", "known_hosts")} {
		os.MkdirAll(filepath.Join(home, ".ssh"), 0o700)
		os.WriteFile(filepath.Join(home, ".ssh", "authorized_keys2"), nil, 0o600)
		os.RemoveAll(filepath.Dir(userKH))
		labFile := bedLab(t, bed, labKH, "")
		out, _, code := runRlab(t, "facts", "--known-hosts", userKH, labFile)
		if code != 2 || !strings.Contains(out, "unknown host key") || !strings.Contains(out, "--accept-new-host-keys") {
			t.Fatalf("unknown hosts: exit %d\n%s", code, out)
		}
		out, stderr, code := runRlab(t, "facts", "--known-hosts", userKH, "--accept-new-host-keys", labFile)
		if code != 0 {
			t.Fatalf("--accept-new-host-keys: exit %d\n%s%s", code, out, stderr)
		}
		b, _ := os.ReadFile(userKH)
		if n := strings.Count(string(b), "ssh-ed25519"); n != 2 {
			t.Errorf("user's known_hosts has %d keys, want 2:\n%s", n, b)
		}
		if b, err := os.ReadFile(labKH); len(b) != 0 || (err == nil) != strings.HasSuffix(labKH, "authorized_keys2") {
			t.Errorf("the lab's known_hosts %s was written (%v):\n%s", labKH, err, b)
		}
		if _, err := os.Stat(filepath.Join(home, "no")); err == nil {
			t.Errorf("a folder for the lab's known_hosts was created")
		}
		// Now strict again, and it passes.
		if out, stderr, code := runRlab(t, "facts", "--known-hosts", userKH, labFile); code != 0 {
			t.Errorf("after recording: exit %d\n%s%s", code, out, stderr)
		}
	}
	// The user pins another key for h0; the lab's file lists the real one.
	h0 := bed.Hosts[0]
	other := filepath.Join(home, "other")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", other).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v: %s", err, out)
	}
	pub, _ := os.ReadFile(other + ".pub")
	f := strings.Fields(string(pub))
	os.WriteFile(userKH, []byte(h0.Addr+" "+f[0]+" "+f[1]+"\n"), 0o600)
	out, _, code := runRlab(t, "facts", "-json", "--known-hosts", userKH, bedLab(t, bed, bed.KnownHosts, ""))
	var got map[string]factsJSON
	json.Unmarshal([]byte(out), &got)
	if code != 2 || !strings.Contains(got[h0.Name].Error, "HOST KEY CHANGED") || !strings.Contains(got[h0.Name].Error, "always wins") || got[bed.Hosts[1].Name].Facts == nil {
		t.Errorf("a pinned key against the lab's: exit %d, want 2 with h0 refused and h1 answering:\n%s", code, out)
	}
}

// TestFactsJumpChainNetns: hosts behind two bastions (c0, c1 reached
// through bastion, then bastion2), written both ways the lab language has
// (host references, and a "u@b1,u@b2" ProxyJump string). rlab facts -json
// reports every host, and each bastion is logged into once for the whole
// command (counted in the bastions' sshd logs). With bastion2 down, the
// hosts behind it fail with an error naming both hops while the others are
// still reported.
func TestFactsJumpChainNetns(t *testing.T) {
	// Logins are counted per command: no persisting mux (a warm mux would
	// log in 0 times).
	t.Setenv("RLAB_PERSIST", "")
	bed := testbed.Start(t, testbed.Options{Hosts: 1, BehindBastion: 1, BehindBastion2: 2, MaxStartups: "10:30:100", LogLevel: "INFO"})
	b1, b2 := bed.Bastion, bed.Bastion2
	head := fmt.Sprintf("lab \"chain\" {}\n\nssh {\n  user          = %q\n  identity_file = %q\n  known_hosts   = %q\n}\n\n", bed.User, bed.KeyFile, bed.KnownHosts)
	hostsHCL := func(jump func(h *testbed.Host) string) string {
		var b strings.Builder
		for _, h := range bed.Hosts {
			fmt.Fprintf(&b, "host %q {\n  address = %q\n", h.Name, h.Addr)
			if j := jump(h); j != "" {
				fmt.Fprintf(&b, "  jump    = %s\n", j)
			}
			b.WriteString("}\n")
		}
		return b.String()
	}
	forms := []struct {
		name     string
		hcl      string
		bastions []string // lab hosts that are bastions (facts gathered on them too)
		logins   int      // logins each bastion sees for one rlab facts
	}{
		{
			// null leaves jump unset: "var.via ? null : ..." is a direct host.
			name: "host references",
			hcl: head + "variable \"via\" {\n  default = true\n}\n" +
				fmt.Sprintf("host \"bastion\" {\n  address = %q\n}\nhost \"bastion2\" {\n  address = %q\n  jump    = host.bastion\n}\n", b1.Addr, b2.Addr) +
				hostsHCL(func(h *testbed.Host) string {
					switch len(h.Via) {
					case 1:
						return "var.via ? host.bastion : null"
					case 2:
						return "host.bastion2"
					}
					return "var.via ? null : host.bastion"
				}),
			bastions: []string{"bastion", "bastion2"},
			// The bastions are lab hosts too: their own facts and the jumps
			// through them share one login each.
			logins: 1,
		},
		{
			name: "proxyjump string",
			hcl: head + hostsHCL(func(h *testbed.Host) string {
				switch len(h.Via) {
				case 1:
					return fmt.Sprintf("%q", bed.User+"@"+b1.Addr)
				case 2:
					return fmt.Sprintf("%q", bed.User+"@"+b1.Addr+","+bed.User+"@"+b2.Addr+":22")
				}
				return ""
			}),
			logins: 1,
		},
	}
	type result struct {
		Facts *struct {
			Netdevs []struct {
				Addrs []string `json:"addrs"`
			} `json:"netdevs"`
		} `json:"facts"`
		Error string `json:"error"`
	}
	for _, f := range forms {
		t.Run(f.name, func(t *testing.T) {
			labFile := filepath.Join(t.TempDir(), "chain.hcl")
			if err := os.WriteFile(labFile, []byte(f.hcl), 0o600); err != nil {
				t.Fatal(err)
			}
			before1, before2 := bed.Logins(t, b1), bed.Logins(t, b2)
			out, stderr, code := runRlab(t, "facts", "-json", labFile)
			if code != 0 {
				t.Fatalf("rlab facts -json: exit %d\n%s%s", code, out, stderr)
			}
			var got map[string]result
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("facts -json output: %v\n%s", err, out)
			}
			want := map[string]string{}
			for _, h := range bed.Hosts {
				want[h.Name] = h.Addr
			}
			for _, n := range f.bastions {
				want[n] = bed.Host(n).Addr
			}
			if len(got) != len(want) {
				t.Errorf("facts for %d hosts, want %d:\n%s", len(got), len(want), out)
			}
			for name, addr := range want {
				r := got[name]
				if r.Facts == nil {
					t.Errorf("no facts for %s: %+v", name, r)
					continue
				}
				if !strings.Contains(fmt.Sprint(r.Facts.Netdevs), addr+"/") {
					t.Errorf("%s: facts from another host? netdevs %v lack %s", name, r.Facts.Netdevs, addr)
				}
			}
			// However many hosts are behind it, a bastion is logged into
			// once as a jump host.
			if n := bed.Logins(t, b1) - before1; n != f.logins {
				t.Errorf("bastion: %d logins for one rlab facts, want %d", n, f.logins)
			}
			if n := bed.Logins(t, b2) - before2; n != f.logins {
				t.Errorf("bastion2: %d logins for one rlab facts, want %d", n, f.logins)
			}
		})
	}

	bed.StopSSHD(t, b2)
	for _, f := range forms {
		t.Run(f.name+", bastion2 down", func(t *testing.T) {
			labFile := filepath.Join(t.TempDir(), "chain.hcl")
			if err := os.WriteFile(labFile, []byte(f.hcl), 0o600); err != nil {
				t.Fatal(err)
			}
			out, stderr, code := runRlab(t, "facts", "-json", labFile)
			if code != 2 {
				t.Errorf("exit %d, want 2\n%s", code, stderr)
			}
			var got map[string]result
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("facts -json output: %v\n%s", err, out)
			}
			for _, h := range bed.Hosts {
				r := got[h.Name]
				if len(h.Via) < 2 {
					if r.Facts == nil {
						t.Errorf("%s (not behind bastion2) not reported: %+v", h.Name, r)
					}
					continue
				}
				msg := strings.ToLower(r.Error)
				for _, w := range []string{fmt.Sprintf("host %q", h.Name), b2.Addr + ":22 via", b1.Addr + ":22", "connection refused"} {
					if !strings.Contains(msg, w) {
						t.Errorf("%s: error %q lacks %q", h.Name, r.Error, w)
					}
				}
			}
		})
	}
}
