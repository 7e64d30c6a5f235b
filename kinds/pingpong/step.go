package pingpong

import (
	"strconv"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/kinds"
	"github.com/rlab-dev/rlab/steps"
)

// ibv_{rc,uc,ud,srq}_pingpong from rdma-core's ibverbs-utils.

func newStep(w *steps.Workload) (steps.Step, error) {
	return steps.NewRDMAPair(w, func(env *steps.Env, r *steps.PairRun, e steps.RDMAEnd) {
		// No option raises its QP timeout (kinds/qptimeout.go): a failure
		// with retries exhausted on an emulated end says so.
		r.Emulated = steps.EmulatedEnd(env, w)
		r.Server.Ready = &proto.Ready{TCPListen: e.Port}
		r.Server.Argv = Argv(w, steps.DeviceEnd{Device: e.Server.Name, GIDIndex: e.Server.GIDIndex}, e.MTU, e.Port, e.Size, "")
		r.Client.Argv = Argv(w, steps.DeviceEnd{Device: e.Client.Name, GIDIndex: e.Client.GIDIndex}, e.MTU, e.Port, e.Size, e.Server.IPv4)
	}), nil
}

// Argv builds one side's ibv_*_pingpong command; serverAddr is ""
// for the server side.
func Argv(w *steps.Workload, end steps.DeviceEnd, mtu, port int, size int64, serverAddr string) []string {
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
