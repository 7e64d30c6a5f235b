package server

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rlab-dev/rlab/agent/proto"
)

// fakeRXEKernel stands in for the kernel's rdma_rxe on a machine that has
// none: RdmaLinkAdd/Del create and remove a device directory in a sysfs tree
// laid out as rdma_rxe lays it out (parent, port state, GID table with the
// netdev's addresses as RoCE v2 GIDs). The real path runs in the VM tests.
type fakeRXEKernel struct {
	mu      sync.Mutex
	ib      string
	added   []string
	deleted []string
}

func installFakeRXE(t *testing.T) *fakeRXEKernel {
	t.Helper()
	root := t.TempDir()
	k := &fakeRXEKernel{ib: filepath.Join(root, "infiniband")}
	if err := os.MkdirAll(k.ib, 0o755); err != nil {
		t.Fatal(err)
	}
	writeTree(t, root, map[string]string{"modules": "rdma_rxe 1 0 - Live 0x0"})
	oldIB, oldMods, oldAdd, oldDel := sysClassIB, procModules, rdmaLinkAdd, rdmaLinkDel
	sysClassIB, procModules = k.ib, filepath.Join(root, "modules")
	rdmaLinkAdd = k.add
	rdmaLinkDel = k.del
	t.Cleanup(func() { sysClassIB, procModules, rdmaLinkAdd, rdmaLinkDel = oldIB, oldMods, oldAdd, oldDel })
	return k
}

func (k *fakeRXEKernel) add(name, typ, netdev string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	dir := filepath.Join(k.ib, name)
	if typ == "siw" {
		k.added = append(k.added, name)
		return writeFiles(dir, siwSysfs(name, netdev))
	}
	if typ != "rxe" {
		return fmt.Errorf("link type %q", typ)
	}
	files := map[string]string{
		"parent":                    netdev,
		"node_guid":                 "0000:00ff:fe00:0001",
		"ports/1/state":             "4: ACTIVE",
		"ports/1/phys_state":        "5: LinkUp",
		"ports/1/link_layer":        "Ethernet",
		"ports/1/gids/0":            "fe80:0000:0000:0000:0000:00ff:fe00:0001",
		"ports/1/gid_attrs/types/0": "IB/RoCE v1",
		"ports/1/gids/1":            "fe80:0000:0000:0000:0000:00ff:fe00:0001",
		"ports/1/gid_attrs/types/1": "RoCE v2",
		"ports/1/gids/2":            "0000:0000:0000:0000:0000:ffff:7f00:0001", // 127.0.0.1
		"ports/1/gid_attrs/types/2": "IB/RoCE v1",
		"ports/1/gids/3":            "0000:0000:0000:0000:0000:ffff:7f00:0001",
		"ports/1/gid_attrs/types/3": "RoCE v2",
	}
	for p, c := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, []byte(c+"\n"), 0o644); err != nil {
			return err
		}
	}
	k.added = append(k.added, name)
	return nil
}

func (k *fakeRXEKernel) del(name string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.deleted = append(k.deleted, name)
	return os.RemoveAll(filepath.Join(k.ib, name))
}

func (k *fakeRXEKernel) log() ([]string, []string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.added), slices.Clone(k.deleted)
}

