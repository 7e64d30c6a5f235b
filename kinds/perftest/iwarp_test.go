package perftest

import (
	"slices"
	"testing"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/kinds"
	"github.com/rlab-dev/rlab/steps"
)

// On iWARP, perftest connects through the RDMA CM: the descriptor's flag
// (-R) once, even when the lab's args have it; an rdma block's port goes
// as -i; the server is ready when its rdma_cm id listens.
func TestPerftestOverIWARP(t *testing.T) {
	count := func(argv []string, s string) int {
		n := 0
		for _, a := range argv {
			if a == s {
				n++
			}
		}
		return n
	}
	for _, tc := range []struct {
		name   string
		args   []string
		end    kinds.End
		wantR  int
		wantI  bool
		ready  proto.Ready
		cmSide bool
	}{
		{"rxe", nil, kinds.End{Device: "rxe_eth1", GID: "1", Port: 1}, 0, false, proto.Ready{TCPListen: 20010}, false},
		{"siw", nil, kinds.End{Device: "siw_eth1", GID: "0", Port: 1, Transport: "iWARP"}, 1, false, proto.Ready{RDMACMListen: 20010}, true},
		{"siw, -R in args", []string{"-R"}, kinds.End{Device: "siw_eth1", GID: "0", Port: 1, Transport: "iWARP"}, 1, false, proto.Ready{RDMACMListen: 20010}, true},
		{"hardware port 2", nil, kinds.End{Device: "mlx5_0", GID: "3", Port: 2}, 0, true, proto.Ready{TCPListen: 20010}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &steps.Workload{Workload: kinds.Workload{Tool: "ib_write_bw", Options: kinds.Options{Args: tc.args, Iterations: 10}}}
			_, argv := Kind{}.Argv(kinds.ArgvIn{W: &w.Workload, Trial: kinds.Trial{Size: 65536}, Port: 20010, Server: tc.end, Client: tc.end, MTU: "1024", Addr: "10.0.0.1"})
			if got := count(argv, "-R"); got != tc.wantR {
				t.Errorf("%q: %d -R, want %d", argv, got, tc.wantR)
			}
			if i := slices.Index(argv, "-i"); (i >= 0) != tc.wantI || (tc.wantI && argv[i+1] != "2") {
				t.Errorf("%q: -i wanted %v", argv, tc.wantI)
			}
			if got := perftestReady(w, 20010, tc.cmSide); *got != tc.ready {
				t.Errorf("ready %+v, want %+v", *got, tc.ready)
			}
			// The run's Ready: an iWARP server also waits for siw's TCP
			// socket (IWARP); rxe and hardware never do.
			d := &proto.DeviceInfo{Transport: tc.end.Transport}
			want := tc.ready
			want.IWARP = tc.end.Transport == "iWARP"
			if got := serverReady(w, steps.RDMAEnd{Server: d, Client: d, Port: 20010}); *got != want {
				t.Errorf("run ready %+v, want %+v", *got, want)
			}
		})
	}
}
