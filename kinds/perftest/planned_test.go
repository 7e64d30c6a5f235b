package perftest

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc"
	"github.com/rlab-dev/rlab/kinds"
	"github.com/rlab-dev/rlab/steps"
)

// argvHost records the argv of every process started on it; each ends at
// once.
type argvHost struct {
	name string
	mu   sync.Mutex
	argv map[string][]string
}

func (h *argvHost) Name() string { return h.name }

func (h *argvHost) Send(ctx context.Context, r *rpc.Request) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if p, res, ok := rpc.Match(r, rpc.ProcStart); ok {
		if h.argv == nil {
			h.argv = map[string][]string{}
		}
		h.argv[p.Handle] = p.Argv
		*res = proto.ProcStarted{Handle: p.Handle, PID: 1}
	} else if p, res, ok := rpc.Match(r, rpc.ProcWait); ok {
		*res = proto.ProcResult{Handle: p.Handle, Argv: h.argv[p.Handle]}
	} else if p, res, ok := rpc.Match(r, rpc.ProcStop); ok {
		*res = proto.ProcResult{Handle: p.Handle, Argv: h.argv[p.Handle]}
	}
	return nil
}

// TestRunsPlannedTrials: the op runs the plan's trials (Workload.Trials)
// with the placeholders filled, and adds only what the plan could not
// know: -R when the run finds a device iWARP (an rdma block), the raised
// QP timeout when an end's facts say it is emulated, --out_json when the
// client's perftest has it (before the server's address). An MTU that
// no device reported drops -m, as the op did before it ran the plan's
// argv (perftest picks the port's own).
func TestRunsPlannedTrials(t *testing.T) {
	w := &steps.Workload{Workload: kinds.Workload{Name: "bw", Slug: "bw", Tool: "ib_write_bw", Options: kinds.Options{Iterations: 10, Sizes: []int64{4096}}},
		ServerHost: "s", ClientHost: "c", ServerDevice: "ds", ClientDevice: "dc"}
	// As engine/plan resolves them: everything the run learns (the
	// devices' names too) placeholders.
	in := kinds.ArgvIn{W: &w.Workload, Server: kinds.End{Device: "mlx_s", GID: kinds.ServerGID, Port: 1},
		Client: kinds.End{Device: "mlx_c", GID: kinds.ClientGID, Port: 1}, MTU: kinds.PathMTU, Addr: kinds.ServerAddr}
	planned, ok := kinds.PlanTrials(in, 0, w.Sizes)
	if !ok || len(planned) != 1 {
		t.Fatalf("planned %v, %v", planned, ok)
	}
	filled := func(argv []string) []string {
		out, err := kinds.Fill("bw", argv, kinds.Values{kinds.ServerGID: "1", kinds.ClientGID: "2", kinds.PathMTU: "1024", kinds.ServerAddr: "10.0.0.1", kinds.ServerDev: "mlx_s", kinds.ClientDev: "mlx_c"})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	srvWant, cliWant := filled(planned[0].Server), filled(planned[0].Client)
	n := len(cliWant) - 1
	withoutMTU := func(argv []string) []string {
		i := slices.Index(argv, "-m")
		if i < 0 || i+1 >= len(argv) || argv[i+1] != "1024" {
			t.Fatalf("no -m 1024 in %q", argv)
		}
		return slices.Concat(argv[:i], argv[i+2:])
	}
	for _, tc := range []struct {
		name          string
		transport     string
		facts         proto.Facts
		mtu           int
		server, cli   []string
		wantErr       string
		wantProcesses int
	}{
		{"as planned", "RoCE", proto.Facts{}, 1024, srvWant, cliWant, "", 2},
		{"iWARP found at run time", "iWARP", proto.Facts{}, 1024,
			append(slices.Clone(srvWant), "-R"), slices.Concat(cliWant[:n], []string{"-R"}, cliWant[n:]), "", 2},
		{"emulated by its facts", "RoCE", proto.Facts{Platform: proto.Platform{Virtualization: steps.EmulatedVirt}}, 1024,
			append(slices.Clone(srvWant), "-u", "18"), slices.Concat(cliWant[:n], []string{"-u", "18"}, cliWant[n:]), "", 2},
		{"json report", "RoCE", proto.Facts{PerftestJSON: true, WorkDir: "/w"}, 1024,
			srvWant, slices.Concat(cliWant[:n], []string{"--out_json", "--out_json_file=/w/wl.bw.client.s4096.r0.json"}, cliWant[n:]), "", 2},
		{"no MTU found: run without -m, as before the plan's argv", "RoCE", proto.Facts{}, 0, withoutMTU(srvWant), withoutMTU(cliWant), "", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sh, ch := &argvHost{name: "s"}, &argvHost{name: "c"}
			env := &steps.Env{Hosts: map[string]steps.Host{"s": sh, "c": ch}, Facts: map[string]*proto.Facts{"c": &tc.facts}}
			env.SetDevice("ds", &proto.DeviceInfo{Name: "mlx_s", GIDIndex: 1, ActiveMTU: tc.mtu, IPv4: "10.0.0.1", Port: 1, Transport: tc.transport})
			env.SetDevice("dc", &proto.DeviceInfo{Name: "mlx_c", GIDIndex: 2, ActiveMTU: tc.mtu, IPv4: "10.0.0.2", Port: 1, Transport: tc.transport})
			pw := *w
			pw.Trials = planned
			op, err := newOp(&pw)
			if err != nil {
				t.Fatal(err)
			}
			err = op.Apply(context.Background(), env)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if got := len(sh.argv) + len(ch.argv); got != tc.wantProcesses {
				t.Fatalf("%d processes started, want %d", got, tc.wantProcesses)
			}
			if tc.wantProcesses == 0 {
				return
			}
			if d := cmp.Diff(tc.server, sh.argv["wl.bw.server.s4096.r0"]); d != "" {
				t.Errorf("server (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.cli, ch.argv["wl.bw.client.s4096.r0"]); d != "" {
				t.Errorf("client (-want +got):\n%s", d)
			}
		})
	}
}
