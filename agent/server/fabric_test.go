package server

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rlab-dev/rlab/agent/proto"
)

// The sysfs trees here follow the layout the kernel documents in
// Documentation/ABI/stable/sysfs-class-infiniband (node_type "1: CA" /
// "4: RNIC", node_desc, node_guid, ports/N/{state,phys_state,link_layer,
// rate,lid}, ports/N/gids/I, ports/N/gid_attrs/{types,ndevs}/I) and what
// the drivers put there: siw from drivers/infiniband/sw/siw/siw_main.c
// (siw_device_create: node type RNIC, node_desc "Software iWARP stack", the
// netdev's MAC, or on loopback the device name, as node GUID; the netdev's
// bus device as parent, hence a "device" link), mlx5 values as ibv_devinfo
// and `ibstat` print them in NVIDIA's MLNX_OFED documentation (rate "100
// Gb/sec (4X EDR)", base lid 0x5 on an InfiniBand port; RoCE v2 GIDs with
// ::ffff:a.b.c.d on an Ethernet port), irdma in iWARP mode as Intel's E810
// RDMA guide describes it (node type RNIC, Ethernet link layer). Written by
// hand: the build machine has no RDMA device.

func writeFiles(dir string, files map[string]string) error {
	for p, c := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, []byte(c+"\n"), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// siwSysfs is the tree siw makes for device name on netdev (lo, in these
// tests: its GUID is then the name's bytes).
func siwSysfs(name, netdev string) map[string]string {
	guid := "0000:0000:0000:0000"
	if netdev == "lo" {
		b := []byte(name)
		if len(b) > 6 {
			b = b[:6]
		}
		h := fmt.Sprintf("%x", b) + strings.Repeat("0", 16-2*len(b))
		guid = h[0:4] + ":" + h[4:8] + ":" + h[8:12] + ":" + h[12:16]
	}
	return map[string]string{
		"node_type":          "4: RNIC",
		"node_desc":          "Software iWARP stack",
		"node_guid":          guid,
		"sys_image_guid":     guid,
		"device/vendor":      "0x1af4", // the netdev's bus device (virtio-net in the VMs)
		"ports/1/state":      "4: ACTIVE",
		"ports/1/phys_state": "5: LinkUp",
		"ports/1/link_layer": "Ethernet",
		"ports/1/gids/0":     guid + ":0000:0000:0000:0000", // siw_query_gid: the MAC in the first bytes
	}
}

func TestSIWLifecycle(t *testing.T) {
	k := installFakeRXE(t)
	writeTree(t, filepath.Dir(procModules), map[string]string{"modules": "rdma_rxe 1 0 - Live 0x0\nsiw 1 0 - Live 0x0"})
	c, _ := startAgent(t, Options{})

	var info proto.DeviceInfo
	c.mustCall(proto.MethodDeviceEnsure, proto.DeviceEnsureParams{Netdev: "lo", Type: "siw"}, &info)
	want := proto.DeviceInfo{Name: "siw_lo", Netdev: "lo", Created: true, Port: 1, GIDIndex: 0,
		IPv4: "127.0.0.1", ActiveMTU: 4096, NodeGUID: "7369:775f:6c6f:0000", Driver: "siw", Transport: "iWARP"}
	if d := cmp.Diff(want, info); d != "" {
		t.Errorf("first ensure (-want +got):\n%s", d)
	}
	// Found again by its GUID, whatever name is asked for: not ours then.
	c.mustCall(proto.MethodDeviceEnsure, proto.DeviceEnsureParams{Name: "other", Netdev: "lo", Type: "siw"}, &info)
	want.Created = false
	if d := cmp.Diff(want, info); d != "" {
		t.Errorf("second ensure (-want +got):\n%s", d)
	}
	// An rxe on the same netdev is another device: siw does not hide it.
	c.mustCall(proto.MethodDeviceEnsure, proto.DeviceEnsureParams{Netdev: "lo"}, &info)
	if info.Name != "rxe_lo" || !info.Created || info.Transport != "RoCE" {
		t.Errorf("rxe beside siw: %+v", info)
	}
	var res proto.CleanupResult
	c.mustCall(proto.MethodCleanup, proto.CleanupParams{}, &res)
	if d := cmp.Diff([]string{"rxe_lo", "siw_lo"}, sortedCopy(res.DevicesDeleted)); d != "" {
		t.Errorf("cleanup deleted (-want +got):\n%s", d)
	}
	added, deleted := k.log()
	if d := cmp.Diff([]string{"siw_lo", "rxe_lo"}, added); d != "" {
		t.Errorf("added (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"rxe_lo", "siw_lo"}, sortedCopy(deleted)); d != "" {
		t.Errorf("deleted (-want +got):\n%s", d)
	}
	if e := c.call(proto.MethodDeviceEnsure, proto.DeviceEnsureParams{Netdev: "lo", Type: "roce"}, nil); e == nil || e.Code != proto.CodeBadRequest {
		t.Errorf("unknown type: %v, want bad_request", e)
	}
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// A kernel without siw (Debian's) gets the fix in the error, as for rxe.
func TestSIWEnsureWithoutSIW(t *testing.T) {
	installFakeRXE(t)
	root := t.TempDir()
	om, ol := sysModule, libModules
	sysModule, libModules = filepath.Join(root, "sys"), filepath.Join(root, "lib")
	t.Cleanup(func() { sysModule, libModules = om, ol })
	c, _ := startAgent(t, Options{})
	e := c.call(proto.MethodDeviceEnsure, proto.DeviceEnsureParams{Netdev: "lo", Type: "siw"}, nil)
	if e == nil || e.Code != proto.CodeNoModule || !strings.Contains(e.Message, "no siw (soft-iWARP) module") || !strings.Contains(e.Message, "CONFIG_RDMA_SIW") {
		t.Errorf("siw ensure without siw: %v, want %s naming CONFIG_RDMA_SIW", e, proto.CodeNoModule)
	}
}

// fabricTree is a host with every kind of device: rxe and siw made on lo,
// an mlx5 with a RoCE port (GID on lo's 127.0.0.1) and an InfiniBand port,
// an irdma in iWARP mode, and a port that is DOWN.
func fabricTree(t *testing.T) {
	t.Helper()
	root := t.TempDir()
	ib, netc := filepath.Join(root, "infiniband"), filepath.Join(root, "net")
	files := map[string]string{
		"rxe_lo/parent":                         "lo",
		"rxe_lo/node_type":                      "1: CA",
		"rxe_lo/node_guid":                      "0000:00ff:fe00:0001",
		"rxe_lo/ports/1/state":                  "4: ACTIVE",
		"rxe_lo/ports/1/phys_state":             "5: LinkUp",
		"rxe_lo/ports/1/link_layer":             "Ethernet",
		"rxe_lo/ports/1/gids/1":                 "0000:0000:0000:0000:0000:ffff:7f00:0001",
		"rxe_lo/ports/1/gid_attrs/types/1":      "RoCE v2",
		"rxe_lo/ports/1/gid_attrs/ndevs/1":      "lo",
		"mlx5_0/node_type":                      "1: CA",
		"mlx5_0/node_desc":                      "host-a mlx5_0",
		"mlx5_0/node_guid":                      "b859:9f03:00a1:b2c3",
		"mlx5_0/sys_image_guid":                 "b859:9f03:00a1:b2c3",
		"mlx5_0/device/vendor":                  "0x15b3",
		"mlx5_0/device/net/lo/mtu":              "65536",
		"mlx5_0/ports/1/state":                  "4: ACTIVE",
		"mlx5_0/ports/1/phys_state":             "5: LinkUp",
		"mlx5_0/ports/1/link_layer":             "Ethernet",
		"mlx5_0/ports/1/rate":                   "100 Gb/sec (4X EDR)",
		"mlx5_0/ports/1/lid":                    "0x0",
		"mlx5_0/ports/1/gids/0":                 "fe80:0000:0000:0000:ba59:9fff:fea1:b2c3",
		"mlx5_0/ports/1/gid_attrs/types/0":      "IB/RoCE v1",
		"mlx5_0/ports/1/gid_attrs/ndevs/0":      "lo",
		"mlx5_0/ports/1/gids/3":                 "0000:0000:0000:0000:0000:ffff:7f00:0001",
		"mlx5_0/ports/1/gid_attrs/types/3":      "RoCE v2",
		"mlx5_0/ports/1/gid_attrs/ndevs/3":      "lo",
		"mlx5_1/node_type":                      "1: CA",
		"mlx5_1/node_guid":                      "b859:9f03:00a1:b2c4",
		"mlx5_1/sys_image_guid":                 "b859:9f03:00a1:b2c3",
		"mlx5_1/device/vendor":                  "0x15b3",
		"mlx5_1/ports/1/state":                  "4: ACTIVE",
		"mlx5_1/ports/1/phys_state":             "5: LinkUp",
		"mlx5_1/ports/1/link_layer":             "InfiniBand",
		"mlx5_1/ports/1/rate":                   "100 Gb/sec (4X EDR)",
		"mlx5_1/ports/1/lid":                    "0x5",
		"mlx5_1/ports/1/gids/0":                 "fe80:0000:0000:0000:b859:9f03:00a1:b2c4",
		"mlx5_1/ports/2/state":                  "1: DOWN",
		"mlx5_1/ports/2/phys_state":             "3: Disabled",
		"mlx5_1/ports/2/link_layer":             "InfiniBand",
		"mlx5_1/ports/2/lid":                    "0x0",
		"irdma0/node_type":                      "4: RNIC",
		"irdma0/node_desc":                      "irdma",
		"irdma0/node_guid":                      "b496:91ff:fe9a:0001",
		"irdma0/device/vendor":                  "0x8086",
		"irdma0/ports/1/state":                  "4: ACTIVE",
		"irdma0/ports/1/phys_state":             "5: LinkUp",
		"irdma0/ports/1/link_layer":             "Ethernet",
		"irdma0/ports/1/rate":                   "25 Gb/sec (1X EDR)",
		"irdma0/ports/1/gids/0":                 "b496:9100:0001:0000:0000:0000:0000:0000",
		"irdma0/device/net/lo/addr_assign_type": "0",
	}
	for k, v := range siwSysfs("siw_lo", "lo") {
		files["siw_lo/"+k] = v
	}
	writeTree(t, ib, files)
	writeTree(t, netc, map[string]string{"lo/mtu": "65536", "lo/address": "00:00:00:00:00:00"})
	oldIB, oldNet := sysClassIB, sysClassNet
	sysClassIB, sysClassNet = ib, netc
	t.Cleanup(func() { sysClassIB, sysClassNet = oldIB, oldNet })
}

func TestRDMADeviceKinds(t *testing.T) {
	fabricTree(t)
	devs, err := readRDMADevices()
	if err != nil {
		t.Fatal(err)
	}
	type row struct{ Name, Kind, NodeType, Parent, Netdevs, Transport, Rate string }
	var got []row
	for _, d := range devs {
		got = append(got, row{d.Name, d.Driver, d.NodeType, d.Parent, strings.Join(d.Netdevs, ","), portTransport(d, d.Ports[0]), d.Ports[0].Rate})
	}
	want := []row{
		{"irdma0", "hw", "RNIC", "", "lo", "iWARP", "25 Gb/sec (1X EDR)"},
		{"mlx5_0", "hw", "CA", "", "lo", "RoCE", "100 Gb/sec (4X EDR)"},
		{"mlx5_1", "hw", "CA", "", "", "InfiniBand", "100 Gb/sec (4X EDR)"},
		{"rxe_lo", "rxe", "CA", "lo", "", "RoCE", ""},
		{"siw_lo", "siw", "RNIC", "", "lo", "iWARP", ""},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("kinds (-want +got):\n%s", d)
	}
	if devs[2].Ports[0].LID != 5 || devs[2].SysImageGUID != "b859:9f03:00a1:b2c3" {
		t.Errorf("mlx5_1: lid %d, sys_image_guid %q", devs[2].Ports[0].LID, devs[2].SysImageGUID)
	}
}

func TestRDMAUse(t *testing.T) {
	fabricTree(t)
	tests := []struct {
		name     string
		dev      string
		port     int
		want     *proto.DeviceInfo
		code     string
		contains []string
	}{
		{name: "RoCE port: the RoCE v2 GID of its netdev's IPv4", dev: "mlx5_0", port: 1,
			want: &proto.DeviceInfo{Name: "mlx5_0", Netdev: "lo", Port: 1, GIDIndex: 3, GID: "::ffff:127.0.0.1", IPv4: "127.0.0.1",
				ActiveMTU: 4096, NodeGUID: "b859:9f03:00a1:b2c3", Driver: "hw", Transport: "RoCE"}},
		{name: "InfiniBand port: GID 0 and the LID", dev: "mlx5_1", port: 1,
			want: &proto.DeviceInfo{Name: "mlx5_1", Port: 1, GIDIndex: 0, NodeGUID: "b859:9f03:00a1:b2c4", Driver: "hw", Transport: "InfiniBand", LID: 5}},
		{name: "an admin's rxe", dev: "rxe_lo", port: 1,
			want: &proto.DeviceInfo{Name: "rxe_lo", Netdev: "lo", Port: 1, GIDIndex: 1, GID: "::ffff:127.0.0.1", IPv4: "127.0.0.1",
				ActiveMTU: 4096, NodeGUID: "0000:00ff:fe00:0001", Driver: "rxe", Transport: "RoCE"}},
		{name: "an admin's siw", dev: "siw_lo", port: 1,
			want: &proto.DeviceInfo{Name: "siw_lo", Netdev: "lo", Port: 1, GIDIndex: 0, IPv4: "127.0.0.1",
				ActiveMTU: 4096, NodeGUID: "7369:775f:6c6f:0000", Driver: "siw", Transport: "iWARP"}},
		{name: "port DOWN", dev: "mlx5_1", port: 2, code: proto.CodeUnsupported,
			contains: []string{`"mlx5_1" port 2`, "port state is DOWN", "physical state DISABLED", "subnet manager"}},
		{name: "no such port", dev: "mlx5_0", port: 2, code: proto.CodeNotFound, contains: []string{"no port 2", "its ports: 1"}},
		{name: "no such device", dev: "mlx5_9", port: 1, code: proto.CodeNotFound,
			contains: []string{`"mlx5_9"`, "no such device", "irdma0, mlx5_0, mlx5_1, rxe_lo, siw_lo"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := useDevice(tt.dev, tt.port)
			if tt.want != nil {
				if err != nil {
					t.Fatal(err)
				}
				if d := cmp.Diff(tt.want, got); d != "" {
					t.Errorf("(-want +got):\n%s", d)
				}
				return
			}
			pe, _ := err.(*proto.Error)
			if pe == nil || pe.Code != tt.code {
				t.Fatalf("err = %v, want code %s", err, tt.code)
			}
			for _, s := range tt.contains {
				if !strings.Contains(pe.Message, s) {
					t.Errorf("message %q lacks %q", pe.Message, s)
				}
			}
		})
	}
}

// Over the wire too, and the device is never touched: rdma.use creates
// and deletes nothing, and cleanup leaves it.
func TestRDMAUseOverTheWire(t *testing.T) {
	k := installFakeRXE(t)
	if err := k.add("rxe_admin", "rxe", "lo"); err != nil {
		t.Fatal(err)
	}
	c, _ := startAgent(t, Options{})
	var info proto.DeviceInfo
	c.mustCall(proto.MethodRDMAUse, proto.RDMAUseParams{Name: "rxe_admin"}, &info)
	if info.Name != "rxe_admin" || info.Port != 1 || info.GIDIndex != 3 || info.Created {
		t.Errorf("rdma.use: %+v", info)
	}
	var res proto.CleanupResult
	c.mustCall(proto.MethodCleanup, proto.CleanupParams{}, &res)
	if len(res.DevicesDeleted) != 0 {
		t.Errorf("cleanup deleted %v", res.DevicesDeleted)
	}
	if _, deleted := k.log(); len(deleted) != 0 {
		t.Errorf("deleted %v", deleted)
	}
	if e := c.call(proto.MethodRDMAUse, proto.RDMAUseParams{Name: "../x"}, nil); e == nil || e.Code != proto.CodeBadRequest {
		t.Errorf("bad name: %v", e)
	}
}

func TestParseLIDAndSIWGUID(t *testing.T) {
	for in, want := range map[string]int{"0x5": 5, "0x0": 0, "0xffff": 65535, "": 0, "5": 0, "0x10000": 0, "0xzz": 0, "0x": 0} {
		if got := ParseLID(in); got != want {
			t.Errorf("ParseLID(%q) = %d, want %d", in, got, want)
		}
	}
	for _, tt := range []struct {
		dev, guid, mac string
		lo, ok         bool
	}{
		{"siw_eth1", "5254:0012:3456:0000", "52:54:00:12:34:56", false, true},
		{"siw_lo", "7369:775f:6c6f:0000", "", true, true},
		{"siw0", "7369:7730:0000:0000", "", true, true},
		{"siw_eth1", "5254:00ff:fe12:3456", "", false, false}, // an EUI-64 (rxe, hardware): not siw's
		{"siw_eth1", "xyz", "", false, false},
	} {
		mac, lo, ok := SIWGUIDNetdev(tt.dev, tt.guid)
		if mac != tt.mac || lo != tt.lo || ok != tt.ok {
			t.Errorf("SIWGUIDNetdev(%q, %q) = %q, %v, %v; want %q, %v, %v", tt.dev, tt.guid, mac, lo, ok, tt.mac, tt.lo, tt.ok)
		}
	}
}

func FuzzSysfsRDMA(f *testing.F) {
	for _, s := range []string{"0x5", "0x0", "5254:0012:3456:0000", "7369:775f:6c6f:0000", "4: RNIC", "1: CA"} {
		f.Add("siw_lo", s)
	}
	f.Fuzz(func(t *testing.T, dev, s string) {
		if n := ParseLID(s); n < 0 || n > 0xffff {
			t.Fatalf("ParseLID(%q) = %d", s, n)
		}
		mac, lo, ok := SIWGUIDNetdev(dev, s)
		if !ok && (mac != "" || lo) {
			t.Fatalf("not ok but %q %v", mac, lo)
		}
		if ok && !lo && len(mac) != 17 {
			t.Fatalf("mac %q", mac)
		}
		_ = sysfsEnum(s)
	})
}

// rxe.delete refuses hardware: only rxe and siw devices are ever deleted,
// whatever a state file says.
func TestRXEDeleteRefusesHardware(t *testing.T) {
	fabricTree(t)
	c, _ := startAgent(t, Options{})
	for _, dev := range []string{"mlx5_0", "irdma0"} {
		e := c.call(proto.MethodDeviceDelete, proto.DeviceDeleteParams{Name: dev}, nil)
		if e == nil || e.Code != proto.CodeBadRequest || !strings.Contains(e.Message, "never deletes hardware") {
			t.Errorf("rxe.delete %s: %v, want bad_request", dev, e)
		}
	}
}
