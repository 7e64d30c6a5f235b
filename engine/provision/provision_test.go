package provision

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc"
	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/kinds"
)

var update = flag.Bool("update", false, "rewrite golden files")

// osRelease reads an os-release file as the agent reports it in
// proto.Platform (agent/server/platform.go: ID, ID_LIKE split on
// spaces, VERSION_ID; quotes removed).
func osRelease(t *testing.T, path string) proto.Platform {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	kv := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		kv[k] = strings.Trim(v, `"'`)
	}
	return proto.Platform{DistroID: kv["ID"], DistroIDLike: strings.Fields(kv["ID_LIKE"]), DistroVersion: kv["VERSION_ID"]}
}

func loadLab(t *testing.T, src string) *lab.Lab {
	t.Helper()
	l, diags := lab.LoadSource("lab.hcl", []byte(src), t.TempDir(), lab.LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	return l
}

// twoHosts is a quickstart over SSH: rxe on both, a capture on the server,
// perftest, a pingpong, rping and the built-in tcp.
const twoHosts = `
lab "prov" {}
host "server" {
  address = "192.0.2.10"
  become  = true
}
host "client" {
  address = "192.0.2.11"
  become  = true
}
host "idle" { address = "192.0.2.12" }
rxe "server" {
  host   = host.server
  netdev = "eth1"
}
rxe "client" {
  host   = host.client
  netdev = "eth1"
}
capture "roce" {
  host   = host.server
  netdev = "eth1"
}
workload "bw" {
  tool   = "ib_write_bw"
  server = rxe.server
  client = rxe.client
}
workload "pp" {
  tool   = "ibv_rc_pingpong"
  server = rxe.server
  client = rxe.client
}
workload "rp" {
  tool   = "rping"
  server = rxe.server
  client = rxe.client
}
workload "tcp" {
  tool   = "tcp"
  server = host.server
  client = host.client
}
`

func TestNeeds(t *testing.T) {
	got := map[string][]string{}
	rxe := map[string]bool{}
	for _, n := range Needs(loadLab(t, twoHosts)) {
		got[n.Host.Name] = n.Programs
		rxe[n.Host.Name] = n.RXE
	}
	want := map[string][]string{
		"server": {"ib_write_bw", "ibv_rc_pingpong", "modprobe", "rdma", "rping", "tcpdump"},
		"client": {"ib_write_bw", "ibv_rc_pingpong", "modprobe", "rdma", "rping"},
		"idle":   nil,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("needs (-want +got):\n%s", d)
	}
	if !rxe["server"] || !rxe["client"] || rxe["idle"] {
		t.Errorf("rxe %v", rxe)
	}
}

// TestPlanOSRelease: a bare host (no tool, no rdma_rxe in its kernel) of
// each distribution, known by its real os-release, gets its family's
// package names; the planned installs are in testdata/plans.golden.
func TestPlanOSRelease(t *testing.T) {
	files, _ := filepath.Glob("testdata/os-release/*")
	var out strings.Builder
	families := map[string]Family{
		"debian-13": Debian, "ubuntu-24.04": Debian, "rocky-9.3": RHEL, "almalinux-9.1": RHEL, "rhel-9.6": RHEL,
		"fedora-42": RHEL, "amzn-2023": RHEL, "opensuse-leap-15.4": SUSE, "sles-15-sp5": SUSE, "sles-12-sp3": SUSE, "alpine-3.23": "",
	}
	needs := Needs(loadLab(t, twoHosts))
	seen := 0
	for _, f := range files {
		name := filepath.Base(f)
		if strings.HasSuffix(name, ".md") {
			continue
		}
		seen++
		want, ok := families[name]
		if !ok {
			t.Errorf("%s: no expected family in the table", name)
		}
		pl := osRelease(t, f)
		if got := FamilyOf(pl.DistroID, pl.DistroIDLike); got != want {
			t.Errorf("%s: family %q, want %q", name, got, want)
		}
		// Ubuntu's cloud kernels ship rdma_rxe in linux-modules-extra; the
		// others' stock kernels have it.
		mod := "loadable"
		if pl.DistroID == "ubuntu" {
			mod = "absent"
		}
		facts := &proto.Facts{Kernel: "6.8.0-1015-aws", Root: true, RXEModule: mod, Tools: map[string]proto.Tool{}, Platform: pl}
		p := PlanHost(needs[0], facts) // the server needs the most
		fmt.Fprintf(&out, "%s (%s):\n", name, p.Family)
		if p.Err != nil {
			fmt.Fprintf(&out, "  error: %v\n", p.Err)
			continue
		}
		for _, pkg := range p.Packages {
			fmt.Fprintf(&out, "  %s  for %s\n", pkg, strings.Join(p.For[pkg], ", "))
		}
		if len(p.Modules) > 0 {
			fmt.Fprintf(&out, "  then modprobe %s\n", strings.Join(p.Modules, " "))
		}
	}
	if seen != len(families) {
		t.Errorf("%d os-release files, %d in the table", seen, len(families))
	}
	golden(t, "testdata/plans.golden", out.String())
}

func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if d := cmp.Diff(string(want), got); d != "" {
		t.Errorf("%s (-want +got):\n%s", path, d)
	}
}

