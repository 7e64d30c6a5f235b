package perftest

import (
	"context"
	"testing"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/kinds"
	"github.com/rlab-dev/rlab/steps"
)

// TestRunsReusedDeviceName: rxe.ensure reuses an rxe already on the netdev
// under its own name (agent/server/rxe.go: info.Name = existing, which
// checkDeviceInfo accepts when not Created). Before ops ran the plan's argv,
// perftest got -d <the reported name>; now it gets the lab's default name,
// a device that does not exist on the host.
func TestRunsReusedDeviceName(t *testing.T) {
	w := &steps.Workload{Workload: kinds.Workload{Name: "bw", Slug: "bw", Tool: "ib_write_bw", Options: kinds.Options{Iterations: 10, Sizes: []int64{4096}}},
		ServerHost: "s", ClientHost: "c", ServerDevice: "ds", ClientDevice: "dc"}
	in := kinds.ArgvIn{W: &w.Workload, Server: kinds.End{Device: "rxe_eth1", GID: kinds.ServerGID, Port: 1},
		Client: kinds.End{Device: "rxe_eth1", GID: kinds.ClientGID, Port: 1}, MTU: kinds.PathMTU, Addr: kinds.ServerAddr}
	planned, _ := kinds.PlanTrials(in, 0, w.Sizes)
	sh, ch := &argvHost{name: "s"}, &argvHost{name: "c"}
	env := &steps.Env{Hosts: map[string]steps.Host{"s": sh, "c": ch}, Facts: map[string]*proto.Facts{"c": {}}}
	// Both hosts already had an rxe on eth1, named rxe0: reused, not created.
	env.SetDevice("ds", &proto.DeviceInfo{Name: "rxe0", Netdev: "eth1", GIDIndex: 1, ActiveMTU: 1024, IPv4: "10.0.0.1", Port: 1, Transport: "RoCE"})
	env.SetDevice("dc", &proto.DeviceInfo{Name: "rxe0", Netdev: "eth1", GIDIndex: 1, ActiveMTU: 1024, IPv4: "10.0.0.2", Port: 1, Transport: "RoCE"})
	pw := *w
	pw.Trials = planned
	op, _ := newOp(&pw)
	if err := op.Apply(context.Background(), env); err != nil {
		t.Fatal(err)
	}
	for name, argv := range map[string][]string{"server": sh.argv["wl.bw.server.s4096.r0"], "client": ch.argv["wl.bw.client.s4096.r0"]} {
		if len(argv) < 3 || argv[1] != "-d" || argv[2] != "rxe0" {
			t.Errorf("%s runs %q, want -d rxe0 (the device the host reported)", name, argv)
		}
	}
}
