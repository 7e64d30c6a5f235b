package steps

import (
	"fmt"
	"strconv"

	"github.com/rlab-dev/rlab/agent/proto"
)

// rping from rdmacm-utils: an RDMA CM connection and ping-pongs of RDMA
// READ/WRITE. The server is ready once its rdma_cm id listens on the port.

// rpingDefaultCount bounds rping when the lab gives no iterations: an
// unbounded rping never ends.
const rpingDefaultCount = 10

func newRping(w *Workload) (Step, error) {
	s := &pairWorkload{w: w, desc: fmt.Sprintf("%s %s: rxe %s (server) <- rxe %s (client)", w.Tool, w.Name, w.ServerRXE, w.ClientRXE)}
	s.build = func(env *Env, size int64, rep, n int) (*pairRun, error) {
		srv, cli, mtu, err := rdmaEnds(env, w)
		if err != nil {
			return nil, err
		}
		port := PortFor(w, n)
		r := &pairRun{Meta: rdmaMeta(env, w, srv, cli, mtu, size, rep)}
		r.Server = procSpec{Host: w.ServerHost, Handle: handle(w, "server", size, rep), Role: "server",
			Ready: &proto.Ready{RDMACMListen: port},
			Argv:  RpingArgv(w, "-s", srv.IPv4, port, size)}
		r.Client = procSpec{Host: w.ClientHost, Handle: handle(w, "client", size, rep), Role: "client",
			Argv: RpingArgv(w, "-c", srv.IPv4, port, size)}
		return r, nil
	}
	return s, nil
}

// RpingArgv builds one side's rping command: mode is "-s" (server) or "-c"
// (client); both name the server's address.
func RpingArgv(w *Workload, mode, serverAddr string, port int, size int64) []string {
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
