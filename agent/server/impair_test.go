package server

import (
	"compress/gzip"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/rlab-dev/rlab/agent/proto"
)

// netnsHandle makes a fresh network namespace with a veth pair (veth0,
// veth1, both up) and returns a netlink handle in it: the impair code runs
// against a real kernel's qdiscs without touching this machine's own
// netdevs. Needs root (CAP_NET_ADMIN).
func netnsHandle(t *testing.T) *netlink.Handle {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a network namespace")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer orig.Close()
	ns, err := netns.New() // moves this thread into it
	if err != nil {
		t.Skipf("cannot make a network namespace: %v", err)
	}
	if err := netns.Set(orig); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Close() })
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "veth0"}, PeerName: "veth1"}
	if err := h.LinkAdd(veth); err != nil {
		t.Skipf("cannot make a veth pair: %v", err)
	}
	for _, n := range []string{"veth0", "veth1"} {
		l, err := h.LinkByName(n)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.LinkSetUp(l); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

func rootOf(t *testing.T, h *netlink.Handle, netdev string) string {
	t.Helper()
	l, err := h.LinkByName(netdev)
	if err != nil {
		t.Fatal(err)
	}
	q, err := rootQdisc(h, l)
	if err != nil {
		t.Fatal(err)
	}
	if q == nil {
		return ""
	}
	return q.Type() + " " + handleText(q.Attrs().Handle)
}

func code(err error) string {
	var pe *proto.Error
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// TestImpairNetlink runs the agent's netem code against a real kernel: a
// root qdisc someone else set (htb, which this machine's kernel has) is
// refused and left in place, and a remove leaves it alone too. On a kernel
// without sch_netem (this machine's) the apply fails saying so; on one with
// it (the VM image's), netem is applied under rlab's handle, read back and
// removed, which gives the netdev its default qdisc again.
func TestImpairNetlink(t *testing.T) {
	h := netnsHandle(t)

	// veth1: someone's htb.
	l1, _ := h.LinkByName("veth1")
	htb := netlink.NewHtb(netlink.QdiscAttrs{LinkIndex: l1.Attrs().Index, Handle: netlink.MakeHandle(1, 0), Parent: netlink.HANDLE_ROOT})
	if err := h.QdiscAdd(htb); err != nil {
		t.Fatalf("add htb: %v", err)
	}
	_, _, err := applyNetem(h, proto.ImpairParams{ID: "x", Netdev: "veth1", Loss: 1}, 0)
	if code(err) != proto.CodeQdiscBusy || !strings.Contains(err.Error(), "root qdisc htb 1:") || !strings.Contains(err.Error(), "rlab does not replace it") {
		t.Errorf("apply over htb: %v, want %s naming htb 1:", err, proto.CodeQdiscBusy)
	}
	if got := rootOf(t, h, "veth1"); got != "htb 1:" {
		t.Errorf("veth1 root after a refused apply = %q, want htb 1: untouched", got)
	}
	res, err := removeNetem(h, "veth1", 0, 0)
	if err != nil || res.Removed || rootOf(t, h, "veth1") != "htb 1:" {
		t.Errorf("remove on htb = %+v, %v; root %q: want nothing removed", res, err, rootOf(t, h, "veth1"))
	}

	// veth0: the kernel's default qdisc.
	before := rootOf(t, h, "veth0")
	gsoBefore := gsoSegs(t, h, "veth0")
	res, own, err := applyNetem(h, proto.ImpairParams{ID: `loss["1"]`, Netdev: "veth0", Loss: 1, DelayUs: 2000}, 0)
	if err != nil {
		if code(err) != proto.CodeUnsupported || !strings.Contains(err.Error(), "sch_netem") {
			t.Fatalf("apply on a kernel without netem: %v, want %s naming sch_netem", err, proto.CodeUnsupported)
		}
		t.Logf("this kernel has no netem: %v", err)
		if got := rootOf(t, h, "veth0"); got != before {
			t.Errorf("veth0 root after a failed apply = %q, want %q", got, before)
		}
		if got := gsoSegs(t, h, "veth0"); got != gsoBefore {
			t.Errorf("veth0 gso_max_segs after a failed apply = %d, want %d", got, gsoBefore)
		}
		return
	}
	if res.Qdisc != "netem" || res.Handle != "524c:" || !strings.Contains(res.Netem, "loss 1%") {
		t.Errorf("apply read back %+v, want netem 524c: with loss 1%%", res)
	}
	if got := gsoSegs(t, h, "veth0"); got != 1 || own != gsoBefore {
		t.Errorf("under loss: gso_max_segs %d, own %d; want 1, own %d", got, own, gsoBefore)
	}
	// A sweep's next point replaces rlab's own netem.
	if res, own, err = applyNetem(h, proto.ImpairParams{ID: `loss["5"]`, Netdev: "veth0", Loss: 5}, own); err != nil || !strings.Contains(res.Netem, "loss 5%") || own != gsoBefore {
		t.Errorf("re-apply: %+v, own %d, %v", res, own, err)
	}
	res, err = removeNetem(h, "veth0", own, 0)
	if err != nil || !res.Removed || res.Qdisc == "netem" {
		t.Errorf("remove = %+v, %v; want removed, default qdisc back", res, err)
	}
	if got := gsoSegs(t, h, "veth0"); got != gsoBefore {
		t.Errorf("after remove: gso_max_segs %d, want %d back", got, gsoBefore)
	}
}

func gsoSegs(t *testing.T, h *netlink.Handle, netdev string) uint32 {
	t.Helper()
	l, err := h.LinkByName(netdev)
	if err != nil {
		t.Fatal(err)
	}
	return l.Attrs().GSOMaxSegs
}

// TestGSOPerPacket: while a netem that decides per packet (loss,
// duplicate, corrupt, reorder) is in force the netdev sends each packet on
// its own (gso_max_segs 1), so "loss 1%" is 1 % of packets and not of GSO
// bursts; a delay-only netem and the removal give the netdev its own value
// back. Real netlink on a veth pair (this machine's kernel has no netem,
// so setGSO and removeNetem's give-back are driven directly; the VM bed's
// lossy lab runs them with netem).
func TestGSOPerPacket(t *testing.T) {
	h := netnsHandle(t)
	link := func() netlink.Link {
		l, err := h.LinkByName("veth0")
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	own0 := gsoSegs(t, h, "veth0")
	if own0 <= 1 {
		t.Skipf("veth0 has gso_max_segs %d: nothing to lower", own0)
	}
	for _, tt := range []struct {
		name      string
		perPacket bool
		want      uint32
		say       string
	}{
		{"loss", true, 1, fmt.Sprintf("gso_max_segs 1 (was %d)", own0)},
		{"loss again (a sweep's next point)", true, 1, fmt.Sprintf("gso_max_segs 1 (was %d)", own0)},
		{"delay only", false, own0, fmt.Sprintf("gso_max_segs %d again", own0)},
		{"delay only again", false, own0, ""},
		{"corrupt", true, 1, "gso_max_segs 1"},
	} {
		say, own := setGSO(h, link(), tt.perPacket, true, own0)
		if got := gsoSegs(t, h, "veth0"); got != tt.want || own != own0 {
			t.Errorf("%s: gso_max_segs %d, own %d; want %d, own %d", tt.name, got, own, tt.want, own0)
		}
		if tt.say == "" && say != "" || !strings.HasPrefix(say, tt.say) {
			t.Errorf("%s: says %q, want %q", tt.name, say, tt.say)
		}
	}
	// No netem to remove (this kernel's), but the netdev's own value
	// comes back all the same.
	res, err := removeNetem(h, "veth0", own0, 0)
	if err != nil || res.GSO != fmt.Sprintf("gso_max_segs %d again", own0) {
		t.Errorf("remove = %+v, %v", res, err)
	}
	if got := gsoSegs(t, h, "veth0"); got != own0 {
		t.Errorf("after remove: gso_max_segs %d, want %d", got, own0)
	}
	// A netdev this agent never lowered is left as it is.
	if err := h.LinkSetGSOMaxSegs(link(), 7); err != nil {
		t.Fatal(err)
	}
	if res, err := removeNetem(h, "veth0", 0, 0); err != nil || res.GSO != "" || gsoSegs(t, h, "veth0") != 7 {
		t.Errorf("remove on a netdev never lowered: %+v, %v, gso_max_segs %d; want 7 untouched", res, err, gsoSegs(t, h, "veth0"))
	}
}

func TestImpairParamsRefused(t *testing.T) {
	for _, p := range []proto.ImpairParams{
		{Netdev: "a/b", Loss: 1},
		{Netdev: "eth1", Loss: 101},
		{Netdev: "eth1", Corrupt: -1},
		{Netdev: "eth1", JitterUs: 10},
		{Netdev: "eth1", Reorder: 10},
	} {
		if _, _, err := applyNetem(&netlink.Handle{}, p, 0); code(err) != proto.CodeBadRequest {
			t.Errorf("applyNetem(%+v) = %v, want %s", p, err, proto.CodeBadRequest)
		}
	}
}

// TestModuleState: sch_netem's state from the kernel's own lists and config,
// as on this machine (a config saying "is not set", no /lib/modules) and on
// Debian's (a module in modules.dep).
func TestModuleState(t *testing.T) {
	dir := t.TempDir()
	saved := []*string{&procModules, &libModules, &sysModule, &procConfig, &bootDir}
	old := make([]string, len(saved))
	for i, p := range saved {
		old[i] = *p
	}
	t.Cleanup(func() {
		for i, p := range saved {
			*p = old[i]
		}
	})
	procModules, libModules, sysModule, bootDir = filepath.Join(dir, "modules"), filepath.Join(dir, "lib"), filepath.Join(dir, "sys"), filepath.Join(dir, "boot")
	procConfig = filepath.Join(dir, "config.gz")
	writeGz := func(s string) {
		f, _ := os.Create(procConfig)
		zw := gzip.NewWriter(f)
		zw.Write([]byte(s))
		zw.Close()
		f.Close()
	}
	st := func() string { return moduleState("6.1.0-27-amd64", "sch_netem", "CONFIG_NET_SCH_NETEM") }
	if got := st(); got != "unknown" {
		t.Errorf("nothing to read: %q, want unknown", got)
	}
	writeGz("CONFIG_NET_SCH_HTB=y\n# CONFIG_NET_SCH_NETEM is not set\n")
	if got := st(); got != "absent" {
		t.Errorf("config not set: %q, want absent", got)
	}
	writeGz("CONFIG_NET_SCH_NETEM=m\n")
	if got := st(); got != "loadable" {
		t.Errorf("config m: %q, want loadable", got)
	}
	os.Remove(procConfig)
	os.MkdirAll(filepath.Join(libModules, "6.1.0-27-amd64"), 0o755)
	os.WriteFile(filepath.Join(libModules, "6.1.0-27-amd64", "modules.dep"), []byte("kernel/net/sched/sch_htb.ko.xz:\n"), 0o644)
	if got := st(); got != "absent" {
		t.Errorf("modules.dep without it: %q, want absent", got)
	}
	os.WriteFile(filepath.Join(libModules, "6.1.0-27-amd64", "modules.dep"), []byte("kernel/net/sched/sch_netem.ko.xz:\n"), 0o644)
	if got := st(); got != "loadable" {
		t.Errorf("modules.dep with it: %q, want loadable", got)
	}
	os.WriteFile(procModules, []byte("sch_netem 24576 1 - Live 0x0000000000000000\n"), 0o644)
	if got := st(); got != "loaded" {
		t.Errorf("/proc/modules with it: %q, want loaded", got)
	}
}

// TestNetemAttrs: the wire parameters become netlink's netem attributes in
// netlink's units (percent as float32, microseconds, bytes per second).
func TestNetemAttrs(t *testing.T) {
	got := netemAttrs(proto.ImpairParams{DelayUs: 2000, JitterUs: 500, Loss: 0.1, Duplicate: 1, Reorder: 25, Corrupt: 0.01, RateBytes: 12_500_000})
	want := netlink.NetemQdiscAttrs{Latency: 2000, Jitter: 500, Loss: 0.1, Duplicate: 1, ReorderProb: 25, CorruptProb: 0.01, Rate64: 12_500_000}
	if got != want {
		t.Errorf("netemAttrs = %+v, want %+v", got, want)
	}
}

// TestLeftGSOSegs: an agent that finds rlab's netem with gso_max_segs 1 and
// did not set it (`rlab down` after a killed agent) gives back the value the
// run's agent found, as down passes it from the journal, when it is one the
// kernel gives a netdev; else the kernel's default. It gave the default
// always, over a lower value an admin had set (attack rounds 13, 14).
func TestLeftGSOSegs(t *testing.T) {
	for _, tc := range []struct {
		name      string
		tsoMax    uint32 // the driver's TSO limit (0: none)
		journaled uint32
		want      uint32
	}{
		{"an admin's lower value", 0, 7, 7},
		{"the netdev's own 1", 0, 1, 1},
		{"not journaled", 0, 0, 65535},
		{"the kernel's default", 0, 65535, 65535},
		{"above GSO_MAX_SEGS", 0, 1 << 20, 65535},
		{"within the driver's limit", 100, 64, 64},
		{"above the driver's limit", 100, 200, 100},
	} {
		link := &netlink.Dummy{LinkAttrs: netlink.LinkAttrs{Name: "x", TSOMaxSegs: tc.tsoMax}}
		if got := leftGSOSegs(link, tc.journaled); got != tc.want {
			t.Errorf("%s: leftGSOSegs(TSO max %d, journaled %d) = %d, want %d", tc.name, tc.tsoMax, tc.journaled, got, tc.want)
		}
	}
}
