package server

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/rlab-dev/rlab/agent/proto"
)

// TestFactsHere runs facts on this machine, whose kernel has no RDMA: the
// agent must say so (rxe_module absent, no devices) and still report the rest.
func TestFactsHere(t *testing.T) {
	if _, err := os.Stat("/sys/class/infiniband"); err == nil {
		t.Skip("this machine has RDMA devices; the test expects a kernel without them")
	}
	c, srv := startAgent(t, Options{})
	var f proto.Facts
	c.mustCall(proto.MethodFacts, nil, &f)

	var uts unix.Utsname
	if err := unix.Uname(&uts); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	if f.Kernel != unix.ByteSliceToString(uts.Release[:]) || f.Arch != unix.ByteSliceToString(uts.Machine[:]) || f.Hostname != host {
		t.Errorf("kernel %q arch %q hostname %q do not match uname", f.Kernel, f.Arch, f.Hostname)
	}
	if f.RXEModule != "absent" || len(f.RDMA) != 0 {
		t.Errorf("rxe_module %q, rdma devices %v; want absent and none on this kernel", f.RXEModule, f.RDMA)
	}
	if f.CPUs < 1 || f.MemBytes == 0 || f.OS == "" || f.User == "" || f.UID != os.Geteuid() {
		t.Errorf("facts incomplete: %+v", f)
	}
	if f.WorkDir != srv.WorkDir() || f.FreeBytes == 0 {
		t.Errorf("work dir %q free %d", f.WorkDir, f.FreeBytes)
	}
	if f.MemlockSoft == 0 || f.MemlockHard == 0 {
		t.Errorf("memlock %d/%d", f.MemlockSoft, f.MemlockHard)
	}
	i := slices.IndexFunc(f.Netdevs, func(n proto.Netdev) bool { return n.Name == "lo" })
	if i < 0 {
		t.Fatalf("no lo in netdevs %+v", f.Netdevs)
	}
	if lo := f.Netdevs[i]; lo.MTU == 0 || !slices.Contains(lo.Addrs, "127.0.0.1/8") {
		t.Errorf("lo = %+v", lo)
	}
	if p, err := exec.LookPath("tcpdump"); err == nil {
		if tool := f.Tools["tcpdump"]; tool.Path == "" || tool.Version == "" {
			t.Errorf("tcpdump at %s reported as %+v", p, tool)
		}
	}
	if _, ok := f.Tools["no-such-tool"]; ok {
		t.Error("invented a tool")
	}
	if len(f.Errors) != 0 {
		t.Errorf("errors: %v", f.Errors)
	}
}

