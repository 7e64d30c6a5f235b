package steps

import (
	"context"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc"
)

// rxeHost answers rxe.ensure and rdma.use with what a (hostile) host says.
type rxeHost struct{ info proto.DeviceInfo }

func (h *rxeHost) Name() string { return "srv" }

func (h *rxeHost) Send(_ context.Context, r *rpc.Request) error {
	if _, res, ok := rpc.Match(r, rpc.DeviceEnsure); ok {
		*res = h.info
		return nil
	}
	if _, res, ok := rpc.Match(r, rpc.RDMAUse); ok {
		*res = h.info
		return nil
	}
	return &proto.Error{Code: "bad_request", Message: "unexpected " + r.Method()}
}

// TestRXEInfoFromHostChecked: what a host says of its RDMA device reaches
// other hosts' argv (a client's server address, self.server_address and
// self.server_device of a program, the gid index), so a host cannot hand
// another host an option or a name that is no address (issue 24 round 3
// attack): the answer is checked where it arrives, naming the host.
func TestRXEInfoFromHostChecked(t *testing.T) {
	good := proto.DeviceInfo{Name: "rxe0", Netdev: "eth1", Created: true, Port: 1, GIDIndex: 1, IPv4: "10.0.0.1"}
	for _, tc := range []struct {
		name string
		typ  string
		edit func(*proto.DeviceInfo)
		bad  string // "" = accepted
	}{
		{"honest", "", func(*proto.DeviceInfo) {}, ""},
		{"honest, no IPv4", "", func(i *proto.DeviceInfo) { i.IPv4 = "" }, ""},
		{"option as address", "", func(i *proto.DeviceInfo) { i.IPv4 = "--out_json_file=/home/u/.bashrc" }, "ipv4"},
		{"IPv6 as IPv4", "", func(i *proto.DeviceInfo) { i.IPv4 = "::1" }, "ipv4"},
		{"address with a zone", "", func(i *proto.DeviceInfo) { i.IPv4 = "10.0.0.1%eth0" }, "ipv4"},
		{"found device of another name", "", func(i *proto.DeviceInfo) { i.Name, i.Created = "rxe_theirs", false }, ""},
		{"created device of another name", "", func(i *proto.DeviceInfo) { i.Name = "rxe_other" }, "name"},
		{"found device named as an option", "", func(i *proto.DeviceInfo) { i.Name, i.Created = "-x", false }, "name"},
		{"netdev not the one asked", "", func(i *proto.DeviceInfo) { i.Netdev = "eth2" }, "netdev"},
		{"newline in device", "rdma", func(i *proto.DeviceInfo) { i.Name = "mlx5_0\n-x" }, "name"},
		{"option as device", "rdma", func(i *proto.DeviceInfo) { i.Name = "-d" }, "name"},
		{"path as netdev", "rdma", func(i *proto.DeviceInfo) { i.Netdev = "../../etc" }, "netdev"},
		{"negative gid index", "", func(i *proto.DeviceInfo) { i.GIDIndex = -1 }, "gid_index"},
		{"huge gid index", "", func(i *proto.DeviceInfo) { i.GIDIndex = 1 << 20 }, "gid_index"},
		{"honest active MTU", "", func(i *proto.DeviceInfo) { i.ActiveMTU = 4096 }, ""},
		{"negative active MTU", "", func(i *proto.DeviceInfo) { i.ActiveMTU = -1 }, "active_mtu"},
		{"active MTU no IB MTU", "", func(i *proto.DeviceInfo) { i.ActiveMTU = 1500 }, "active_mtu"},
		{"device name of a megabyte", "rdma", func(i *proto.DeviceInfo) { i.Name = strings.Repeat("d", 1<<20) }, "name"},
		{"honest transport and driver", "rdma", func(i *proto.DeviceInfo) { i.Transport, i.Driver = "InfiniBand", "hw" }, ""},
		{"transport of a megabyte", "", func(i *proto.DeviceInfo) { i.Transport = strings.Repeat("t", 1<<20) }, "transport"},
		{"driver of a megabyte", "rdma", func(i *proto.DeviceInfo) { i.Driver = strings.Repeat("d", 1<<20) }, "kind"},
		{"driver with escapes", "", func(i *proto.DeviceInfo) { i.Driver = "rxe\x1b]0;owned\x07" }, "kind"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			info := good
			tc.edit(&info)
			h := &rxeHost{info: info}
			env := &Env{Hosts: map[string]Host{"srv": h}}
			s := &Device{Name: "srv_rxe", Host: "srv", Device: "rxe0", Netdev: "eth1", Type: tc.typ, Port: 1}
			err := s.Apply(context.Background(), env)
			_, got := env.Device("srv_rxe")
			if tc.bad == "" {
				if err != nil || got != nil {
					t.Fatalf("an honest answer refused: %v / %v", err, got)
				}
				return
			}
			if err == nil || got == nil {
				t.Fatalf("the host's %s (%+v) was taken for later workloads (apply error %v)", tc.bad, info, err)
			}
			if !strings.Contains(err.Error(), `host "srv"`) || !strings.Contains(err.Error(), tc.bad) {
				t.Errorf("the error names neither the host nor the field %s: %.300v", tc.bad, err)
			}
			if len(err.Error()) > 1000 {
				t.Errorf("an error of %d bytes: the host's value quoted unbounded", len(err.Error()))
			}
		})
	}
}
