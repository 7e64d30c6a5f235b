package steps

import (
	"path"
	"strconv"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/tooldesc"
)

// Perftest tools: ib_{write,read,send,atomic}_{bw,lat}.

func newPerftest(w *Workload) (Step, error) {
	return newRDMAPair(w, func(env *Env, r *pairRun, e rdmaEnd) {
		r.Server.Ready = PerftestReady(w, e.Port)
		cf := env.facts(w.ClientHost)
		if cf.PerftestJSON {
			r.JSONRel = r.Client.Handle + ".json"
			r.JSONFile = r.JSONRel
			if cf.WorkDir != "" {
				r.JSONFile = path.Join(cf.WorkDir, r.JSONRel)
			}
		}
		r.Server.Argv = PerftestArgv(w, PerftestEnd{Device: e.Server.Name, GIDIndex: e.Server.GIDIndex}, e.MTU, e.Port, e.Size, "", "")
		r.Client.Argv = PerftestArgv(w, PerftestEnd{Device: e.Client.Name, GIDIndex: e.Client.GIDIndex}, e.MTU, e.Port, e.Size, e.Server.IPv4, r.JSONFile)
	}), nil
}

// PerftestEnd is one side's device as perftest is told it.
type PerftestEnd struct {
	Device   string
	GIDIndex int
}

// PerftestArgv builds one side's perftest command. serverAddr is "" for the
// server side; jsonFile, when set, adds --out_json (perftest ≥ 4.5-0.20).
func PerftestArgv(w *Workload, end PerftestEnd, mtu, port int, size int64, serverAddr, jsonFile string) []string {
	argv := []string{w.Tool,
		"-d", end.Device,
		"-x", strconv.Itoa(end.GIDIndex),
		"-p", strconv.Itoa(port),
	}
	if mtu > 0 {
		argv = append(argv, "-m", strconv.Itoa(mtu))
	}
	t, _ := tooldesc.Lookup(w.Tool)
	if t.Family == tooldesc.PerftestBW {
		argv = append(argv, "--report_gbits")
	}
	// Atomic tests have a fixed 8-byte message; perftest rejects -s there.
	if size > 0 && t.FixedSize == 0 {
		argv = append(argv, "-s", strconv.FormatInt(size, 10))
	}
	if w.Duration > 0 {
		argv = append(argv, "-D", strconv.Itoa(int((w.Duration+999e6)/1e9)))
	} else if w.Iterations > 0 {
		argv = append(argv, "-n", strconv.FormatInt(w.Iterations, 10))
	}
	if w.QPs > 1 {
		argv = append(argv, "-q", strconv.Itoa(w.QPs))
	}
	if w.Transport != "" {
		argv = append(argv, "-c", w.Transport)
	}
	argv = append(argv, w.Args...)
	if jsonFile != "" {
		argv = append(argv, "--out_json", "--out_json_file="+jsonFile)
	}
	if serverAddr != "" {
		argv = append(argv, serverAddr)
	}
	return argv
}

// PerftestReady says how the server side is known to be ready: it listens
// on its TCP port for the out-of-band exchange, or, with -R/--rdma_cm in the
// extra args, its rdma_cm id listens on that port instead (it opens no TCP
// socket then).
func PerftestReady(w *Workload, port int) *proto.Ready {
	for _, a := range w.Args {
		if a == "-R" || a == "--rdma_cm" {
			return &proto.Ready{RDMACMListen: port}
		}
	}
	return &proto.Ready{TCPListen: port}
}
