package run

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
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
// workload (RDMA, tcp, exec, program) of the example labs is the argv its
// op runs, once the placeholders are filled with what the device-create
// steps reported (GID index, path MTU, server address), on plain and
// emulated hosts. The op runs the plan's trials (WorkloadPlan.Trials), not
// argv of its own: each planned argv is marked here with one more
// argument, which every run argv must end with. A program's build is the
// one the plan shows on each of its steps.
func TestPlanArgvIsRunArgv(t *testing.T) {
	files, _ := filepath.Glob("../../labs/*.hcl")
	files = append(files, "../../testdata/labs/valid/vars_locals_funcs.hcl", "../../testdata/labs/valid/for_each_map.hcl", "../../testdata/labs/valid/program.hcl")
	checked, built := 0, 0
	seen := map[string]bool{} // families checked
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
				if len(cli.Trials) == 0 {
					continue
				}
				oneHost := w.Host != nil
				// What the device-create steps report: a GID index, MTU
				// and address per end, as a run learns them, and a name
				// other than the lab's (the host had one on the netdev,
				// which rxe.ensure reuses under its own name).
				reported := func(d *lab.Device) string { return "r" + d.Device }
				info := func(d *lab.Device, gid int, addr string) *proto.DeviceInfo {
					di := &proto.DeviceInfo{Name: reported(d), GIDIndex: gid, ActiveMTU: 1024, IPv4: addr, Port: d.Port}
					if d.IWARP() {
						di.Transport = "iWARP"
					}
					return di
				}
				var env *steps.Env
				var hosts []*argvHost
				if oneHost {
					h := &argvHost{name: w.Host.Name}
					hosts = []*argvHost{h}
					env = &steps.Env{Hosts: map[string]steps.Host{h.name: h}, Emulation: emu}
				} else {
					sh, ch := &argvHost{name: w.ServerHost.Name}, &argvHost{name: w.ClientHost.Name}
					hosts = []*argvHost{sh, ch}
					env = &steps.Env{Hosts: map[string]steps.Host{sh.name: sh, ch.name: ch}, Emulation: emu}
				}
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
				fill := strings.NewReplacer(kinds.ServerGID.Name(), "1", kinds.ClientGID.Name(), cgid, kinds.PathMTU.Name(), "1024", kinds.ServerAddr.Name(), "10.9.0.1")
				// The plan shows the lab's device names; the run uses the
				// names the hosts reported, in the same places.
				var names []string
				if w.ServerDevice != nil {
					names = append(names, w.ServerDevice.Device, reported(w.ServerDevice))
				}
				if w.ClientDevice != nil {
					names = append(names, w.ClientDevice.Device, reported(w.ClientDevice))
				}
				devs := strings.NewReplacer(names...)
				plan := func(argv []string) string {
					out := make([]string, len(argv))
					for i, a := range argv {
						out[i] = fill.Replace(devs.Replace(a))
					}
					return strings.Join(out, " ")
				}
				sw := stepWorkload(wp)
				sw.Metrics = nil // this agent prints nothing to read them from
				if len(sw.Trials) != len(cli.Trials) {
					t.Fatalf("%s %s: the plan shows %d trials, its workload carries %d", f, w.Name, len(cli.Trials), len(sw.Trials))
				}
				// The mark: an argument only the plan's trials have.
				mark := func(i int) string { return fmt.Sprintf("plan-trial-%d", i) }
				sw.Trials = slices.Clone(sw.Trials)
				for i := range sw.Trials {
					u := &sw.Trials[i]
					if u.Server != nil {
						u.Server = append(slices.Clone(u.Server), mark(i))
					}
					u.Client = append(slices.Clone(u.Client), mark(i))
				}
				st, err := steps.NewWorkload(sw)
				if err != nil {
					t.Fatal(err)
				}
				if err := st.Apply(context.Background(), env); err != nil {
					t.Fatalf("%s %s: %v", f, w.Name, err)
				}
				var want, got []string
				// The plan hides sensitive values; what ran is compared as
				// the plan would show it.
				redact := lab.Redactor(l.Sensitive)
				for i := range cli.Trials {
					if !oneHost {
						want = append(want, plan(srv.Trials[i].Argv)+" "+mark(i))
					}
					want = append(want, plan(cli.Trials[i].Argv)+" "+mark(i))
				}
				// What the step ran, as the results record it.
				for _, run := range st.(steps.Outcomer).Outcome().Runs {
					if !oneHost {
						got = append(got, redact.Replace(strings.Join(run.Server.Argv, " ")))
					}
					got = append(got, redact.Replace(strings.Join(run.Client.Argv, " ")))
				}
				if d := cmp.Diff(want, got); d != "" {
					t.Errorf("%s %s (emulated %v): plan argv vs run argv (-plan +run):\n%s", f, w.Name, emulated, d)
				}
				// A program's build: what each of its hosts started is
				// the plan's build of that host's step.
				for _, h := range hosts {
					var ran []string
					for handle, argv := range h.argv {
						if strings.HasSuffix(handle, ".build") {
							ran = argv
						}
					}
					var planned []string
					for _, id := range wp.Steps {
						if s := p.Step(id); s.Host == h.name {
							planned = s.Build
						}
					}
					if d := cmp.Diff(planned, ran); d != "" {
						t.Errorf("%s %s host %s: plan build vs run build (-plan +run):\n%s", f, w.Name, h.name, d)
					}
					if ran != nil {
						built++
					}
				}
				if k, ok := kinds.KindOf(w.Tool); ok {
					seen[k.Desc().Name] = true
				}
				checked++
			}
		}
	}
	for _, fam := range []string{"perftest", "pingpong", "rping", "tcp", "exec", "program"} {
		if !seen[fam] {
			t.Errorf("no %s workload with a resolved argv in the labs checked", fam)
		}
	}
	if built == 0 {
		t.Error("no program build checked")
	}
	t.Logf("%d workloads checked, %d builds", checked, built)
}