func TestPlanHost(t *testing.T) {
	needs := Needs(loadLab(t, twoHosts))
	server := needs[0]
	ubuntu := proto.Platform{DistroID: "ubuntu", DistroIDLike: []string{"debian"}, DistroVersion: "24.04"}
	all := map[string]proto.Tool{}
	for _, p := range server.Programs {
		all[p] = proto.Tool{Path: "/usr/bin/" + p}
	}
	for _, tc := range []struct {
		name    string
		facts   proto.Facts
		want    []string
		modules []string
		err     string
		nothing bool
		present []string
	}{
		{name: "everything present", facts: proto.Facts{Root: true, RXEModule: "loadable", Tools: all, Platform: ubuntu}, nothing: true,
			present: []string{"ib_write_bw", "ibv_rc_pingpong", "modprobe", "rdma", "rdma_rxe", "rping", "tcpdump"}},
		{name: "only the capture tool missing", facts: proto.Facts{Root: true, RXEModule: "loaded", Tools: without(all, "tcpdump"), Platform: ubuntu}, want: []string{"tcpdump"},
			present: []string{"ib_write_bw", "ibv_rc_pingpong", "modprobe", "rdma", "rdma_rxe", "rping"}},
		{name: "module only", facts: proto.Facts{Root: true, Kernel: "6.8.0-1015-aws", RXEModule: "absent", Tools: all, Platform: ubuntu},
			want: []string{"linux-modules-extra-6.8.0-1015-aws"}, modules: []string{"rdma_rxe"},
			present: []string{"ib_write_bw", "ibv_rc_pingpong", "modprobe", "rdma", "rping", "tcpdump"}},
		{name: "not root", facts: proto.Facts{UID: 1000, User: "ana", RXEModule: "loaded", Tools: without(all, "tcpdump"), Platform: ubuntu},
			err: "needs root, and the agent runs as ana (uid 1000): set become = true"},
		{name: "not root with nothing missing is fine", facts: proto.Facts{UID: 1000, RXEModule: "loaded", Tools: all, Platform: ubuntu}, nothing: true},
		{name: "unknown distribution names packages by hand", facts: proto.Facts{Root: true, RXEModule: "loaded", Tools: without(all, "tcpdump", "rping"),
			Platform: proto.Platform{DistroID: "arch", DistroVersion: "rolling"}},
			err: "unknown distribution arch rolling"},
		{name: "rhel kernel without rdma_rxe", facts: proto.Facts{Root: true, Kernel: "5.14.0-503.el9.x86_64", RXEModule: "absent", Tools: all,
			Platform: proto.Platform{DistroID: "rocky", DistroIDLike: []string{"rhel", "centos", "fedora"}, DistroVersion: "9.3"}},
			err: "has no rdma_rxe module"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := PlanHost(server, &tc.facts)
			if tc.err != "" {
				if p.Err == nil || !strings.Contains(p.Err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", p.Err, tc.err)
				}
				return
			}
			if p.Err != nil {
				t.Fatal(p.Err)
			}
			if tc.present != nil {
				if d := cmp.Diff(tc.present, p.Present); d != "" {
					t.Errorf("present (-want +got):\n%s", d)
				}
			}
			if p.Nothing() != tc.nothing {
				t.Errorf("nothing %v, want %v (%q)", p.Nothing(), tc.nothing, p.Packages)
			}
			if !tc.nothing {
				if d := cmp.Diff(tc.want, p.Packages); d != "" {
					t.Errorf("packages (-want +got):\n%s", d)
				}
				if d := cmp.Diff(tc.modules, p.Modules); d != "" {
					t.Errorf("modules (-want +got):\n%s", d)
				}
			}
		})
	}
	// The unknown distribution's error lists the packages per family.
	p := PlanHost(server, &proto.Facts{Root: true, RXEModule: "loaded", Tools: without(all, "tcpdump", "rping"), Platform: proto.Platform{DistroID: "arch"}})
	for _, w := range []string{"install rping, tcpdump by hand", "Debian/Ubuntu: rdmacm-utils tcpdump", "RHEL/Fedora: librdmacm-utils tcpdump", "SUSE: librdmacm-utils tcpdump"} {
		if !strings.Contains(p.Err.Error(), w) {
			t.Errorf("%q lacks %q", p.Err, w)
		}
	}
}