func TestRXELifecycle(t *testing.T) {
	k := installFakeRXE(t)
	c, _ := startAgent(t, Options{})

	var info proto.DeviceInfo
	c.mustCall(proto.MethodDeviceEnsure, proto.DeviceEnsureParams{Netdev: "lo"}, &info)
	want := proto.DeviceInfo{Name: "rxe_lo", Netdev: "lo", Created: true, Port: 1, GIDIndex: 3,
		GID: "::ffff:127.0.0.1", IPv4: "127.0.0.1", ActiveMTU: 4096, NodeGUID: "0000:00ff:fe00:0001", Driver: "rxe", Transport: "RoCE"}
	if d := cmp.Diff(want, info); d != "" {
		t.Errorf("first ensure (-want +got):\n%s", d)
	}
	// Idempotent: the device on lo is found, whatever name is asked for.
	c.mustCall(proto.MethodDeviceEnsure, proto.DeviceEnsureParams{Name: "other", Netdev: "lo"}, &info)
	want.Created = false
	if d := cmp.Diff(want, info); d != "" {
		t.Errorf("second ensure (-want +got):\n%s", d)
	}
	// A device someone else made is reused, reported as not ours, and left
	// alone by cleanup.
	if err := k.add("theirs", "rxe", "dummy0"); err != nil {
		t.Fatal(err)
	}
	var res proto.CleanupResult
	c.mustCall(proto.MethodCleanup, proto.CleanupParams{}, &res)
	if d := cmp.Diff([]string{"rxe_lo"}, res.DevicesDeleted); d != "" {
		t.Errorf("cleanup deleted (-want +got):\n%s", d)
	}
	var del proto.DeviceDeleteResult
	c.mustCall(proto.MethodDeviceDelete, proto.DeviceDeleteParams{Name: "rxe_lo"}, &del)
	if del.Deleted {
		t.Error("deleted rxe_lo twice")
	}
	added, deleted := k.log()
	if d := cmp.Diff([]string{"rxe_lo", "theirs"}, added); d != "" {
		t.Errorf("added (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"rxe_lo"}, deleted); d != "" {
		t.Errorf("deleted (-want +got):\n%s", d)
	}
}

func TestRXEKeptOutlivesTheAgent(t *testing.T) {
	k := installFakeRXE(t)
	c, _ := startAgent(t, Options{})
	c.mustCall(proto.MethodDeviceEnsure, proto.DeviceEnsureParams{Name: "rxe_keep", Netdev: "lo"}, nil)
	var res proto.CleanupResult
	c.mustCall(proto.MethodCleanup, proto.CleanupParams{Keep: []string{"rxe_keep"}}, &res)
	if len(res.DevicesDeleted) != 0 {
		t.Errorf("cleanup with keep deleted %v", res.DevicesDeleted)
	}
	// Kept means kept: closing stdin afterwards (the run's end) leaves it too.
	if err := c.close(); err != nil {
		t.Fatal(err)
	}
	if _, deleted := k.log(); len(deleted) != 0 {
		t.Errorf("deleted on stdin close after keep: %v, want none", deleted)
	}
}

func TestRXEEnsureBadNames(t *testing.T) {
	installFakeRXE(t)
	c, _ := startAgent(t, Options{})
	for _, p := range []proto.DeviceEnsureParams{
		{Netdev: ""}, {Netdev: "lo", Name: "a/b"}, {Netdev: "lo", Name: "x y"}, {Netdev: "lo", Name: ".."},
	} {
		if e := c.call(proto.MethodDeviceEnsure, p, nil); e == nil || e.Code != proto.CodeBadRequest {
			t.Errorf("rxe.ensure %+v: %v, want %s", p, e, proto.CodeBadRequest)
		}
	}
	if e := c.call(proto.MethodDeviceDelete, proto.DeviceDeleteParams{Name: "../../x"}, nil); e == nil || e.Code != proto.CodeBadRequest {
		t.Errorf("rxe.delete ../../x: %v", e)
	}
}

// TestRefusedAsRoot: when the kernel refuses root an rdma link (EPERM), the
// error says why instead of "needs root": a VLAN for rxe (rxe_newlink:
// "rxe creation allowed on top of a real device only", met on the
// examples' VMs with labs/transports.hcl's first draft), else the kernel's
// log. The uevents are sysfs's /sys/class/net/DEV/uevent of a VLAN and a
// virtio NIC.
func TestRefusedAsRoot(t *testing.T) {
	vlan := "DEVTYPE=vlan\nINTERFACE=eth1.10\nIFINDEX=5"
	nic := "INTERFACE=eth1\nIFINDEX=3"
	for _, c := range []struct{ typ, uevent, want string }{
		{"rxe", vlan, "takes no VLAN netdev"},
		{"rxe", nic, "dmesg"},
		{"siw", vlan, "dmesg"},
		{"rxe", "", "dmesg"},
	} {
		got := refusedAsRoot(c.typ, c.uevent)
		if !strings.Contains(got, c.want) || strings.Contains(got, "needs root") {
			t.Errorf("refusedAsRoot(%s, %q) = %q, want it to say %q", c.typ, c.uevent, got, c.want)
		}
	}
}

// TestFindRoCEv2GID reads GID tables laid out as rxe's (the unused entries
// all zeros, as sysfs shows them; 100 entries here, rxe has 1024) and finds what RoCEv2GID
// finds in the whole table read by readRDMAPort; a scan with a gap stops
// at that many empty entries in a row, and the whole-table scan does not.
func TestFindRoCEv2GID(t *testing.T) {
	const zero = "0000:0000:0000:0000:0000:0000:0000:0000"
	v4 := func(last int) string { return fmt.Sprintf("0000:0000:0000:0000:0000:ffff:0a63:%04x", last) }
	table := func(set map[int][2]string) map[string]string {
		files := map[string]string{"state": "4: ACTIVE", "link_layer": "Ethernet"}
		for i := 0; i < 100; i++ {
			files[fmt.Sprintf("gids/%d", i)] = zero
		}
		for i, g := range set {
			files[fmt.Sprintf("gids/%d", i)] = g[0]
			files[fmt.Sprintf("gid_attrs/types/%d", i)] = g[1]
			files[fmt.Sprintf("gid_attrs/ndevs/%d", i)] = "eth1"
		}
		return files
	}
	for _, tc := range []struct {
		name   string
		gids   map[int][2]string
		ip     string
		gap    int
		want   int // -1: not found
		direct bool
	}{
		{"rxe after restore", map[int][2]string{0: {"fe80:0000:0000:0000:5054:00ff:fe11:0001", "RoCE v2"}, 1: {v4(1), "RoCE v2"}}, "10.99.0.1", gidScanGap, 1, true},
		{"not yet there", map[int][2]string{0: {"fe80:0000:0000:0000:5054:00ff:fe11:0001", "RoCE v2"}}, "10.99.0.1", gidScanGap, -1, true},
		{"another address", map[int][2]string{1: {v4(2), "RoCE v2"}}, "10.99.0.1", 0, -1, true},
		{"v1 before v2", map[int][2]string{2: {v4(1), "IB/RoCE v1"}, 3: {v4(1), "RoCE v2"}}, "10.99.0.1", gidScanGap, 3, true},
		{"past a gap, whole table", map[int][2]string{0: {v4(9), "RoCE v2"}, 40: {v4(1), "RoCE v2"}}, "10.99.0.1", 0, 40, true},
		{"past a gap, scan with a gap", map[int][2]string{0: {v4(9), "RoCE v2"}, 40: {v4(1), "RoCE v2"}}, "10.99.0.1", gidScanGap, -1, false},
		{"a short hole", map[int][2]string{0: {v4(9), "RoCE v2"}, 5: {v4(1), "RoCE v2"}}, "10.99.0.1", gidScanGap, 5, true},
		{"last entry", map[int][2]string{99: {v4(1), "RoCE v2"}}, "10.99.0.1", 0, 99, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "ports", "1")
			writeTree(t, dir, table(tc.gids))
			g, ok := findRoCEv2GID(dir, net.ParseIP(tc.ip), tc.gap)
			if got := map[bool]int{true: g.Index, false: -1}[ok]; got != tc.want {
				t.Fatalf("findRoCEv2GID(gap %d) = %+v, %v; want index %d", tc.gap, g, ok, tc.want)
			}
			// The same answer as RoCEv2GID over the table facts read.
			p := readRDMAPort(proto.RDMADevice{Driver: "hw"}, dir, 1, true)
			w, wok := RoCEv2GID(p.GIDs, net.ParseIP(tc.ip))
			if tc.direct && (wok != ok || ok && w != g) {
				t.Errorf("findRoCEv2GID = %+v, %v; RoCEv2GID over the whole table = %+v, %v", g, ok, w, wok)
			}
		})
	}
}

// TestScanGap: the wait reads the whole GID table on its last look and on
// its first look at a device it found (not made), and stops at a gap
// otherwise.
func TestScanGap(t *testing.T) {
	for _, c := range []struct {
		created, first, last bool
		want                 int
	}{
		{created: true, first: true, want: gidScanGap},
		{created: true, want: gidScanGap},
		{created: true, last: true, want: 0},
		{created: false, first: true, want: 0},
		{created: false, want: gidScanGap},
		{created: false, last: true, want: 0},
	} {
		if got := scanGap(c.created, c.first, c.last); got != c.want {
			t.Errorf("scanGap(created %v, first %v, last %v) = %d, want %d", c.created, c.first, c.last, got, c.want)
		}
	}
}