// writeTree creates files (path -> content) under root.
func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRDMADevicesFromSysfs reads a sysfs tree laid out as on the Debian 12
// VM of shared/vmlab (rxe0 on eth1, 10.99.0.1/24, MTU 1500 -> active MTU
// 1024 as ibv_devinfo showed there), plus a hardware device.
func TestRDMADevicesFromSysfs(t *testing.T) {
	root := t.TempDir()
	ib, netc := filepath.Join(root, "infiniband"), filepath.Join(root, "net")
	writeTree(t, ib, map[string]string{
		"rxe0/parent":                      "eth1",
		"rxe0/node_guid":                   "5054:00ff:fe99:0001",
		"rxe0/sys_image_guid":              "5054:00ff:fe99:0001",
		"rxe0/ports/1/state":               "4: ACTIVE",
		"rxe0/ports/1/phys_state":          "5: LinkUp",
		"rxe0/ports/1/link_layer":          "Ethernet",
		"rxe0/ports/1/gids/0":              "fe80:0000:0000:0000:5054:00ff:fe99:0001",
		"rxe0/ports/1/gids/1":              "0000:0000:0000:0000:0000:ffff:0a63:0001",
		"rxe0/ports/1/gids/2":              "0000:0000:0000:0000:0000:0000:0000:0000",
		"rxe0/ports/1/gid_attrs/types/0":   "RoCE v2",
		"rxe0/ports/1/gid_attrs/types/1":   "RoCE v2",
		"rxe0/ports/1/gid_attrs/ndevs/0":   "eth1",
		"rxe0/ports/1/gid_attrs/ndevs/1":   "eth1",
		"mlx5_0/node_guid":                 "b859:9f03:00a1:b2c3",
		"mlx5_0/sys_image_guid":            "b859:9f03:00a1:b2c3",
		"mlx5_0/device/vendor":             "0x15b3",
		"mlx5_0/ports/1/state":             "1: DOWN",
		"mlx5_0/ports/1/phys_state":        "3: Disabled",
		"mlx5_0/ports/1/link_layer":        "Ethernet",
		"mlx5_0/ports/1/gids/0":            "fe80:0000:0000:0000:ba59:9fff:fea1:b2c3",
		"mlx5_0/ports/1/gid_attrs/types/0": "IB/RoCE v1",
	})
	writeTree(t, netc, map[string]string{"eth1/mtu": "1500"})
	oldIB, oldNet := sysClassIB, sysClassNet
	sysClassIB, sysClassNet = ib, netc
	t.Cleanup(func() { sysClassIB, sysClassNet = oldIB, oldNet })

	got, err := readRDMADevices()
	if err != nil {
		t.Fatal(err)
	}
	want := []proto.RDMADevice{
		{Name: "mlx5_0", Driver: "hw", NodeGUID: "b859:9f03:00a1:b2c3", SysImageGUID: "b859:9f03:00a1:b2c3",
			Ports: []proto.RDMAPort{{Port: 1, State: "DOWN", PhysState: "DISABLED", LinkLayer: "Ethernet",
				GIDs: []proto.GID{{Index: 0, GID: "fe80::ba59:9fff:fea1:b2c3", Type: "IB/RoCE v1"}}}}},
		{Name: "rxe0", Driver: "rxe", Parent: "eth1", NodeGUID: "5054:00ff:fe99:0001", SysImageGUID: "5054:00ff:fe99:0001",
			Ports: []proto.RDMAPort{{Port: 1, State: "ACTIVE", PhysState: "LINK_UP", ActiveMTU: 1024, MaxMTU: 4096, LinkLayer: "Ethernet",
				GIDs: []proto.GID{
					{Index: 0, GID: "fe80::5054:ff:fe99:1", Type: "RoCE v2", Netdev: "eth1"},
					{Index: 1, GID: "::ffff:10.99.0.1", Type: "RoCE v2", Netdev: "eth1"},
				}}}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("devices (-want +got):\n%s", d)
	}
	g, ok := RoCEv2GID(got[1].Ports[0].GIDs, net.ParseIP("10.99.0.1"))
	if !ok || g.Index != 1 {
		t.Errorf("RoCE v2 GID for 10.99.0.1 = %+v, %v; want index 1", g, ok)
	}
	if _, ok := RoCEv2GID(got[1].Ports[0].GIDs, net.ParseIP("10.99.0.2")); ok {
		t.Error("found a GID for an address the device does not have")
	}
	if on := rxeOn("eth1"); on != "rxe0" {
		t.Errorf("rxeOn(eth1) = %q", on)
	}
}

func TestRXEActiveMTU(t *testing.T) {
	for _, tt := range []struct{ netdev, want int }{
		{9000, 4096}, {4176, 4096}, {4175, 2048}, {1500, 1024}, {1400, 1024}, {1104, 1024}, {1103, 512}, {576, 256}, {68, 256},
	} {
		if got := RXEActiveMTU(tt.netdev); got != tt.want {
			t.Errorf("RXEActiveMTU(%d) = %d, want %d", tt.netdev, got, tt.want)
		}
	}
}

func TestRXEModuleState(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"loaded", map[string]string{"proc/modules": "ib_core 4 1 rdma_rxe, Live 0x0\nrdma_rxe 1 0 - Live 0x0"}, "loaded"},
		{"builtin", map[string]string{"lib/K/modules.builtin": "kernel/drivers/infiniband/sw/rxe/rdma_rxe.ko"}, "builtin"},
		{"loadable xz", map[string]string{"lib/K/modules.dep": "kernel/drivers/infiniband/sw/rxe/rdma_rxe.ko.xz: kernel/drivers/infiniband/core/ib_core.ko.xz"}, "loadable"},
		{"other modules only", map[string]string{"proc/modules": "rdma_rxe_not 1 0", "lib/K/modules.dep": "kernel/net/rxe_helper.ko:"}, "absent"},
		{"nothing", nil, "absent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			writeTree(t, root, tt.files)
			op, om, ol := procModules, sysModule, libModules
			procModules, sysModule, libModules = filepath.Join(root, "proc/modules"), filepath.Join(root, "sys/module"), filepath.Join(root, "lib")
			t.Cleanup(func() { procModules, sysModule, libModules = op, om, ol })
			if got := rxeModuleState("K"); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestRXEEnsureWithoutRXE(t *testing.T) {
	if rxeModuleState(kernelRelease()) != "absent" {
		t.Skip("this kernel has rdma_rxe")
	}
	c, _ := startAgent(t, Options{})
	e := c.call(proto.MethodDeviceEnsure, proto.DeviceEnsureParams{Netdev: "lo"}, nil)
	if e == nil || e.Code != proto.CodeNoModule || !strings.Contains(e.Message, "no rdma_rxe module") || !strings.Contains(e.Message, "CONFIG_RDMA_RXE") {
		t.Errorf("rxe.ensure on lo: %v, want %s with advice", e, proto.CodeNoModule)
	}
	e = c.call(proto.MethodDeviceEnsure, proto.DeviceEnsureParams{Netdev: "eth99x"}, nil)
	if e == nil || e.Code != proto.CodeNotFound || !strings.Contains(e.Message, "have: ") || !strings.Contains(e.Message, "lo") {
		t.Errorf("rxe.ensure on a missing netdev: %v, want not_found listing the netdevs", e)
	}
	var del proto.DeviceDeleteResult
	c.mustCall(proto.MethodDeviceDelete, proto.DeviceDeleteParams{Name: "rxe_nothing"}, &del)
	if del.Deleted {
		t.Error("deleted a device that does not exist")
	}
}

func TestParseOSRelease(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nNAME=\"Debian GNU/Linux\"\n", "Debian GNU/Linux 12 (bookworm)"},
		{"NAME=Fedora\nVERSION_ID=40\n", "Fedora 40"},
		{"# comment\nNAME='Alpine Linux'\n", "Alpine Linux"},
		{"garbage", ""},
		// A comment longer than bufio.Scanner's 64 KiB line stopped the reading.
		{"# " + strings.Repeat("x", 70000) + "\nNAME=Rocky\r\nVERSION_ID=9\n", "Rocky 9"},
	} {
		if got := parseOSRelease([]byte(tt.in)); got != tt.want {
			t.Errorf("parseOSRelease(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestSysfsEnum(t *testing.T) {
	for in, want := range map[string]string{
		"4: ACTIVE": "ACTIVE", "5: LinkUp": "LINK_UP", "2: Polling": "POLLING", "1: DOWN": "DOWN",
		"7: PortConfigurationTraining": "PORT_CONFIGURATION_TRAINING", "": "",
	} {
		if got := sysfsEnum(in); got != want {
			t.Errorf("sysfsEnum(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestPerftestHelpHasJSON(t *testing.T) {
	// perftest >= 4.5-0.20 lists the option in its usage text.
	if !PerftestHelpHasJSON(" --out_json  Save the report in a json file\n") {
		t.Error("missed --out_json")
	}
	if PerftestHelpHasJSON(" -F, --CPU-freq  Do not show a warning\n") {
		t.Error("invented --out_json")
	}
}

// TestPerftestHelpFlags: the options the facts probe reads from perftest's
// --help, as its usage() prints them (perftest_parameters.c: "      --out_json "
// then the text; --write_with_imm only for ib_write_bw and ib_write_lat,
// since 24.01), and what a request asking about --write_with_imm gets.
func TestPerftestHelpFlags(t *testing.T) {
	const bookworm = " -F, --CPU-freq  Do not show a warning even if cpufreq_ondemand module is loaded\n" +
		"      --out_json  Save the report in a json file\n      --out_json_file=<file> Name of the report file\n"
	const trixie = bookworm + "      --use_ooo  Use out of order data placement\n" +
		"      --write_with_imm  use write-with-immediate verb instead of write\n"
	for _, tc := range []struct {
		name, help string
		asked      []string
		want       perftestHelp
	}{
		{"bookworm 4.5-0.17", bookworm, []string{"--write_with_imm"}, perftestHelp{JSON: true}},
		{"trixie 25.01", trixie, []string{"--write_with_imm"}, perftestHelp{JSON: true, Flags: []string{"--write_with_imm"}}},
		{"asked nothing", trixie, nil, perftestHelp{JSON: true}},
		{"before --out_json", " -F, --CPU-freq  Do not show a warning\n", []string{"--write_with_imm"}, perftestHelp{}},
		// A flag named inside another's text is not an option of its own.
		{"prose", " -x  see--write_with_imm\n", []string{"--write_with_imm"}, perftestHelp{}},
	} {
		got := perftestHelpFrom(HelpOptions(tc.help), tc.asked)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v, want %+v (options %q)", tc.name, got, tc.want, HelpOptions(tc.help))
		}
	}
}

func TestToolVersionPatterns(t *testing.T) {
	// The helpers' patterns are the agent's default; perftest's is the
	// controller's (kinds/perftest), sent in the request.
	probes, err := newProbeSet(append(append([]proto.Probe(nil), proto.DefaultProbes...),
		proto.Probe{Name: "ib_write_bw", Args: []string{"--version"}, Pattern: `[0-9]+(?:\.[0-9]+)+`}))
	if err != nil {
		t.Fatal(err)
	}
	for tool, tt := range map[string]struct{ out, want string }{
		"rdma":        {"rdma utility, iproute2-6.1.0\n", "6.1.0"},
		"ib_write_bw": {" Version: 6.06\n", "6.06"},
		"tcpdump":     {"tcpdump version 4.99.3\nlibpcap version 1.10.3 (with TPACKET_V3)\nOpenSSL 3.0.15 3 Sep 2024\n", "4.99.3"},
		"modprobe":    {"kmod version 30\n+ZSTD +XZ -ZLIB +LIBCRYPTO -EXPERIMENTAL\n", "30"},
	} {
		m := probes.versions[tool].re.FindStringSubmatch(tt.out)
		got := ""
		if len(m) > 1 {
			got = m[1]
		} else if len(m) == 1 {
			got = m[0]
		}
		if got != tt.want {
			t.Errorf("%s version from %q = %q, want %q", tool, tt.out, got, tt.want)
		}
	}
}

func TestRDMACoreFromLibibverbs(t *testing.T) {
	for in, want := range map[string]string{
		"libibverbs.so.1.14.44.0": "44.0", "libibverbs.so.1.14.50.1": "50.1", "libibverbs.so.1": "",
		"libibverbs.so.1.14": "", "libibverbs.so.1.x.44.0": "", "libmlx5.so.1.24.44.0": "",
	} {
		if got := RDMACoreFromLibibverbs(in); got != want {
			t.Errorf("RDMACoreFromLibibverbs(%q) = %q, want %q", in, got, want)
		}
	}
}

// perInterfaceAddrs is how facts read addresses before addrsByIndex: one
// net.Interface.Addrs per interface. Kept as the reference the new way must
// match, and the baseline of BenchmarkNetdevAddrs.
func perInterfaceAddrs() (map[int][]string, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, err
	}
	m := map[int][]string{}
	for _, ifc := range ifs {
		as, err := ifc.Addrs()
		if err != nil {
			return nil, err
		}
		for _, a := range as {
			m[ifc.Index] = append(m[ifc.Index], a.String())
		}
	}
	return m, nil
}

// manyLinksNetns makes a network namespace holding n veth links (n/2
// pairs), each up with an IPv4 address and every fourth with a second one,
// and removes it at cleanup. It needs RLAB_NETNS=1 and root.
func manyLinksNetns(tb testing.TB, n int) string {
	tb.Helper()
	if os.Getenv("RLAB_NETNS") != "1" || os.Geteuid() != 0 {
		tb.Skip("set RLAB_NETNS=1 (root) to test in a network namespace with many links")
	}
	ns := fmt.Sprintf("rlab-facts-%d", os.Getpid())
	exec.Command("ip", "netns", "del", ns).Run()
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		tb.Fatalf("ip netns add %s: %v: %s", ns, err, out)
	}
	tb.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	var batch strings.Builder
	batch.WriteString("link set lo up\n")
	for i := 0; i < n/2; i++ {
		fmt.Fprintf(&batch, "link add fa%d type veth peer name fb%d\n", i, i)
		for _, side := range []string{"fa", "fb"} {
			j := 2*i + map[string]int{"fa": 0, "fb": 1}[side]
			fmt.Fprintf(&batch, "link set %s%d up\naddr add 10.77.%d.%d/24 dev %s%d\n", side, i, j/250, j%250+1, side, i)
			if j%4 == 0 {
				fmt.Fprintf(&batch, "addr add 10.78.%d.%d/16 dev %s%d\n", j/250, j%250+1, side, i)
			}
		}
	}
	cmd := exec.Command("ip", "-n", ns, "-batch", "-")
	cmd.Stdin = strings.NewReader(batch.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("ip -n %s -batch: %v: %s", ns, err, out)
	}
	return ns
}

// enterNetns moves the calling goroutine's thread into ns for good: the
// thread stays locked, so Go discards it when the goroutine ends.
func enterNetns(ns string) error {
	f, err := os.Open("/var/run/netns/" + ns)
	if err != nil {
		return err
	}
	defer f.Close()
	runtime.LockOSThread()
	if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("setns %s: %w", ns, err)
	}
	return nil
}

// TestAddrsByIndex: one dump gives each interface the addresses (and order)
// net.Interface.Addrs gives it, here and in a namespace of 200 links.
func TestAddrsByIndex(t *testing.T) {
	// live: other tests' beds add and remove links in this namespace
	// meanwhile, so only interfaces both reads saw are compared.
	check := func(t *testing.T, wantLinks int, live bool) {
		want, err := perInterfaceAddrs()
		if err != nil {
			t.Error(err)
			return
		}
		got, err := addrsByIndex()
		if err != nil {
			t.Error(err)
			return
		}
		if live {
			for i := range want {
				if _, ok := got[i]; !ok {
					delete(want, i)
				}
			}
			for i := range got {
				if _, ok := want[i]; !ok {
					delete(got, i)
				}
			}
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("addresses by interface index (-per interface +one dump):\n%s", d)
		}
		if len(got) < wantLinks {
			t.Errorf("%d interfaces with addresses, want at least %d", len(got), wantLinks)
		}
	}
	t.Run("this host", func(t *testing.T) { check(t, 1, true) })
	t.Run("200 links", func(t *testing.T) {
		ns := manyLinksNetns(t, 200)
		done := make(chan struct{})
		go func() { // its own thread, left in the namespace
			defer close(done)
			if err := enterNetns(ns); err != nil {
				t.Error(err)
				return
			}
			check(t, 201, false)
			nds, err := readNetdevs()
			if err != nil {
				t.Error(err)
				return
			}
			// IPv4 first, in the order added; then the IPv6 link-local.
			i := slices.IndexFunc(nds, func(n proto.Netdev) bool { return n.Name == "fa0" })
			if i < 0 {
				t.Errorf("readNetdevs: no fa0 among %d netdevs", len(nds))
				return
			}
			if a := nds[i].Addrs; len(a) < 2 || a[0] != "10.77.0.1/24" || a[1] != "10.78.0.1/16" {
				t.Errorf("readNetdevs: fa0 has %q, want 10.77.0.1/24 and 10.78.0.1/16 first", a)
			}
		}()
		<-done
	})
}

// BenchmarkNetdevAddrs: the addresses of every netdev of a namespace of 200
// links, per interface (before) and from one dump (facts now). Needs
// RLAB_NETNS=1 and root:
//
//	RLAB_NETNS=1 go test -run '^$' -bench NetdevAddrs -count 6 ./agent/server/
func BenchmarkNetdevAddrs(b *testing.B) {
	ns := manyLinksNetns(b, 200)
	for _, bc := range []struct {
		name string
		fn   func() (map[int][]string, error)
	}{
		{"per-interface", perInterfaceAddrs},
		{"one-dump", addrsByIndex},
	} {
		b.Run(bc.name, func(b *testing.B) {
			if err := enterNetns(ns); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := bc.fn(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// FuzzHelpOptions: whatever a program prints for --help, the options read
// are sorted, unique, long options ("--x"), each one in the text.
func FuzzHelpOptions(f *testing.F) {
	f.Add("      --out_json  Save the report\n      --write_with_imm  use write-with-immediate verb\n")
	f.Add(" -F, --CPU-freq\n[--a] --b,--c")
	f.Fuzz(func(t *testing.T, help string) {
		got := strings.Fields(HelpOptions(help))
		for i, o := range got {
			if !strings.HasPrefix(o, "--") || len(o) < 3 || !strings.Contains(help, o) {
				t.Fatalf("option %q not a long option of %q", o, help)
			}
			if i > 0 && got[i-1] >= o {
				t.Fatalf("options not sorted and unique: %q", got)
			}
		}
	})
}

// TestFactsPackages: facts answers which of the packages asked are
// installed, from this machine's real package database (dpkg's where
// dpkg-query is, else rpm's): the database's own package is, a made-up
// name is not; no package asked, no answer; a name that is no package
// name (an option) is refused.
func TestFactsPackages(t *testing.T) {
	db, self := "dpkg", "dpkg"
	if _, err := exec.LookPath("dpkg-query"); err != nil {
		if _, err := exec.LookPath("rpm"); err != nil {
			t.Skip("no dpkg-query or rpm on this machine")
		}
		db, self = "rpm", "rpm"
	}
	c, _ := startAgent(t, Options{})
	var f proto.Facts
	c.mustCall(proto.MethodFacts, proto.FactsParams{Packages: []string{"rlab-no-such-package", self}}, &f)
	if f.PackageDB != db || !slices.Equal(f.Packages, []string{self}) {
		t.Errorf("package_db %q packages %q, want %q and [%s]", f.PackageDB, f.Packages, db, self)
	}
	var none proto.Facts
	c.mustCall(proto.MethodFacts, proto.FactsParams{}, &none)
	if none.PackageDB != "" || none.Packages != nil {
		t.Errorf("nothing asked: package_db %q packages %q", none.PackageDB, none.Packages)
	}
	if e := c.call(proto.MethodFacts, proto.FactsParams{Packages: []string{"--admindir=/tmp"}}, nil); e == nil || e.Code != proto.CodeBadRequest {
		t.Errorf("an option as a package name: %v, want a bad request", e)
	}
}