func without(m map[string]proto.Tool, names ...string) map[string]proto.Tool {
	out := map[string]proto.Tool{}
	for k, v := range m {
		out[k] = v
	}
	for _, n := range names {
		delete(out, n)
	}
	return out
}

// TestEveryProgramHasPackages: every program the agent looks for names its
// package in every family rlab provisions.
func TestEveryProgramHasPackages(t *testing.T) {
	var bad []string
	for _, p := range kinds.Programs() {
		for _, f := range []Family{Debian, RHEL, SUSE} {
			if PackageFor(p.Packages, f) == "" {
				bad = append(bad, fmt.Sprintf("%s/%s", p.Name, f))
			}
		}
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		t.Errorf("programs without a package: %q", bad)
	}
}

// fakeCaller answers provision calls like an agent would.
type fakeCaller struct {
	got proto.ProvisionParams
	err error
	n   int
}

func (f *fakeCaller) Send(ctx context.Context, r *rpc.Request) error {
	p, res, ok := rpc.Match(r, rpc.Provision)
	if !ok {
		return fmt.Errorf("unexpected call %s", r.Method())
	}
	f.n++
	f.got = p
	if f.err != nil {
		return f.err
	}
	*res = proto.ProvisionResult{Manager: "apt-get", Installed: f.got.Packages, Log: "Setting up tcpdump"}
	return nil
}

func TestApply(t *testing.T) {
	f := &fakeCaller{}
	r := Apply(context.Background(), f, HostPlan{Host: "h"}, Options{})
	if f.n != 0 || r.Err != nil {
		t.Errorf("nothing to do: %d calls, err %v", f.n, r.Err)
	}
	r = Apply(context.Background(), f, HostPlan{Host: "h", Family: Debian, Packages: []string{"tcpdump"}}, Options{})
	if f.n != 1 || r.Err != nil || r.Installed[0] != "tcpdump" || r.Log == "" {
		t.Errorf("install: %d calls, %+v", f.n, r)
	}
	f.err = &proto.Error{Code: proto.CodeNotFound, Message: "provision: the host's package repositories have no perftest", Command: []string{"apt-get", "install", "perftest"}, ExitCode: 100,
		Stderr: "$ apt-get install perftest\nReading package lists...\nE: Unable to locate package perftest\n"}
	r = Apply(context.Background(), f, HostPlan{Host: "h", Family: Debian, Packages: []string{"perftest"}}, Options{})
	var pe *Error
	if !errors.As(r.Err, &pe) || pe.Code != proto.CodeNotFound {
		t.Fatalf("err %v", r.Err)
	}
	for _, w := range []string{`host "h": provision: the host's package repositories have no perftest`, "command: apt-get install perftest (exit 100)", "E: Unable to locate package perftest"} {
		if !strings.Contains(r.Err.Error(), w) {
			t.Errorf("%q lacks %q", r.Err, w)
		}
	}
	if !strings.Contains(r.Log, "Unable to locate") {
		t.Errorf("log %q", r.Log)
	}
}

// TestApplyInterrupted: a Ctrl-C during an install says that the package
// manager is let finish, and how to repair the host should it not.
func TestApplyInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	f := &fakeCaller{err: context.Canceled}
	r := Apply(ctx, f, HostPlan{Host: "h", Family: Debian, Packages: []string{"perftest"}}, Options{Grace: time.Minute})
	var pe *Error
	if !errors.As(r.Err, &pe) || pe.Code != proto.CodeTimeout || !strings.Contains(r.Error, "let finish its transaction (up to 1m0s)") {
		t.Errorf("%v", r.Err)
	}
}

