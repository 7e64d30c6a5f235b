package run

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc"
	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/engine/plan"
	"github.com/rlab-dev/rlab/kinds"
	"github.com/rlab-dev/rlab/steps"
)

// argvHost is an agent whose processes and tcp transfers end at once.
type argvHost struct {
	name string
	mu   sync.Mutex
	argv map[string][]string // by handle, as the agent echoes it
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
	} else if p, res, ok := rpc.Match(r, rpc.TCPServe); ok {
		*res = proto.TCPServing{Port: p.Port}
	} else if p, res, ok := rpc.Match(r, rpc.TCPSend); ok {
		*res = proto.TCPResult{Bytes: p.Bytes, Gbps: 1}
	} else if _, res, ok := rpc.Match(r, rpc.TCPWait); ok {
		*res = proto.TCPResult{}
	}
	return nil
}

// TestPlanArgvIsRunArgv: the argv a plan shows for each trial of every
// two-sided workload (RDMA and tcp) of the example labs is the argv its step runs,
// once the placeholders are filled with what the device-create steps
// reported (GID index, path MTU, server address), on plain and emulated
// hosts: both come from the family's one argv hook (kinds.Argver).
func TestPlanArgvIsRunArgv(t *testing.T) {
	files, _ := filepath.Glob("../../labs/*.hcl")
	files = append(files, "../../testdata/labs/valid/vars_locals_funcs.hcl", "../../testdata/labs/valid/for_each_map.hcl")
	checked := 0
	for _, f := range files {
		l, diags := lab.Load([]string{f}, lab.LoadOptions{})
		if diags.HasErrors() {
			t.Fatalf("%s: %v", f, diags)
		}
		for _, emulated := range []bool{false, true} {
			var emu map[string]string
			if emulated {
				emu = map[string]string{}
				for _, h := range l.Hosts {
					emu[h.Name] = "host " + h.Name + " under TCG"
				}
			}
			p, err := plan.NewWith(l, plan.Options{Emulated: emu})
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			for _, wp := range p.Workloads {
				w := wp.Workload
				srv, cli := p.Step(wp.Steps[0]), p.Step(wp.Steps[len(wp.Steps)-1])
				if len(srv.Trials) == 0 {
					continue
				}
				// What the device-create steps report: a GID index, MTU
				// and address per end, as a run learns them.
				info := func(d *lab.Device, gid int, addr string) *proto.DeviceInfo {
					di := &proto.DeviceInfo{Name: d.Device, GIDIndex: gid, ActiveMTU: 1024, IPv4: addr, Port: d.Port}
					if d.IWARP() {
						di.Transport = "iWARP"
					}
					return di
				}
				sh, ch := &argvHost{name: w.ServerHost.Name}, &argvHost{name: w.ClientHost.Name}
				env := &steps.Env{Hosts: map[string]steps.Host{sh.name: sh, ch.name: ch}, Emulation: emu}
				switch {
				case w.ServerDevice != nil:
					env.SetDevice(w.ServerDevice.Name, info(w.ServerDevice, 1, "10.9.0.1"))
					if w.ClientDevice != w.ServerDevice {
						env.SetDevice(w.ClientDevice.Name, info(w.ClientDevice, 3, "10.9.0.2"))
					}
				case wp.Dial != nil && wp.Dial.Device != nil: // tcp dials this rxe's netdev
					env.SetDevice(wp.Dial.Device.Name, info(wp.Dial.Device, 1, "10.9.0.1"))
				}
				cgid := "3"
				if w.ClientDevice == w.ServerDevice {
					cgid = "1"
				}
				fill := strings.NewReplacer(string(kinds.ServerGID), "1", string(kinds.ClientGID), cgid, string(kinds.PathMTU), "1024", string(kinds.ServerAddr), "10.9.0.1")
				st, err := steps.NewWorkload(stepWorkload(wp))
				if err != nil {
					t.Fatal(err)
				}
				if err := st.Apply(context.Background(), env); err != nil {
					t.Fatalf("%s %s: %v", f, w.Name, err)
				}
				var want, got []string
				for i := range srv.Trials {
					want = append(want, fill.Replace(strings.Join(srv.Trials[i].Argv, " ")), fill.Replace(strings.Join(cli.Trials[i].Argv, " ")))
				}
				// What the step ran, as the results record it.
				for _, run := range st.(steps.Outcomer).Outcome().Runs {
					got = append(got, strings.Join(run.Server.Argv, " "), strings.Join(run.Client.Argv, " "))
				}
				if d := cmp.Diff(want, got); d != "" {
					t.Errorf("%s %s (emulated %v): plan argv vs run argv (-plan +run):\n%s", f, w.Name, emulated, d)
				}
				checked++
			}
		}
	}
	if checked == 0 {
		t.Fatal("no workload with a resolved argv in the example labs")
	}
	t.Logf("%d workloads checked", checked)
}
