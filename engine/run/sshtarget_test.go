package run

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/engine/plan"
	"github.com/rlab-dev/rlab/engine/runstate"
	"github.com/rlab-dev/rlab/engine/sshx"
)

// TestHostTarget: how a lab host, and a host read back from state.json,
// is reached over SSH (the one place rlab run, down, facts and check take
// it from): its own identity file or the run's; a lab host as bastion
// with its own user, key and jump; a jump string whose bastions take the
// host's user (unless they name one) and keys; a VM directly.
func TestHostTarget(t *testing.T) {
	ids := []string{"/ids/run"}
	b2 := &lab.Host{Name: "b2", Address: "10.0.0.2", Port: 22, User: "ops2", IdentityFile: "/ids/b2"}
	b1 := &lab.Host{Name: "b1", Address: "10.0.0.1", Port: 2222, User: "ops", Jump: "b2", JumpHost: b2}
	tests := []struct {
		name string
		h    *lab.Host
		want sshx.Target
	}{
		{"direct, the run's identities", &lab.Host{Name: "a", Address: "192.0.2.1", Port: 22, User: "root"},
			sshx.Target{Name: "a", Address: "192.0.2.1", Port: 22, User: "root", IdentityFiles: ids}},
		{"own identity file", &lab.Host{Name: "a", Address: "192.0.2.1", Port: 22, User: "root", IdentityFile: "/k/a"},
			sshx.Target{Name: "a", Address: "192.0.2.1", Port: 22, User: "root", IdentityFiles: []string{"/k/a"}}},
		{"through lab hosts", &lab.Host{Name: "a", Address: "192.0.2.1", Port: 22, User: "root", Jump: "b1", JumpHost: b1},
			sshx.Target{Name: "a", Address: "192.0.2.1", Port: 22, User: "root", IdentityFiles: ids,
				Jump: &sshx.Target{Name: "b1", Address: "10.0.0.1", Port: 2222, User: "ops", IdentityFiles: ids,
					Jump: &sshx.Target{Name: "b2", Address: "10.0.0.2", Port: 22, User: "ops2", IdentityFiles: []string{"/ids/b2"}}}}},
		{"jump string", &lab.Host{Name: "a", Address: "192.0.2.1", Port: 22, User: "root", IdentityFile: "/k/a", Jump: "bastion.example.org,j@10.0.0.9:2200"},
			sshx.Target{Name: "a", Address: "192.0.2.1", Port: 22, User: "root", IdentityFiles: []string{"/k/a"},
				Jump: &sshx.Target{Name: "bastion 10.0.0.9", Address: "10.0.0.9", Port: 2200, User: "j", IdentityFiles: []string{"/k/a"},
					Jump: &sshx.Target{Name: "bastion bastion.example.org", Address: "bastion.example.org", User: "root", IdentityFiles: []string{"/k/a"}, NoJump: true}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if d := cmp.Diff(tt.want, HostTarget(tt.h, ids)); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
			// A run reaches it as its plan resolved it, the same way.
			if d := cmp.Diff(tt.want, planTarget(hostPlanOf(t, tt.h), ids, 0)); d != "" {
				t.Errorf("from the plan (-want +got):\n%s", d)
			}
			// `rlab down` reaches the host from state.json alone, through
			// the same bastions with the same users and keys as the run.
			b, err := json.Marshal(stateHostOf(hostPlanOf(t, tt.h), 0))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(b), `"jump"`) {
				t.Errorf("state.json flattens the jump to a string down must parse: %s", b)
			}
			var sh runstate.Host
			if err := json.Unmarshal(b, &sh); err != nil {
				t.Fatal(err)
			}
			got, err := stateTarget(sh, ids)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("from state.json %s (-want +got):\n%s", b, d)
			}
		})
	}
	state := []struct {
		name string
		h    runstate.Host
		want sshx.Target
	}{
		{"VM: direct whatever the ssh config says", runstate.Host{Name: "v", Address: "127.0.0.1", Port: 10022, User: "root", IdentityFile: "/vm/id", VM: true, Jump: "ignored"},
			sshx.Target{Name: "v", Address: "127.0.0.1", Port: 10022, User: "root", IdentityFiles: []string{"/vm/id"}, NoJump: true}},
		{"hops recorded", runstate.Host{Name: "a", Address: "192.0.2.1", Port: 22, User: "root", Hops: []plan.Hop{{User: "ops", Address: "10.0.0.1", Port: 2222}}},
			sshx.Target{Name: "a", Address: "192.0.2.1", Port: 22, User: "root", IdentityFiles: ids,
				Jump: &sshx.Target{Name: "bastion 10.0.0.1", Address: "10.0.0.1", Port: 2222, User: "ops", IdentityFiles: ids, NoJump: true}}},
		// A state.json from before hops were recorded has the jump string.
		{"older state: jump string", runstate.Host{Name: "a", Address: "192.0.2.1", Port: 22, User: "root", Jump: "ops@10.0.0.1:2222,10.0.0.2"},
			sshx.Target{Name: "a", Address: "192.0.2.1", Port: 22, User: "root", IdentityFiles: ids,
				Jump: &sshx.Target{Name: "bastion 10.0.0.2", Address: "10.0.0.2", User: "root", IdentityFiles: ids,
					Jump: &sshx.Target{Name: "bastion 10.0.0.1", Address: "10.0.0.1", Port: 2222, User: "ops", IdentityFiles: ids, NoJump: true}}}},
	}
	for _, tt := range state {
		t.Run(tt.name, func(t *testing.T) {
			got, err := stateTarget(tt.h, ids)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

// TestPlanTargetSensitive: a host whose address and user come from a
// sensitive variable is dialled at that address as that user; only the
// plan's text and plan.json show them redacted.
func TestPlanTargetSensitive(t *testing.T) {
	l := loadLab(t, `lab "t" {}
variable "addr" {
  type      = string
  default   = "192.0.2.77"
  sensitive = true
}
variable "login" {
  type      = string
  default   = "s3cr3t-user"
  sensitive = true
}
host "a" {
  address = var.addr
  user    = var.login
}
workload "x" {
  tool    = "exec"
  host    = host.a
  command = ["true"]
}
`)
	p := planned(t, l, plan.Options{})
	hp := p.Agents()[0]
	want := sshx.Target{Name: "a", Address: "192.0.2.77", Port: 22, User: "s3cr3t-user"}
	if d := cmp.Diff(want, planTarget(hp, nil, 0)); d != "" {
		t.Errorf("the run dials (-want +got):\n%s", d)
	}
	js, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(js), "192.0.2.77") || strings.Contains(string(js), "s3cr3t-user") {
		t.Errorf("plan.json shows a sensitive value: %s", js)
	}
}

// hostPlanOf is h as engine/plan resolves it (HostPlan.Hops or Via).
func hostPlanOf(t *testing.T, h *lab.Host) *plan.HostPlan {
	hp := &plan.HostPlan{Ref: h, Name: h.Name, Address: h.Address, Port: h.Port, User: h.User, Jump: h.Jump, VM: h.VM != nil}
	if h.JumpHost != nil {
		hp.Via = hostPlanOf(t, h.JumpHost)
		return hp
	}
	hops, err := plan.ParseJump(h.Jump)
	if err != nil {
		t.Fatal(err)
	}
	hp.Hops = hops
	return hp
}

// jumpSpecs are jump strings, good and bad, both parsers are held to.
var jumpSpecs = []string{
	"", "none", "b", "b:22", "u@b", "u@b:2200", "a,b,c", "u@a:1, v@b:2 ,c",
	"ssh://u@b:22", "[2001:db8::1]:22", "u@[2001:db8::1]:2200", "2001:db8::1",
	"[2001:db8::1]", "b:0", "b:65536", "b:x", "a,,b", ",", "u@", "b/c", "a b",
	"u@v@b", "[b]:1]", "b]:1", "[b:1", "b:", ":22",
}

// TestParseJumpAgrees: engine/plan parses a jump string once at plan time
// (it may not import the SSH layer); it reads every spec as
// sshx.ParseJump does, which reads ~/.ssh/config's ProxyJump: the same
// hops, or an error for both.
func TestParseJumpAgrees(t *testing.T) {
	for _, spec := range jumpSpecs {
		checkJumpAgrees(t, spec)
	}
}

func FuzzParseJumpAgrees(f *testing.F) {
	for _, spec := range jumpSpecs {
		f.Add(spec)
	}
	f.Fuzz(checkJumpAgrees)
}

func checkJumpAgrees(t *testing.T, spec string) {
	t.Helper()
	want, werr := sshx.ParseJump(spec)
	hops, err := plan.ParseJump(spec)
	if (werr != nil) != (err != nil) {
		t.Fatalf("jump %q: sshx says %v, plan says %v", spec, werr, err)
	}
	if err != nil {
		if err.Error() != werr.Error() {
			t.Errorf("jump %q: plan says %q, sshx %q", spec, err, werr)
		}
		return
	}
	host := sshx.Target{}
	got := hopChain(hops, host)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("jump %q (-sshx +plan):\n%s", spec, d)
	}
}

// TestHostSSHOptions: a lab's known_hosts is added read-only, a VM's is
// the only file (nothing recorded), and the run's options are not shared
// between hosts.
func TestHostSSHOptions(t *testing.T) {
	base := sshx.Options{KnownHosts: []string{"/u/kh"}, AcceptNewHostKeys: true}
	lab := hostSSHOptions(base, "/lab/kh", false)
	if d := cmp.Diff([]string{"/u/kh"}, lab.KnownHosts); d != "" || !lab.AcceptNewHostKeys || cmp.Diff([]string{"/lab/kh"}, lab.LabKnownHosts) != "" {
		t.Errorf("lab host: %+v", lab)
	}
	vm := hostSSHOptions(base, "/vm/kh", true)
	if cmp.Diff([]string{"/vm/kh"}, vm.KnownHosts) != "" || vm.AcceptNewHostKeys || vm.LabKnownHosts != nil {
		t.Errorf("VM host: %+v", vm)
	}
	if cmp.Diff([]string{"/u/kh"}, base.KnownHosts) != "" || base.LabKnownHosts != nil {
		t.Errorf("the run's options changed: %+v", base)
	}
}