// TestProgramPackages: a program block's packages go to the hosts of its
// workloads (both sides, or host) for their family, beside gcc, the
// program tool's compiler; provisioning asks for them whatever the facts
// say (the package manager leaves installed ones alone) and says which
// program needs each.
func TestProgramPackages(t *testing.T) {
	l, diags := lab.Load([]string{filepath.Join("..", "..", "testdata", "labs", "valid", "program.hcl")}, lab.LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	ns := Needs(l)
	a := ns[0]
	if a.Host.Name != "a" || !slicesContains(a.Programs, "gcc") {
		t.Fatalf("host a needs %+v", a)
	}
	if d := cmp.Diff(map[string][]string{"debian": {"gcc", "make"}, "rhel": {"gcc", "make"}}, a.Packages); d != "" {
		t.Errorf("packages (-want +got):\n%s", d)
	}
	if d := a.Describe(); !strings.Contains(d, "make (program pingpair)") || strings.Count(d, "gcc") != 1 {
		t.Errorf("describe %q: want gcc once and make for the program", d)
	}
	debian := proto.Platform{DistroID: "debian", DistroVersion: "12"}
	rocky := proto.Platform{DistroID: "rocky", DistroIDLike: []string{"rhel"}}
	gcc := map[string]proto.Tool{"gcc": {Path: "/usr/bin/gcc"}, "rdma": {}, "modprobe": {}}
	for _, tc := range []struct {
		name  string
		facts proto.Facts
		want  []string
	}{
		{"debian, gcc present", proto.Facts{Root: true, RXEModule: "loaded", Tools: gcc, Platform: debian}, []string{"gcc", "make"}},
		{"debian, gcc missing", proto.Facts{Root: true, RXEModule: "loaded", Tools: without(gcc, "gcc"), Platform: debian}, []string{"gcc", "make"}},
		{"rocky", proto.Facts{Root: true, RXEModule: "loaded", Tools: gcc, Platform: rocky}, []string{"gcc", "make"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := PlanHost(a, &tc.facts)
			if p.Err != nil {
				t.Fatal(p.Err)
			}
			if d := cmp.Diff(tc.want, p.Packages); d != "" {
				t.Errorf("packages (-want +got):\n%s", d)
			}
			if !slicesContains(p.For["make"], "program pingpair") {
				t.Errorf("for %v", p.For)
			}
		})
	}
	// A family the program names nothing for gets only the compiler.
	p := PlanHost(a, &proto.Facts{Root: true, RXEModule: "loaded", Tools: without(gcc, "gcc"), Platform: proto.Platform{DistroID: "opensuse-leap", DistroIDLike: []string{"suse"}}})
	if d := cmp.Diff([]string{"gcc"}, p.Packages); d != "" || p.Err != nil {
		t.Errorf("suse: %v %v", p.Packages, p.Err)
	}
}

func slicesContains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// liarCaller says it installed what it was asked and more: a package name
// of a megabyte, and one the run never asked for.
type liarCaller struct{}

func (liarCaller) Send(ctx context.Context, r *rpc.Request) error {
	p, res, ok := rpc.Match(r, rpc.Provision)
	if !ok {
		return fmt.Errorf("unexpected call %s", r.Method())
	}
	more := append(slices.Clone(p.Packages), strings.Repeat("p", 1<<20), "openssh-server", p.Packages[0])
	*res = proto.ProvisionResult{Manager: "apt-get", Installed: more, Present: more, Modules: append(slices.Clone(p.Modules), "evil")}
	return nil
}

// TestApplyTakesOnlyAsked: what a host says it installed, found present or
// loaded is the run's only as far as the run asked for it (SECURITY 131):
// the list is journaled and is what down --remove-provisioned removes.
func TestApplyTakesOnlyAsked(t *testing.T) {
	r := Apply(context.Background(), liarCaller{}, HostPlan{Host: "h", Family: Debian, Packages: []string{"tcpdump", "perftest"}, Modules: []string{"rdma_rxe"}}, Options{})
	want := []string{"tcpdump", "perftest"}
	if !slices.Equal(r.Installed, want) || !slices.Equal(r.Present, want) || !slices.Equal(r.Modules, []string{"rdma_rxe"}) {
		t.Errorf("installed %.80q present %.80q modules %q: want only what was asked", r.Installed, r.Present, r.Modules)
	}
	r = Remove(context.Background(), liarCaller{}, "h", Debian, []string{"tcpdump"}, Options{})
	if !slices.Equal(r.Installed, []string{"tcpdump"}) {
		t.Errorf("removed %.80q: want only what was asked", r.Installed)
	}
}
