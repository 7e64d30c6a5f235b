package remote

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/agent/dist"
	"github.com/rlab-dev/rlab/engine/sshx"
	"github.com/rlab-dev/rlab/engine/testbed"
	"golang.org/x/crypto/ssh/knownhosts"
)

var (
	agentOnce    sync.Once
	realAgentBin []byte
	realAgentErr error
)

// realAgent is the agent rlab ships: the embedded one (make agent), else
// built here from agent/cmd/rlab-agent.
func realAgent(t *testing.T) *Agents {
	t.Helper()
	agentOnce.Do(func() {
		if b, err := dist.Binary("linux", runtime.GOARCH); err == nil {
			realAgentBin = b
			return
		}
		out := filepath.Join(os.TempDir(), "rlab-agent-remote-test")
		cmd := exec.Command("go", "build", "-trimpath", "-o", out, "../../agent/cmd/rlab-agent")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if msg, err := cmd.CombinedOutput(); err != nil {
			realAgentErr = errors.New("build agent: " + err.Error() + ": " + string(msg))
			return
		}
		realAgentBin, realAgentErr = os.ReadFile(out)
	})
	if realAgentErr != nil {
		t.Fatal(realAgentErr)
	}
	return NewAgents(func(goos, goarch string) ([]byte, error) {
		if goarch != runtime.GOARCH {
			return nil, ErrNotBuilt
		}
		return realAgentBin, nil
	})
}

func bedSpec(bed *testbed.Bed, h *testbed.Host) Spec {
	t := sshx.Target{Name: h.Name, Address: h.Addr, Port: 22, User: bed.User, IdentityFiles: []string{bed.KeyFile}, NoJump: true}
	if h.Behind {
		t.NoJump = false
		t.Jump = &sshx.Target{Name: "bastion", Address: bed.Bastion.Addr, Port: 22, User: bed.User, IdentityFiles: []string{bed.KeyFile}, NoJump: true}
	}
	return Spec{Target: t}
}

func bedOptions(bed *testbed.Bed, ag *Agents) GatherOptions {
	return GatherOptions{
		SSH:    sshx.Options{KnownHosts: []string{bed.KnownHosts}, SSHConfig: "none", AgentSocket: "none", HandshakeTimeout: 10 * time.Second},
		Agents: ag,
	}
}

// Three hosts, one only behind the bastion: every host's facts, and a warm
// second run ships no agent bytes.
func TestGatherNetns(t *testing.T) {
	bed := testbed.Start(t, testbed.Options{Hosts: 2, BehindBastion: 1})
	ag := realAgent(t)
	// Start cold: no cached agent in the (shared) home.
	os.RemoveAll(filepath.Join(bed.Home, CacheDir, ag.bin(runtime.GOARCH).hash))
	var specs []Spec
	for _, h := range bed.Hosts {
		specs = append(specs, bedSpec(bed, h))
	}
	// Round 2 is warm too, with every tool asked its version again
	// (rlab facts --refresh): the same facts come back.
	var toolsBefore map[string]string
	for round, wantCold := range []bool{true, false, false} {
		o := bedOptions(bed, ag)
		o.RefreshFacts = round == 2
		res, st, err := Gather(context.Background(), specs, o)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range res {
			if r.Err != nil {
				t.Fatalf("round %d: %v", round, r.Err)
			}
			var addrs []string
			for _, nd := range r.Facts.Netdevs {
				addrs = append(addrs, nd.Addrs...)
			}
			if !strings.Contains(strings.Join(addrs, " "), bed.Hosts[i].Addr+"/") {
				t.Errorf("round %d: host %s facts show addresses %q, want %s", round, r.Name, addrs, bed.Hosts[i].Addr)
			}
			if r.Facts.Kernel == "" || r.Facts.CPUs == 0 {
				t.Errorf("round %d: host %s facts incomplete: %+v", round, r.Name, r.Facts)
			}
			tools := map[string]string{}
			for name, tl := range r.Facts.Tools {
				tools[name] = fmt.Sprintf("%+v", tl)
			}
			if i == 0 && round == 1 {
				toolsBefore = tools
			}
			if i == 0 && round == 2 && fmt.Sprint(tools) != fmt.Sprint(toolsBefore) {
				t.Errorf("refreshed tool versions %v, cached %v", tools, toolsBefore)
			}
		}
		if wantCold && st.AgentBytes == 0 {
			t.Errorf("cold run shipped 0 agent bytes")
		}
		if !wantCold && st.AgentBytes != 0 {
			t.Errorf("warm run shipped %d agent bytes, want 0", st.AgentBytes)
		}
		t.Logf("round %d: %d hosts, %d agent bytes shipped, %s", round, st.Hosts, st.AgentBytes, st.Elapsed)
	}
}

