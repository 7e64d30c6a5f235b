package pingpong

import (
	"strconv"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/kinds"
	"github.com/rlab-dev/rlab/steps"
)

// ibv_{rc,uc,ud,srq}_pingpong from rdma-core's ibverbs-utils.

func newOp(w *steps.Workload) (steps.Op, error) {
	return steps.NewRDMAPair(w, func(env *steps.Env, r *steps.PairRun, e steps.RDMAEnd) {
		// No option raises its QP timeout (kinds/qptimeout.go): a failure
		// with retries exhausted on an emulated end says so.
		r.Emulated = steps.EmulatedEnd(env, w)
		r.Server.Ready = &proto.Ready{TCPListen: e.Port}
	}), nil
}

// Argv is the pingpong argv hook (kinds.Argver): both sides' commands
// for one trial.
func (Kind) Argv(in kinds.ArgvIn) (server, client []string) {
	return side(in, in.Server, ""), side(in, in.Client, in.Addr)
}

// side builds one side's ibv_*_pingpong command; serverAddr is "" for
// the server side.
func side(in kinds.ArgvIn, end kinds.End, serverAddr kinds.Value) []string {
	w := in.W
	argv := []string{w.Tool,
		"-d", end.Device,
		"-g", string(end.GID),
		"-p", strconv.Itoa(in.Port),
	}
	// The UD pingpong has no -m: its messages must fit the path MTU instead.
	if t, _ := kinds.Lookup(w.Tool); in.MTU != "" && t.FixedTransport != "UD" {
		argv = append(argv, "-m", string(in.MTU))
	}
	if size := in.Trial.Size; size > 0 {
		argv = append(argv, "-s", strconv.FormatInt(size, 10))
	}
	if w.Iterations > 0 {
		argv = append(argv, "-n", strconv.FormatInt(w.Iterations, 10))
	}
	argv = append(argv, w.Args...)
	if serverAddr != "" {
		argv = append(argv, string(serverAddr))
	}
	return argv
}
