package run

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc"
	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/engine/plan"
	"github.com/rlab-dev/rlab/engine/preflight"
)

// TestFactsRequestFollowsPlan: a run asks each host about the packages of
// the program blocks its plan runs there, not every block of the lab: an
// --only run asks only for the selected workload's, a whole run for all
// the host's workloads', and a host whose workloads build nothing for
// none.
func TestFactsRequestFollowsPlan(t *testing.T) {
	l := programLab(t, twoHosts+`
program "pingpair" {
  source   = "pingpair"
  build    = ["make", "server", "client"]
  packages = { debian = ["make", "gcc"], rhel = ["gcc", "make"] }
}
program "broken" {
  source   = "broken"
  build    = ["gcc", "-o", "broken", "broken.c"]
  packages = { debian = ["libc6-dev"], suse = ["glibc-devel"] }
}
workload "pp" {
  tool    = "program"
  program = program.pingpair
  host    = host.a
  command = ["./client", "localhost", "${self.port}"]
}
workload "br" {
  tool    = "program"
  program = program.broken
  host    = host.a
  command = ["./broken"]
}
workload "up" {
  tool    = "exec"
  host    = host.b
  command = ["cat", "/proc/uptime"]
}
`)
	tests := []struct {
		only []string
		want map[string][]string // host: the packages asked about
	}{
		{nil, map[string][]string{"a": {"gcc", "glibc-devel", "libc6-dev", "make"}, "b": nil}},
		{[]string{"pp"}, map[string][]string{"a": {"gcc", "make"}}},
		{[]string{"br"}, map[string][]string{"a": {"glibc-devel", "libc6-dev"}}},
		{[]string{"up"}, map[string][]string{"b": nil}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("only %v", tt.only), func(t *testing.T) {
			bed := newPipeBed(t)
			var mu sync.Mutex
			got := map[string][]string{}
			conn := ConnectFunc(func(ctx context.Context, tg Target, runID string) (Host, error) {
				h, err := bed.Connect(ctx, tg, runID)
				if err != nil {
					return nil, err
				}
				return &factsSpy{Host: h, note: func(p proto.FactsParams) {
					mu.Lock()
					defer mu.Unlock()
					got[tg.Name] = p.Packages
				}}, nil
			})
			// A preflight problem ends the run after the facts: nothing
			// is built.
			stop := func(*lab.Lab, map[string]*proto.Facts) []preflight.Problem {
				return []preflight.Problem{{What: "test: stop after facts"}}
			}
			runPlanned(context.Background(), t, l, plan.Options{Only: tt.only}, Options{Connector: conn, Out: filepath.Join(t.TempDir(), "run"), NoReport: true, Preflight: stop})
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("--only %v: packages asked per host (-want +got):\n%s", tt.only, d)
			}
		})
	}
}

// factsSpy passes every call through and shows it each facts request.
type factsSpy struct {
	Host
	note func(proto.FactsParams)
}

func (s *factsSpy) Send(ctx context.Context, req *rpc.Request) error {
	if p, ok := req.Params().(proto.FactsParams); ok {
		s.note(p)
	}
	return s.Host.Send(ctx, req)
}