// Each fault gives a clear error naming its host, and the healthy hosts'
// facts are still reported.
func TestGatherFaultsNetns(t *testing.T) {
	bed := testbed.Start(t, testbed.Options{Hosts: 9, BehindBastion: 1})
	ag := realAgent(t)
	H := func(n string) *testbed.Host { return bed.Host(n) }
	// h0: healthy. h1: sshd stopped. h2: silent. h3: a login script prints
	// to stdout (works). h4: full disk. h5: wrong user. h6: sudo asks for a
	// password. h7: unknown host key. h8: changed host key. b0: behind the
	// bastion (works).
	bed.StopSSHD(t, H("h1"))
	bed.Freeze(t, H("h2"))
	bed.PrivateHome(t, H("h3"), map[string]string{".bashrc": "echo 'Welcome! Remember: be nice.'\necho '{\"json\": \"from a login script\"}'\n"})
	bed.FullDisk(t, H("h4"), 64)

	strict := filepath.Join(t.TempDir(), "known_hosts") // every host but h7
	kh, _ := os.ReadFile(bed.KnownHosts)
	var keep []string
	var h0Key string
	for _, l := range strings.Split(strings.TrimSpace(string(kh)), "\n") {
		if strings.HasPrefix(l, H("h0").Addr+" ") {
			h0Key = strings.TrimPrefix(l, H("h0").Addr+" ")
		}
		if strings.HasPrefix(l, H("h7").Addr+" ") || strings.HasPrefix(l, H("h8").Addr+" ") {
			continue
		}
		keep = append(keep, l)
	}
	keep = append(keep, knownhosts.Normalize(H("h8").Addr)+" "+h0Key) // h8 "changed": h0's key
	os.WriteFile(strict, []byte(strings.Join(keep, "\n")+"\n"), 0o600)

	var specs []Spec
	for _, h := range bed.Hosts {
		s := bedSpec(bed, h)
		switch h.Name {
		case "h5":
			s.Target.User = "nosuchuser"
		case "h6":
			s.Target.User = bed.UserNoSudo
			s.Become = true
		}
		specs = append(specs, s)
	}
	o := bedOptions(bed, ag)
	o.SSH.KnownHosts = []string{strict}
	res, _, err := Gather(context.Background(), specs, o)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"h0": nil,
		"h1": {`host "h1"`, "connection refused"},
		"h2": {`host "h2"`, "no SSH answer within 10s"},
		"h3": nil,
		"h4": {`host "h4"`, "install agent", "no space left"},
		"h5": {`host "h5"`, `login as "nosuchuser" refused`},
		"h6": {`host "h6"`, "sudo -n refused", "/usr/local/libexec/rlab/agent/<sha256>/rlab-agent", "rlab agent export"},
		"h7": {`host "h7"`, "unknown host key", "--accept-new-host-keys", "SHA256:"},
		"h8": {`host "h8"`, "HOST KEY CHANGED"},
		"b0": nil,
	}
	for _, r := range res {
		w, ok := want[r.Name]
		if !ok {
			t.Errorf("unexpected host %s", r.Name)
			continue
		}
		if w == nil {
			if r.Err != nil || r.Facts == nil {
				t.Errorf("host %s: want facts, got %v", r.Name, r.Err)
			}
			continue
		}
		if r.Err == nil {
			t.Errorf("host %s: want an error with %q, got facts", r.Name, w)
			continue
		}
		for _, s := range w {
			if !strings.Contains(r.Err.Error(), s) {
				t.Errorf("host %s: error %q\nlacks %q", r.Name, r.Err, s)
			}
		}
	}
}

// With the bastion down, hosts behind it fail naming the jump host while
// the direct hosts still answer.
func TestGatherBastionDownNetns(t *testing.T) {
	bed := testbed.Start(t, testbed.Options{Hosts: 1, BehindBastion: 2})
	ag := realAgent(t)
	bed.StopSSHD(t, bed.Bastion)
	if out, _ := exec.Command("ip", "netns", "exec", bed.Bastion.NS, "ss", "-ltn").CombinedOutput(); strings.Contains(string(out), ":22 ") {
		t.Fatalf("bastion sshd still listening: %s", out)
	}
	var specs []Spec
	for _, h := range bed.Hosts {
		specs = append(specs, bedSpec(bed, h))
	}
	res, _, err := Gather(context.Background(), specs, bedOptions(bed, ag))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		switch r.Name {
		case "h0":
			if r.Err != nil {
				t.Errorf("h0: %v", r.Err)
			}
		default:
			if r.Err == nil || !strings.Contains(r.Err.Error(), "via jump host") || !strings.Contains(r.Err.Error(), bed.Bastion.Addr) || !strings.Contains(r.Err.Error(), "connection refused") {
				t.Errorf("%s: %v", r.Name, r.Err)
			}
		}
	}
}
