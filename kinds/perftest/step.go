package perftest

import (
	"fmt"
	"path"
	"strconv"
	"strings"
	"sync"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/kinds"
	"github.com/rlab-dev/rlab/steps"
)

// Perftest tools: ib_{write,read,send,atomic}_{bw,lat}.

func newStep(w *steps.Workload) (steps.Step, error) {
	var once sync.Once // the raised QP timeout is said once per workload
	return steps.NewRDMAPair(w, func(env *steps.Env, r *steps.PairRun, e steps.RDMAEnd) {
		// iWARP connects QPs only through the RDMA CM: perftest's -R
		// (the descriptor's RDMACMFlag) when either end is iWARP.
		cm := e.Server.Transport == "iWARP" || e.Client.Transport == "iWARP"
		r.Server.Ready = perftestReady(w, e.Port, cm)
		// An emulated end: -u raises the RC QP timeout on both sides
		// (kinds/qptimeout.go), unless the transport has no ACKs.
		t, _ := kinds.Lookup(w.Tool)
		qpt, why := qpTimeout(env, w)
		r.QPTimeout, r.Emulated = qpt, steps.EmulatedEnd(env, w)
		if qpt > 0 && env.Notify != nil {
			once.Do(func() {
				env.Notify(w.Name, fmt.Sprintf("workload %s: %s QP timeout raised to %s (%s %d): %s", w.Name, w.Tool, kinds.QPTimeoutText(qpt), t.QPTimeout.Flag, qpt, why))
			})
		}
		cf := env.HostFacts(w.ClientHost)
		if cf.PerftestJSON {
			r.JSONRel = r.Client.Handle + ".json"
			r.JSONFile = r.JSONRel
			if cf.WorkDir != "" {
				r.JSONFile = path.Join(cf.WorkDir, r.JSONRel)
			}
		}
		r.Server.Argv = Argv(w, steps.DeviceEnd{Device: e.Server.Name, GIDIndex: e.Server.GIDIndex, Port: e.Server.Port, RDMACM: cm, QPTimeout: qpt}, e.MTU, e.Port, e.Size, "", "")
		r.Client.Argv = Argv(w, steps.DeviceEnd{Device: e.Client.Name, GIDIndex: e.Client.GIDIndex, Port: e.Client.Port, RDMACM: cm, QPTimeout: qpt}, e.MTU, e.Port, e.Size, e.Server.IPv4, r.JSONFile)
	}), nil
}

// qpTimeout is the QP timeout workload w's perftest is given (0: its
// own) and why: raised when an end is an emulated guest and the
// transport is RC.
func qpTimeout(env *steps.Env, w *steps.Workload) (int, string) {
	t, _ := kinds.Lookup(w.Tool)
	if !rc(w, t) {
		return 0, ""
	}
	return steps.QPTimeoutFor(env, w, t)
}

// rc reports whether workload w runs tool t over RC, the one transport
// with ACKs (the lab's transport, else the tool's default; a -c in the
// lab's args wins, as perftest reads the last).
func rc(w *steps.Workload, t kinds.Tool) bool {
	tr := w.Transport
	if tr == "" && len(t.Transports) > 0 {
		tr = t.Transports[0]
	}
	for i, a := range w.Args {
		switch {
		case (a == "-c" || a == "--connection") && i+1 < len(w.Args):
			tr = w.Args[i+1]
		case strings.HasPrefix(a, "--connection="):
			tr = strings.TrimPrefix(a, "--connection=")
		case len(a) > 2 && strings.HasPrefix(a, "-c") && !strings.HasPrefix(a, "--"):
			tr = a[2:] // -cUD
		}
	}
	return tr == "RC"
}

// Argv builds one side's perftest command. serverAddr is "" for the
// server side; jsonFile, when set, adds --out_json (perftest ≥ 4.5-0.20).
func Argv(w *steps.Workload, end steps.DeviceEnd, mtu, port int, size int64, serverAddr, jsonFile string) []string {
	argv := []string{w.Tool,
		"-d", end.Device,
		"-x", strconv.Itoa(end.GIDIndex),
		"-p", strconv.Itoa(port),
	}
	if end.Port > 1 {
		argv = append(argv, "-i", strconv.Itoa(end.Port))
	}
	if mtu > 0 {
		argv = append(argv, "-m", strconv.Itoa(mtu))
	}
	t, _ := kinds.Lookup(w.Tool)
	if end.RDMACM && t.RDMACMFlag != "" && !argsAskCM(w.Args) {
		argv = append(argv, t.RDMACMFlag)
	}
	if t.Family == BW {
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
	if end.QPTimeout > 0 && t.QPTimeout.Flag != "" {
		argv = append(argv, t.QPTimeout.Flag, strconv.Itoa(end.QPTimeout))
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

// Ready says how the server side is known to be ready: it listens
// on its TCP port for the out-of-band exchange, or, with -R/--rdma_cm in the
// extra args, its rdma_cm id listens on that port instead (it opens no TCP
// socket then).
func Ready(w *steps.Workload, port int) *proto.Ready { return perftestReady(w, port, false) }

// perftestReady is Ready when rlab adds -R itself (cm: an end is
// iWARP).
func perftestReady(w *steps.Workload, port int, cm bool) *proto.Ready {
	if cm || argsAskCM(w.Args) {
		return &proto.Ready{RDMACMListen: port}
	}
	return &proto.Ready{TCPListen: port}
}

// argsAskCM reports whether a lab's extra perftest args already ask for the
// RDMA CM.
func argsAskCM(args []string) bool {
	for _, a := range args {
		if a == "-R" || a == "--rdma_cm" {
			return true
		}
	}
	return false
}
