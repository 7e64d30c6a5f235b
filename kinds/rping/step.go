package rping

import (
	"strconv"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/steps"
)

// rping from rdmacm-utils: an RDMA CM connection and ping-pongs of RDMA
// READ/WRITE. The server is ready once its rdma_cm id listens on the port.

// rpingDefaultCount bounds rping when the lab gives no iterations: an
// unbounded rping never ends.
const rpingDefaultCount = 10

func newStep(w *steps.Workload) (steps.Step, error) {
	return steps.NewRDMAPair(w, func(_ *steps.Env, r *steps.PairRun, e steps.RDMAEnd) {
		r.Server.Ready = &proto.Ready{RDMACMListen: e.Port}
		r.Server.Argv = Argv(w, "-s", e.Server.IPv4, e.Port, e.Size)
		r.Client.Argv = Argv(w, "-c", e.Server.IPv4, e.Port, e.Size)
	}), nil
}

// Argv builds one side's rping command: mode is "-s" (server) or "-c"
// (client); both name the server's address.
func Argv(w *steps.Workload, mode, serverAddr string, port int, size int64) []string {
	count := w.Iterations
	if count <= 0 {
		count = rpingDefaultCount
	}
	argv := []string{w.Tool, mode, "-a", serverAddr, "-p", strconv.Itoa(port), "-C", strconv.FormatInt(count, 10), "-v"}
	if size > 0 {
		argv = append(argv, "-S", strconv.FormatInt(size, 10))
	}
	return append(argv, w.Args...)
}
