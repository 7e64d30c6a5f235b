package main

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/engine/remote"
)

var updateFacts = flag.Bool("update-facts", false, "rewrite testdata/facts/*.golden")

func factsFixture() []remote.Result {
	f := &proto.Facts{
		Hostname: "server", Kernel: "6.1.0-27-amd64", OS: "Debian GNU/Linux 12 (bookworm)", Arch: "x86_64", CPUs: 2, MemBytes: 1 << 30,
		User: "root", Root: true,
		Netdevs: []proto.Netdev{
			{Name: "lo", MTU: 65536, State: "unknown", Addrs: []string{"127.0.0.1/8"}},
			{Name: "eth0", MTU: 1500, State: "up", Addrs: []string{"10.0.2.15/24"}},
			{Name: "eth1", MTU: 1500, State: "up", Addrs: []string{"192.168.50.1/24"}},
		},
		RDMA: []proto.RDMADevice{{Name: "rxe_eth1", Driver: "rxe", Parent: "eth1", Ports: []proto.RDMAPort{{Port: 1, State: "ACTIVE", ActiveMTU: 1024,
			GIDs: []proto.GID{{Index: 1, GID: "0000:0000:0000:0000:0000:ffff:c0a8:3201", Type: "RoCE v2", Netdev: "eth1"}}}}},
			// Hardware beside rxe: a RoCE NIC on its netdev and an iWARP one
			// (values as agent/server's sysfs fixtures read them).
			{Name: "mlx5_0", Driver: "hw", NodeType: "CA", Netdevs: []string{"ens2f0"}, NodeGUID: "b859:9f03:00a1:b2c3", SysImageGUID: "b859:9f03:00a1:b2c3",
				Ports: []proto.RDMAPort{{Port: 1, State: "ACTIVE", LinkLayer: "Ethernet", Rate: "100 Gb/sec (4X EDR)"}}},
			{Name: "irdma0", Driver: "hw", NodeType: "RNIC", Netdevs: []string{"ens3f0"}, Ports: []proto.RDMAPort{{Port: 1, State: "ACTIVE", LinkLayer: "Ethernet"}}},
			{Name: "siw_eth1", Driver: "siw", NodeType: "RNIC", Netdevs: []string{"eth1"}, Ports: []proto.RDMAPort{{Port: 1, State: "ACTIVE", LinkLayer: "Ethernet"}}},
		},
		RXEModule:   "loaded",
		Tools:       map[string]proto.Tool{"ib_write_bw": {Path: "/usr/bin/ib_write_bw", Version: "6.15"}, "tcpdump": {Path: "/usr/bin/tcpdump", Version: "4.99.3"}},
		MemlockSoft: -1, MemlockHard: -1, WorkDir: "/root/.cache/rlab/runs/facts/server", FreeBytes: 10 << 30,
		Platform: proto.Platform{Virtualization: "amazon", Vendor: "Amazon EC2", Product: "c5.large", CPUModel: "Intel(R) Xeon(R) Platinum 8275CL CPU @ 3.00GHz",
			DistroID: "ubuntu", DistroIDLike: []string{"debian"}, DistroVersion: "22.04", RDMACore: "39.0"},
	}
	return []remote.Result{
		{Name: "server", Facts: f},
		{Name: `client["ana"]`, Err: errors.New(`host "client[\"ana\"]": connect to root@192.0.2.11:22: connection refused: nothing listens on port 22 (sshd not running, or the wrong port)`)},
	}
}

func TestFactsOutputGolden(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write func(*bytes.Buffer, []remote.Result) error
	}{
		{"table", func(b *bytes.Buffer, r []remote.Result) error { return writeFactsTable(b, r) }},
		{"json", func(b *bytes.Buffer, r []remote.Result) error { return writeFactsJSON(b, r) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tc.write(&b, factsFixture()); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "facts", tc.name+".golden")
			if *updateFacts {
				os.MkdirAll(filepath.Dir(golden), 0o755)
				if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update-facts)", err)
			}
			if diff := cmp.Diff(string(want), b.String()); diff != "" {
				t.Errorf("%s output (-golden +got):\n%s", tc.name, diff)
			}
		})
	}
}
