package steps

import (
	"strconv"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/kinds"
)

// ibv_{rc,uc,ud,srq}_pingpong from rdma-core's ibverbs-utils.

func NewPingpong(w *Workload) (Step, error) {
	return newRDMAPair(w, func(_ *Env, r *pairRun, e rdmaEnd) {
		r.Server.Ready = &proto.Ready{TCPListen: e.Port}
		r.Server.Argv = PingpongArgv(w, PerftestEnd{Device: e.Server.Name, GIDIndex: e.Server.GIDIndex}, e.MTU, e.Port, e.Size, "")
		r.Client.Argv = PingpongArgv(w, PerftestEnd{Device: e.Client.Name, GIDIndex: e.Client.GIDIndex}, e.MTU, e.Port, e.Size, e.Server.IPv4)
	}), nil
}

// PingpongArgv builds one side's ibv_*_pingpong command; serverAddr is ""
// for the server side.
func PingpongArgv(w *Workload, end PerftestEnd, mtu, port int, size int64, serverAddr string) []string {
	argv := []string{w.Tool,
		"-d", end.Device,
		"-g", strconv.Itoa(end.GIDIndex),
		"-p", strconv.Itoa(port),
	}
	// The UD pingpong has no -m: its messages must fit the path MTU instead.
	if t, _ := kinds.Lookup(w.Tool); mtu > 0 && t.FixedTransport != "UD" {
		argv = append(argv, "-m", strconv.Itoa(mtu))
	}
	if size > 0 {
		argv = append(argv, "-s", strconv.FormatInt(size, 10))
	}
	if w.Iterations > 0 {
		argv = append(argv, "-n", strconv.FormatInt(w.Iterations, 10))
	}
	argv = append(argv, w.Args...)
	if serverAddr != "" {
		argv = append(argv, serverAddr)
	}
	return argv
}
