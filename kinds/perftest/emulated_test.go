package perftest

import (
	"context"
	"slices"
	"testing"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/kinds"
	"github.com/rlab-dev/rlab/steps"
)

// TestPlannedEmulatedRunDecides: the plan raises the QP timeout (-u 18)
// when it takes an end for an emulated guest; the run's facts decide, as
// before the op ran the plan's argv: an end found not emulated runs
// without it, one found emulated with it once, and a lab's own -u stays.
func TestPlannedEmulatedRunDecides(t *testing.T) {
	emulated := proto.Facts{Platform: proto.Platform{Virtualization: steps.EmulatedVirt}}
	for _, tc := range []struct {
		name    string
		args    []string
		facts   proto.Facts
		wantU   []string // the -u values each side runs with
		planned bool     // the planned argv has the raised -u
	}{
		{"not emulated at run time", nil, proto.Facts{}, nil, true},
		{"emulated at run time", nil, emulated, []string{"18"}, true},
		{"the lab's own timeout", []string{"-u", "14"}, proto.Facts{}, []string{"14"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &steps.Workload{Workload: kinds.Workload{Name: "bw", Slug: "bw", Tool: "ib_write_bw", Options: kinds.Options{Args: tc.args, Iterations: 10, Sizes: []int64{4096}}},
				ServerHost: "s", ClientHost: "c", ServerDevice: "ds", ClientDevice: "dc"}
			in := kinds.ArgvIn{W: &w.Workload, Server: kinds.End{Device: "rxe_s", GID: kinds.ServerGID, Port: 1},
				Client: kinds.End{Device: "rxe_c", GID: kinds.ClientGID, Port: 1}, MTU: kinds.PathMTU, Addr: kinds.ServerAddr, Emulated: true}
			planned, _ := kinds.PlanTrials(in, 0, w.Sizes)
			if got := slices.Contains(planned[0].Client, "18"); got != tc.planned {
				t.Fatalf("planned client %q: raised -u %v, want %v", planned[0].Client, got, tc.planned)
			}
			sh, ch := &argvHost{name: "s"}, &argvHost{name: "c"}
			env := &steps.Env{Hosts: map[string]steps.Host{"s": sh, "c": ch}, Facts: map[string]*proto.Facts{"s": &tc.facts, "c": &tc.facts}}
			env.SetDevice("ds", &proto.DeviceInfo{Name: "rxe_s", GIDIndex: 1, ActiveMTU: 1024, IPv4: "10.0.0.1", Port: 1, Transport: "RoCE"})
			env.SetDevice("dc", &proto.DeviceInfo{Name: "rxe_c", GIDIndex: 1, ActiveMTU: 1024, IPv4: "10.0.0.2", Port: 1, Transport: "RoCE"})
			pw := *w
			pw.Trials = planned
			op, _ := newOp(&pw)
			if err := op.Apply(context.Background(), env); err != nil {
				t.Fatal(err)
			}
			for name, argv := range map[string][]string{"server": sh.argv["wl.bw.server.s4096.r0"], "client": ch.argv["wl.bw.client.s4096.r0"]} {
				var us []string
				for i, a := range argv {
					if a == "-u" && i+1 < len(argv) {
						us = append(us, argv[i+1])
					}
				}
				if !slices.Equal(us, tc.wantU) {
					t.Errorf("%s runs %q: -u %q, want %q", name, argv, us, tc.wantU)
				}
			}
		})
	}
}
