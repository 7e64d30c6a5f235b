package preflight

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/engine/lab"
)

func loadLab(t *testing.T) *lab.Lab {
	t.Helper()
	l, diags := lab.Load([]string{"testdata/two-hosts.hcl"}, lab.LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	return l
}

// ready is a host that can run the lab.
func ready(name string) *proto.Facts {
	return &proto.Facts{
		Hostname: name, Kernel: "6.1.0-27-amd64", Arch: "x86_64", User: "root", Root: true,
		Netdevs: []proto.Netdev{
			{Name: "lo", State: "unknown", Addrs: []string{"127.0.0.1/8"}},
			{Name: "eth0", State: "up", Addrs: []string{"10.0.2.15/24"}},
			{Name: "eth1", State: "up", Addrs: []string{"192.168.50.1/24", "fe80::1/64"}},
		},
		RXEModule: "loadable",
		Tools: map[string]proto.Tool{
			"ib_write_bw": {Path: "/usr/bin/ib_write_bw"}, "rping": {Path: "/usr/bin/rping"}, "tcpdump": {Path: "/usr/bin/tcpdump"},
		},
		MemlockSoft: 8 << 20, MemlockHard: 8 << 20,
		WorkDir: "/root/.cache/rlab/runs/x", FreeBytes: 10 << 30,
	}
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name   string
		server func(f *proto.Facts)
		client func(f *proto.Facts)
		want   []string
	}{
		{name: "ready"},
		{
			name:   "kernel without rdma_rxe",
			server: func(f *proto.Facts) { f.Kernel = "6.18.44"; f.RXEModule = "absent" },
			want:   []string{`host "server": kernel 6.18.44 has no rdma_rxe module: install the distribution's extra kernel modules package (e.g. linux-modules-extra-$(uname -r)), or use a kernel built with CONFIG_RDMA_RXE`},
		},
		{
			name:   "perftest, rping and tcpdump missing",
			server: func(f *proto.Facts) { f.Tools = map[string]proto.Tool{} },
			want: []string{
				`host "server": ib_write_bw not installed: apt-get install perftest (dnf install perftest; zypper install perftest)`,
				`host "server": rping not installed: apt-get install rdmacm-utils (dnf install librdmacm-utils; zypper install librdmacm-utils)`,
				`host "server": tcpdump not installed: apt-get install tcpdump (dnf install tcpdump; zypper install tcpdump)`,
			},
		},
		{
			name:   "the fix names the host's own package manager",
			server: func(f *proto.Facts) { f.Tools = map[string]proto.Tool{}; f.OS = "Rocky Linux 9.4 (Blue Onyx)" },
			want: []string{
				`host "server": ib_write_bw not installed: dnf install perftest`,
				`host "server": rping not installed: dnf install librdmacm-utils`,
				`host "server": tcpdump not installed: dnf install tcpdump`,
			},
		},
		{
			name:   "and on Debian, apt-get",
			server: func(f *proto.Facts) { f.Tools = map[string]proto.Tool{}; f.OS = "Debian GNU/Linux 12 (bookworm)" },
			want: []string{
				`host "server": ib_write_bw not installed: apt-get install perftest`,
				`host "server": rping not installed: apt-get install rdmacm-utils`,
				`host "server": tcpdump not installed: apt-get install tcpdump`,
			},
		},
		{
			name:   "client has no capture, so no tcpdump needed",
			client: func(f *proto.Facts) { delete(f.Tools, "tcpdump") },
		},
		{
			name: "netdev not found lists the ones present",
			client: func(f *proto.Facts) {
				f.Netdevs = f.Netdevs[:2]
			},
			want: []string{`host "client": netdev eth1 (for rxe "client") not found: have: lo eth0`},
		},
		{
			name:   "netdev without IPv4",
			client: func(f *proto.Facts) { f.Netdevs[2].Addrs = []string{"fe80::1/64"} },
			want:   []string{`host "client": netdev eth1 (for rxe "client") has no IPv4 address, so rxe has no RoCEv2 GID to use: give it one (ip addr add ADDR/PREFIX dev eth1, or the distribution's network config)`},
		},
		{
			name:   "netdev down",
			client: func(f *proto.Facts) { f.Netdevs[2].State = "down" },
			want:   []string{`host "client": netdev eth1 (for rxe "client") is down: ip link set eth1 up`},
		},
		{
			name: "memlock too low for a non-root user who also lacks root for rxe",
			client: func(f *proto.Facts) {
				f.Root, f.User, f.UID = false, "ana", 1000
			},
			want: []string{
				`host "client": creating rxe "rxe_eth1" needs root, and the agent runs as ana (uid 1000): set become = true on the host (with passwordless sudo for its user), or log in as root`,
				"host \"client\": RLIMIT_MEMLOCK is 8.0 MiB (soft), too low for RDMA memory registration: raise it for ana (e.g. `ana hard memlock unlimited` and `soft memlock unlimited` in /etc/security/limits.conf, then log in again), or run with become = true",
			},
		},
		{
			name: "memlock unlimited is fine",
			client: func(f *proto.Facts) {
				f.Root, f.User, f.UID, f.MemlockSoft = false, "ana", 1000, -1
				f.RXEModule = "loaded"
			},
			want: []string{`host "client": creating rxe "rxe_eth1" needs root, and the agent runs as ana (uid 1000): set become = true on the host (with passwordless sudo for its user), or log in as root`},
		},
		{
			name:   "become set but sudo did not make it root",
			server: func(f *proto.Facts) { f.Root, f.User, f.UID, f.MemlockSoft = false, "ops", 1001, -1 },
			want:   []string{`host "server": creating rxe "rxe_eth1", capture "roce" (tcpdump) needs root, and the agent runs as ops (uid 1001): become is set but the agent did not run as root: check the user's sudo rights`},
		},
		{
			name:   "low disk for the capture budget",
			server: func(f *proto.Facts) { f.FreeBytes = 100 << 20 },
			want:   []string{`host "server": only 100.0 MiB free in /root/.cache/rlab/runs/x, the lab may write 320.0 MiB there (captures + logs): free some disk on the host, or lower the captures' max_size`},
		},
	}
	l := loadLab(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, c := ready("server"), ready("client")
			if tc.server != nil {
				tc.server(s)
			}
			if tc.client != nil {
				tc.client(c)
			}
			var got []string
			for _, p := range Check(l, map[string]*proto.Facts{"server": s, "client": c}) {
				got = append(got, p.String())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheckSkipsHostsWithoutFacts(t *testing.T) {
	l := loadLab(t)
	f := ready("server")
	f.RXEModule = "absent"
	if got := Check(l, map[string]*proto.Facts{"server": f}); len(got) != 1 || got[0].Code != CodeNoRXE {
		t.Errorf("got %v", got)
	}
}

// TestCheckCaptureAny: netdev = "any" is tcpdump's pseudo-device (documented
// in labs/README.md), so preflight must not look for an interface of that
// name; a host whose only interfaces are lo and eth0 is ready.
func TestCheckCaptureAny(t *testing.T) {
	l, diags := lab.Load([]string{"testdata/capture-any.hcl"}, lab.LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	a, b := ready("a"), ready("b")
	a.Netdevs = a.Netdevs[:2]
	if got := Check(l, map[string]*proto.Facts{"a": a, "b": b}); len(got) != 0 {
		t.Errorf("problems for a capture on any: %v", got)
	}
}

// TestCheckImpair: an impairment needs netem in the host's kernel, its
// netdev and root; a kernel whose config says "not set" (as this machine's,
// and so every netns test host) is a problem naming the host and what is
// missing, and an unknown module state is not (the apply then says why).
func TestCheckImpair(t *testing.T) {
	l, diags := lab.Load([]string{"testdata/impair.hcl"}, lab.LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	tests := []struct {
		name  string
		facts func(f *proto.Facts)
		want  []string
	}{
		{name: "loadable", facts: func(f *proto.Facts) { f.NetemModule = "loadable"; f.Netdevs[2].Name = "eth9" }},
		{name: "unknown", facts: func(f *proto.Facts) { f.NetemModule = "unknown"; f.Netdevs[2].Name = "eth9" }},
		{
			name: "absent, netdev missing, not root",
			facts: func(f *proto.Facts) {
				f.NetemModule = "absent"
				f.Kernel = "6.18.44"
				f.Root = false
				f.User = "ana"
				f.UID = 1000
			},
			want: []string{
				`host "a": kernel 6.18.44 has no netem qdisc (sch_netem), which impair "lossy" needs: install the distribution's kernel modules for it (on Debian and Ubuntu it is in the kernel image package; on Fedora and RHEL, kernel-modules-extra), or use a kernel built with CONFIG_NET_SCH_NETEM; or remove the impair blocks for this host`,
				`host "a": impair "lossy" (netem) needs root, and the agent runs as ana (uid 1000): set become = true on the host (with passwordless sudo for its user), or log in as root`,
				`host "a": netdev eth9 (for impair "lossy") not found: have: lo eth0 eth1`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := ready("a"), ready("b")
			tt.facts(a)
			var got []string
			for _, p := range Check(l, map[string]*proto.Facts{"a": a, "b": b}) {
				got = append(got, p.String())
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("problems (-want +got):\n%s", d)
			}
		})
	}
}

// TestCheckProgram: a host of a program workload (a side, or its host)
// needs the compiler; when it lacks it, one install command names the
// compiler and the program block's packages for the host's distribution.
func TestCheckProgram(t *testing.T) {
	l, diags := lab.Load([]string{"../../testdata/labs/valid/program.hcl"}, lab.LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	a, b := ready("a"), ready("b")
	for _, f := range []*proto.Facts{a, b} {
		f.Tools["cat"] = proto.Tool{Path: "/usr/bin/cat"}
		f.OS = "Debian GNU/Linux 12 (bookworm)"
	}
	b.Tools["gcc"] = proto.Tool{Path: "/usr/bin/gcc"}
	got := Check(l, map[string]*proto.Facts{"a": a, "b": b})
	var tools []Problem
	for _, p := range got {
		if p.Code == CodeMissingTool {
			tools = append(tools, p)
		}
	}
	want := []Problem{{Host: "a", Code: CodeMissingTool, What: "gcc not installed", Fix: "apt-get install gcc make"}}
	if d := cmp.Diff(want, tools); d != "" {
		t.Errorf("missing tools (-want +got):\n%s", d)
	}
}

// TestCheckWriteWithImm: a workload asking perftest for --write_with_imm
// is a problem on each host whose perftest's --help does not list it
// (Facts.PerftestFlags: bookworm's 4.5-0.17), naming the workload, the
// version and the way out; none where it does (trixie's 25.01) or where
// perftest is missing (said once, as a missing tool).
func TestCheckWriteWithImm(t *testing.T) {
	l, diags := lab.Load([]string{"testdata/write-imm.hcl"}, lab.LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	const fix = `perftest has it since 24.01 (Debian trixie ships 25.01; bookworm's 4.5-0.17 has none): run it on hosts with a newer one (rlab's VMs: vm { image = "trixie" }), or remove --write_with_imm from the workload's args`
	perftest := func(version string, flags ...string) func(f *proto.Facts) {
		return func(f *proto.Facts) {
			f.Tools["ib_write_bw"] = proto.Tool{Path: "/usr/bin/ib_write_bw", Version: version}
			f.Tools["ib_write_lat"] = proto.Tool{Path: "/usr/bin/ib_write_lat", Version: version}
			f.PerftestFlags = flags
		}
	}
	tests := []struct {
		name           string
		server, client func(f *proto.Facts)
		want           []string
	}{
		{name: "both have it (trixie)", server: perftest("25.01", "--write_with_imm"), client: perftest("25.01", "--write_with_imm")},
		{name: "the server lacks it (bookworm)", server: perftest("4.5"), client: perftest("25.01", "--write_with_imm"),
			want: []string{
				`host "server": workload "imm_bw" asks ib_write_bw for --write_with_imm, and its ib_write_bw 4.5 here does not list it in --help: ` + fix,
				`host "server": workload "imm_lat" asks ib_write_lat for --write_with_imm, and its ib_write_lat 4.5 here does not list it in --help: ` + fix,
			}},
		{name: "perftest missing is said once, as a missing tool", server: perftest("25.01", "--write_with_imm"),
			client: func(f *proto.Facts) { f.Tools = map[string]proto.Tool{} },
			want:   []string{`host "client": ib_write_bw, ib_write_lat not installed: apt-get install perftest (dnf install perftest; zypper install perftest)`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, c := ready("server"), ready("client")
			tc.server(s)
			tc.client(c)
			var got []string
			for _, p := range Check(l, map[string]*proto.Facts{"server": s, "client": c}) {
				got = append(got, p.String())
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("problems (-want +got):\n%s", d)
			}
		})
	}
}

// TestCheckProgramPackages: a program host's own distribution family's
// packages (the program block's packages) that its package database
// (facts: dpkg-query or rpm) lacks are named with the family's install
// command; nothing when all are there, when the host has no database to
// ask or a family rlab does not know, and nothing more when the compiler
// itself is missing (its one install line names them).
func TestCheckProgramPackages(t *testing.T) {
	l, diags := lab.Load([]string{"../../testdata/labs/valid/program.hcl"}, lab.LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	tests := []struct {
		name   string
		distro string
		like   []string
		db     string
		have   []string
		noGCC  bool
		want   []string
	}{
		{"debian lacks make", "debian", nil, "dpkg", []string{"gcc"}, false,
			[]string{`host "a": make not installed (dpkg), which the lab's program blocks need for debian hosts: apt-get install make, or run with --provision`}},
		{"ubuntu lacks both", "ubuntu", []string{"debian"}, "dpkg", nil, false,
			[]string{`host "a": gcc, make not installed (dpkg), which the lab's program blocks need for debian hosts: apt-get install gcc make, or run with --provision`}},
		{"rocky has both", "rocky", []string{"rhel", "centos", "fedora"}, "rpm", []string{"gcc", "make"}, false, nil},
		{"rocky lacks make", "rocky", []string{"rhel", "centos", "fedora"}, "rpm", []string{"gcc"}, false,
			[]string{`host "a": make not installed (rpm), which the lab's program blocks need for rhel hosts: dnf install make, or run with --provision`}},
		{"no package database", "debian", nil, "", nil, false, nil},
		{"a family rlab does not know", "arch", nil, "rpm", nil, false, nil},
		{"no compiler: said once, as a tool", "debian", nil, "dpkg", nil, true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := ready("a"), ready("b")
			for _, f := range []*proto.Facts{a, b} {
				f.Tools["cat"] = proto.Tool{Path: "/usr/bin/cat"}
				f.Tools["gcc"] = proto.Tool{Path: "/usr/bin/gcc"}
				f.PackageDB, f.Packages = "dpkg", []string{"gcc", "make"}
				f.Platform.DistroID = "debian"
			}
			a.Platform.DistroID, a.Platform.DistroIDLike = tt.distro, tt.like
			a.PackageDB, a.Packages = tt.db, tt.have
			if tt.noGCC {
				delete(a.Tools, "gcc")
			}
			var got []string
			for _, p := range Check(l, map[string]*proto.Facts{"a": a, "b": b}) {
				if p.Code == CodeMissingPackage {
					got = append(got, p.String())
				}
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("missing packages (-want +got):\n%s", d)
			}
		})
	}
}

// TestFindingListsBounded: a finding names at most maxListed of the
// netdevs or devices a host reported, and how many more (attack round 7,
// low: a host reporting 90,000 netdevs made one finding's line a megabyte).
func TestFindingListsBounded(t *testing.T) {
	var names []string
	for i := range 90_000 {
		names = append(names, fmt.Sprintf("eth%d", i))
	}
	got := someOf(names, " ")
	if len(got) > 400 || !strings.HasSuffix(got, "… and 89980 more") || !strings.HasPrefix(got, "eth0 eth1 ") {
		t.Errorf("someOf(90,000 names) = %.200q… (%d bytes)", got, len(got))
	}
	if got := someOf([]string{"lo", "eth0"}, " "); got != "lo eth0" {
		t.Errorf("someOf(2 names) = %q", got)
	}
	if got := someOf(nil, ", "); got != "" {
		t.Errorf("someOf(none) = %q", got)
	}
}
