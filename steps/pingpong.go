package steps

import (
	"fmt"
	"strconv"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/tooldesc"
)

// ibv_{rc,uc,ud,srq}_pingpong from rdma-core's ibverbs-utils.

func newPingpong(w *Workload) (Step, error) {
	s := &pairWorkload{w: w, desc: fmt.Sprintf("%s %s: rxe %s (server) <- rxe %s (client)", w.Tool, w.Name, w.ServerRXE, w.ClientRXE)}
	s.build = func(env *Env, size int64, rep, n int) (*pairRun, error) {
		srv, cli, mtu, err := rdmaEnds(env, w)
		if err != nil {
			return nil, err
		}
		port := PortFor(w, n)
		r := &pairRun{Meta: rdmaMeta(env, w, srv, cli, mtu, size, rep)}
		r.Server = procSpec{Host: w.ServerHost, Handle: handle(w, "server", size, rep), Role: "server",
			Ready: &proto.Ready{TCPListen: port},
			Argv:  PingpongArgv(w, PerftestEnd{Device: srv.Name, GIDIndex: srv.GIDIndex}, mtu, port, size, "")}
		r.Client = procSpec{Host: w.ClientHost, Handle: handle(w, "client", size, rep), Role: "client",
			Argv: PingpongArgv(w, PerftestEnd{Device: cli.Name, GIDIndex: cli.GIDIndex}, mtu, port, size, srv.IPv4)}
		return r, nil
	}
	return s, nil
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
	if t, _ := tooldesc.Lookup(w.Tool); mtu > 0 && t.FixedTransport != "UD" {
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
