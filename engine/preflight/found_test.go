package preflight

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/engine/lab"
)

// withDevices is a ready host with the RDMA devices of found.hcl: an mlx5
// RoCE port whose RoCE v2 GID maps eth1's address on the server, an
// InfiniBand port 2 with a LID on the client (values as ibv_devinfo prints
// them for ConnectX adapters), and siw available.
func withDevices(name string) *proto.Facts {
	f := ready(name)
	f.SIWModule = "loadable"
	for _, t := range []string{"ib_atomic_lat", "ib_read_bw"} {
		f.Tools[t] = proto.Tool{Path: "/usr/bin/" + t}
	}
	f.RDMA = []proto.RDMADevice{
		{Name: "mlx5_0", Driver: "hw", NodeType: "CA", Ports: []proto.RDMAPort{{Port: 1, State: "ACTIVE", PhysState: "LINK_UP", LinkLayer: "Ethernet",
			GIDs: []proto.GID{{Index: 0, GID: "fe80::ba59:9fff:fea1:b2c3", Type: "IB/RoCE v1"}, {Index: 3, GID: "::ffff:192.168.50.1", Type: "RoCE v2", Netdev: "eth1"}}}}},
		{Name: "mlx5_1", Driver: "hw", NodeType: "CA", Ports: []proto.RDMAPort{
			{Port: 1, State: "DOWN", PhysState: "DISABLED", LinkLayer: "InfiniBand"},
			{Port: 2, State: "ACTIVE", PhysState: "LINK_UP", LinkLayer: "InfiniBand", LID: 7, GIDs: []proto.GID{{Index: 0, GID: "fe80::b859:9f03:a1:b2c4"}}}}},
	}
	return f
}

func TestCheckFound(t *testing.T) {
	l, diags := lab.Load([]string{"testdata/found.hcl"}, lab.LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	port := func(f *proto.Facts, dev string, n int) *proto.RDMAPort {
		for i := range f.RDMA {
			for j := range f.RDMA[i].Ports {
				if f.RDMA[i].Name == dev && f.RDMA[i].Ports[j].Port == n {
					return &f.RDMA[i].Ports[j]
				}
			}
		}
		t.Fatalf("no %s port %d", dev, n)
		return nil
	}
	tests := []struct {
		name           string
		server, client func(f *proto.Facts)
		want           []string
	}{
		{name: "ready"},
		{
			name:   "device missing, and the host has none",
			server: func(f *proto.Facts) { f.RDMA = nil },
			want:   []string{`host "server": rdma "roce": device mlx5_0 port 1: no such RDMA device on the host: name one it has: none (no RDMA device at all: is the driver loaded?)`},
		},
		{
			name:   "port DOWN",
			client: func(f *proto.Facts) { p := port(f, "mlx5_1", 2); p.State, p.PhysState = "DOWN", "POLLING" },
			want:   []string{`host "client": rdma "ib": device mlx5_1 port 2: port is DOWN (physical state POLLING), not ACTIVE: bring the link up (cable, switch port, ` + "`ip link set DEV up`" + `; on InfiniBand a subnet manager must run), or use another port`},
		},
		{
			name:   "no such port",
			client: func(f *proto.Facts) { f.RDMA[1].Ports = f.RDMA[1].Ports[:1] },
			want:   []string{`host "client": rdma "ib": device mlx5_1 port 2: the device has no such port: its ports: 1`},
		},
		{
			name:   "RoCE port without a RoCE v2 IPv4 GID",
			server: func(f *proto.Facts) { p := port(f, "mlx5_0", 1); p.GIDs = p.GIDs[:1] },
			want:   []string{`host "server": rdma "roce": device mlx5_0 port 1: link layer Ethernet but no RoCE v2 GID for an IPv4 address: give the port's netdev an IPv4 address (RoCE v2 GIDs follow the netdev's addresses)`},
		},
		{
			// As facts read an EFA (agent/server testdata/sysfs/efa).
			name: "EFA: link layer Unknown",
			server: func(f *proto.Facts) {
				f.RDMA[0].NodeType = "UNSPECIFIED"
				p := port(f, "mlx5_0", 1)
				p.LinkLayer, p.GIDs = "Unknown", []proto.GID{{Index: 0, GID: "fe80::816:eff:fe0c:9ba3", Type: "IB/RoCE v1"}}
			},
			want: []string{`host "server": rdma "roce": device mlx5_0 port 1: link layer Unknown, node type UNSPECIFIED: neither RoCE, InfiniBand nor iWARP (an AWS EFA or a usNIC), which rlab's workloads need: use the host's Ethernet netdev with an rxe block instead`},
		},
		{
			name:   "InfiniBand port without a LID",
			client: func(f *proto.Facts) { port(f, "mlx5_1", 2).LID = 0 },
			want:   []string{`host "client": rdma "ib": device mlx5_1 port 2: InfiniBand port without a LID: start a subnet manager (opensm) on the fabric`},
		},
		{
			name:   "the NIC is iWARP: atomics cannot run",
			server: func(f *proto.Facts) { f.RDMA[0].NodeType = "RNIC" },
			want:   []string{`host "server": rdma "roce": device mlx5_0 port 1: is iWARP, and workload "atomic" cannot run there: iWARP has no atomic operations (RFC 5040's RDMAP defines none, and siw reports atomic_cap 0)`},
		},
		{
			name:   "kernel without siw",
			client: func(f *proto.Facts) { f.Kernel = "6.1.0-27-amd64"; f.SIWModule = "absent" },
			want:   []string{`host "client": kernel 6.1.0-27-amd64 has no siw (soft-iWARP) module: use a kernel built with CONFIG_RDMA_SIW (Ubuntu: linux-modules-extra-$(uname -r); Fedora and RHEL ship it; Debian's kernels do not)`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, c := withDevices("server"), withDevices("client")
			if tt.server != nil {
				tt.server(s)
			}
			if tt.client != nil {
				tt.client(c)
			}
			var got []string
			for _, p := range Check(l, map[string]*proto.Facts{"server": s, "client": c}) {
				got = append(got, p.String())
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}
