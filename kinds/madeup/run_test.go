package madeup_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc"
	"github.com/rlab-dev/rlab/agent/rpc/rpctest"
	"github.com/rlab-dev/rlab/agent/server"
	"github.com/rlab-dev/rlab/engine/toolout"
	"github.com/rlab-dev/rlab/kinds"
	"github.com/rlab-dev/rlab/kinds/kindstest"
	"github.com/rlab-dev/rlab/kinds/madeup"
	"github.com/rlab-dev/rlab/steps"
)

// TestMain registers the made-up family by its one line, as the test
// packages that show it do (madeup_test.go counts them).
func TestMain(m *testing.M) {
	kinds.Register(madeup.Kind{})
	// Its own block of ports: another test binary may run workloads on
	// this machine's loopback at the same time.
	if err := kindstest.UseFreePorts(); err != nil {
		panic(err)
	}
	os.Exit(m.Run())
}

// agentHost is an in-process agent as a step's host.
type agentHost struct {
	name string
	*rpc.Client
}

func (h agentHost) Name() string { return h.name }

// TestMadeUpRunsOnAgents: each made-up workload, built by its registered
// step (steps.NewWorkload) and parsed by its registered parser
// (toolout.ParseOutput), runs on two in-process agents and records its
// metrics, in their units, at each size, beside the ones every workload
// records: made_stream as every RDMA tool's pair does, made_pipe on its
// client host.
func TestMadeUpRunsOnAgents(t *testing.T) {
	root := t.TempDir()
	env := &steps.Env{Hosts: map[string]steps.Host{}, Facts: map[string]*proto.Facts{}, Parse: toolout.ParseOutput}
	for _, name := range []string{"server", "client"} {
		a := rpctest.Start(t, server.Options{WorkDir: filepath.Join(root, name), Version: "test"}, rpc.Options{Host: name}, nil)
		env.Hosts[name] = agentHost{name, a.Client}
		env.Facts[name] = &proto.Facts{WorkDir: a.Hello.WorkDir}
	}
	env.SetDevice("rxe.s", &proto.DeviceInfo{Name: "rxe_eth1", GIDIndex: 1, IPv4: "127.0.0.1", ActiveMTU: 4096})
	env.SetDevice("rxe.c", &proto.DeviceInfo{Name: "rxe0", GIDIndex: 1, IPv4: "127.0.0.1", ActiveMTU: 1024})
	for i, tc := range []struct {
		tool    string
		devices [2]string
		want    []string
	}{
		{madeup.Tool, [2]string{"rxe.s", "rxe.c"}, []string{"made_gbps 4096 0.25 Gb/s", "made_rtt 4096 5.25 usec", "made_gbps 65536 4 Gb/s", "made_rtt 65536 9 usec"}},
		{madeup.PipeTool, [2]string{}, []string{"made_pipe_gbps 4096 0.25 Gb/s", "made_pipe_gbps 65536 4 Gb/s"}},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			name := fmt.Sprint("made", i)
			w := steps.Workload{Workload: kinds.Workload{Name: name, Slug: name, Index: i, Tool: tc.tool, Options: kinds.Options{Sizes: []int64{4096, 65536}}},
				ServerHost: "server", ClientHost: "client", ServerDevice: tc.devices[0], ClientDevice: tc.devices[1]}
			w.Trials, _ = kinds.PlanTrials(kinds.ArgvIn{W: &w.Workload}, 0, w.Sizes) // as engine/plan resolves them
			st, err := steps.NewWorkload(&w)
			if err != nil {
				t.Fatal(err)
			}
			if err := st.Apply(context.Background(), env); err != nil {
				t.Fatalf("apply: %v", err)
			}
			o := st.(steps.Outcomer).Outcome()
			if o.Status != steps.StatusOK || len(o.Runs) != 2 {
				t.Fatalf("status %q, %d runs, want ok and 2", o.Status, len(o.Runs))
			}
			var got []string
			for _, s := range o.Samples {
				if s.Meta.Workload != name || s.Meta.Tool != tc.tool || strings.Join(s.Meta.Hosts, ",") != "server,client" {
					t.Errorf("sample %+v: metadata incomplete", s)
				}
				if !kinds.IsCommon(s.Metric) {
					got = append(got, fmt.Sprintf("%s %d %g %s", s.Metric, s.Meta.Size, s.Value, s.Unit))
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("samples (-want +got):\n%s", diff)
			}
			if len(o.Samples) != len(tc.want)+2*len(kinds.Common) {
				t.Errorf("%d samples, want its %d and the common ones at each size", len(o.Samples), len(tc.want))
			}
		})
	}
}
