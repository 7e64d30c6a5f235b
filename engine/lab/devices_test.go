package lab

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestDeviceBlocks decodes rxe, siw and rdma blocks side by side: kinds,
// default names, ports, keep, and the workloads and captures that name
// them.
func TestDeviceBlocks(t *testing.T) {
	l, diags := Load([]string{corpus + "/valid/devices.hcl"}, LoadOptions{})
	if diags.HasErrors() || len(diags) > 0 {
		t.Fatal(diagText(l, diags))
	}
	type dev struct {
		Name, Kind, Device, Host, Netdev string
		Port                             int
		Keep, Found, IWARP               bool
	}
	var got []dev
	for _, r := range l.Devices {
		got = append(got, dev{r.Name, r.Block, r.Device, r.Host.Name, r.Netdev, r.Port, r.Keep, r.Found(), r.IWARP()})
	}
	want := []dev{
		{"a", "rxe", "rxe_eth1", "a", "eth1", 1, false, false, false},
		{"a_iw", "siw", "siw_eth2", "a", "eth2", 1, false, false, true},
		{"b", "siw", "iw0", "b", "eth1", 1, true, false, true},
		{`nic["a"]`, "rdma", "mlx5_0", "a", "", 2, true, true, false},
		{`nic["b"]`, "rdma", "mlx5_0", "b", "", 2, true, true, false},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("devices (-want +got):\n%s", d)
	}
	sides := map[string][2]string{}
	for _, w := range l.Workloads {
		sides[w.Name] = [2]string{w.ServerDevice.Block + "." + w.ServerDevice.Name, w.ClientDevice.Block + "." + w.ClientDevice.Name}
	}
	wantSides := map[string][2]string{
		"over_siw":  {"siw.b", "siw.a_iw"},
		"rping_siw": {"siw.b", "siw.a_iw"},
		"over_nic":  {`rdma.nic["b"]`, `rdma.nic["a"]`},
		"mixed":     {`rdma.nic["b"]`, "rxe.a"},
	}
	if d := cmp.Diff(wantSides, sides); d != "" {
		t.Errorf("workload sides (-want +got):\n%s", d)
	}
	if c := l.Captures[0]; c.Netdev != "eth2" || c.Host.Name != "a" {
		t.Errorf("capture on siw.a_iw.netdev: %s on %s", c.Netdev, c.Host.Name)
	}
	wantPlan := map[string]string{
		"a":        "create rxe rxe_eth1 on eth1 (load rdma_rxe if needed)",
		"b":        "create siw iw0 on eth1 (load siw if needed); kept after the run",
		`nic["a"]`: "use RDMA device mlx5_0 port 2 as found (check it is ACTIVE; never deleted)",
	}
	for n, w := range wantPlan {
		if got := l.DeviceByName(n).Describe(); got != w {
			t.Errorf("%s: Describe() = %q, want %q", n, got, w)
		}
	}
}

// TestIWARPProblems: what iWARP cannot do, by tool and options, from the
// descriptor; the same list preflight applies to an rdma device that turns
// out to be iWARP.
func TestIWARPProblems(t *testing.T) {
	tests := []struct {
		tool, transport string
		args            []string
		want            []string // attributes
		needs           []string
	}{
		{"ib_write_bw", "RC", nil, nil, nil},
		{"ib_read_lat", "RC", nil, nil, nil},
		{"rping", "", nil, nil, nil},
		{"ib_send_bw", "UD", nil, []string{"transport"}, nil},
		{"ib_write_bw", "UC", []string{"--write_with_imm"}, []string{"transport", "args"}, nil},
		{"ib_atomic_bw", "RC", nil, []string{"tool"}, nil},
		{"ibv_ud_pingpong", "", nil, []string{"tool"}, nil},
		{"ibv_rc_pingpong", "", nil, []string{"tool"}, nil},
		{"ib_write_bw", "RC", []string{"-R"}, nil, nil},
		{"program", "", nil, []string{"needs", "needs"}, []string{"write_with_imm", "atomics"}},
		{"program", "", nil, []string{"needs"}, []string{"send_with_imm"}},
		{"program", "", nil, nil, nil},
	}
	for _, tt := range tests {
		tool, _ := LookupTool(tt.tool)
		w := &Workload{}
		w.Tool, w.Transport, w.Args, w.Needs = tt.tool, tt.transport, tt.args, tt.needs
		var got []string
		for _, p := range IWARPProblems(w, tool) {
			got = append(got, p.Attr)
			if p.Why == "" {
				t.Errorf("%s: a problem without a reason", tt.tool)
			}
		}
		if d := cmp.Diff(tt.want, got); d != "" {
			t.Errorf("%s %s %v (-want +got):\n%s", tt.tool, tt.transport, tt.args, d)
		}
	}
}

// TestDeviceBlocksRepeat: siw and rdma blocks take count and for_each like
// rxe, and their instances are named by key.
func TestDeviceBlocksRepeat(t *testing.T) {
	src := `lab "r" {}
host "h" {
  count   = 2
  address = "192.0.2.${count.index + 1}"
}
siw "iw" {
  count  = 2
  host   = host.h[count.index]
  netdev = "eth1"
}
siw "each" {
  for_each = toset(["eth2", "eth3"])
  host     = host.h[0]
  netdev   = each.key
}
rdma "nic" {
  count  = 2
  host   = host.h[count.index]
  device = "mlx5_${count.index}"
}
workload "w" {
  tool   = "ib_write_bw"
  server = siw.iw[0]
  client = rdma.nic[1]
}
`
	l, diags := LoadSource("r.hcl", []byte(src), t.TempDir(), LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diagText(l, diags))
	}
	var got []string
	for _, r := range l.Devices {
		got = append(got, r.Block+"."+r.Name+"="+r.Host.Name+"/"+r.Device)
	}
	want := []string{`siw.iw[0]=h[0]/siw_eth1`, `siw.iw[1]=h[1]/siw_eth1`, `siw.each["eth2"]=h[0]/siw_eth2`, `siw.each["eth3"]=h[0]/siw_eth3`,
		`rdma.nic[0]=h[0]/mlx5_0`, `rdma.nic[1]=h[1]/mlx5_1`}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if w := l.Workloads[0]; w.ServerDevice.Name != "iw[0]" || w.ClientDevice.Name != "nic[1]" {
		t.Errorf("sides %s, %s", w.ServerDevice.Name, w.ClientDevice.Name)
	}
}
