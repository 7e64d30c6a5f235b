package perftest

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/kinds"
	"github.com/rlab-dev/rlab/steps"
)

// Perftest tools: ib_{write,read,send,atomic}_{bw,lat}.

func newOp(w *steps.Workload) (steps.Op, error) {
	var once sync.Once // the raised QP timeout is said once per workload
	t, _ := kinds.Lookup(w.Tool)
	return steps.NewRDMAPair(w, func(env *steps.Env, r *steps.PairRun, e steps.RDMAEnd) {
		// What only the run knows, added to the plan's argv where the
		// plan could not know it: an rdma block's device found iWARP (-R,
		// the plan knows siw only), an end whose facts say it is emulated
		// (the plan knows the local VMs only), the JSON report the client
		// host's perftest can write (its facts).
		cm := e.Server.Transport == "iWARP" || e.Client.Transport == "iWARP"
		if cm && t.RDMACMFlag != "" && !argsAskCM(w.Args) {
			add(r, t.RDMACMFlag)
		}
		r.Server.Ready = serverReady(w, e)
		// An emulated end: -u raises the RC QP timeout on both sides
		// (kinds/qptimeout.go), unless the transport has no ACKs; the
		// hook (Argv) adds it, this says so once.
		qpt, why := qpTimeout(env, w)
		r.QPTimeout, r.Emulated = qpt, steps.EmulatedEnd(env, w)
		if qpt == 0 && t.QPTimeout.Flag != "" && !t.QPTimeout.SetBy(w.Args) {
			// The plan took an end for an emulated guest that the run's
			// facts say is not: the run decides, as before the op ran
			// the plan's argv (the lab's own timeout stays).
			raised := []string{t.QPTimeout.Flag, strconv.Itoa(kinds.QPTimeoutEmulated)}
			r.Server.Argv, r.Client.Argv = drop(r.Server.Argv, raised), drop(r.Client.Argv, raised)
		}
		if qpt > 0 {
			add(r, t.QPTimeout.Flag, strconv.Itoa(qpt))
			if env.Notify != nil {
				once.Do(func() {
					env.Notify(w.Name, fmt.Sprintf("workload %s: %s QP timeout raised to %s (%s %d): %s", w.Name, w.Tool, kinds.QPTimeoutText(qpt), t.QPTimeout.Flag, qpt, why))
				})
			}
		}
		cf := env.HostFacts(w.ClientHost)
		if cf.PerftestJSON {
			r.JSONRel = r.Client.Handle + ".json"
			r.JSONFile = r.JSONRel
			if cf.WorkDir != "" {
				r.JSONFile = path.Join(cf.WorkDir, r.JSONRel)
			}
			r.Client.Argv = beforeAddr(r.Client.Argv, "--out_json", "--out_json_file="+r.JSONFile)
		}
	}), nil
}

// add gives both sides option opt (a flag and its value) unless the
// planned argv has it: on the server at the end, on the client before the
// server's address (its last argument, as side writes it).
func add(r *steps.PairRun, opt ...string) {
	if slices.Contains(r.Server.Argv, opt[0]) {
		return
	}
	r.Server.Argv = append(r.Server.Argv, opt...)
	r.Client.Argv = beforeAddr(r.Client.Argv, opt...)
}

// drop is argv without the first occurrence of opt (a flag and its
// value, next to each other).
func drop(argv, opt []string) []string {
	for i := 0; i+len(opt) <= len(argv); i++ {
		if slices.Equal(argv[i:i+len(opt)], opt) {
			return slices.Concat(argv[:i:i], argv[i+len(opt):])
		}
	}
	return argv
}

// beforeAddr is a client argv with opt inserted before its last argument,
// the server's address.
func beforeAddr(argv []string, opt ...string) []string {
	n := len(argv) - 1
	return slices.Concat(argv[:n:n], opt, argv[n:])
}

// Argv is perftest's argv hook (kinds.Argver): both sides' commands for
// one trial, from what the plan resolves or the run found.
func (Kind) Argv(in kinds.ArgvIn) (server, client []string) {
	cm, qpt := rdmaCM(in), qptFor(in.W, in.Emulated)
	return side(in, in.Server, cm, qpt, ""), side(in, in.Client, cm, qpt, in.Addr)
}

// rdmaCM: iWARP connects QPs only through the RDMA CM, so perftest gets
// its -R (the descriptor's RDMACMFlag) when either end is iWARP.
func rdmaCM(in kinds.ArgvIn) bool {
	return in.Server.Transport == "iWARP" || in.Client.Transport == "iWARP"
}

// qpTimeout is the QP timeout workload w's perftest is given (0: its
// own) and why: raised when an end is an emulated guest and the
// transport is RC.
func qpTimeout(env *steps.Env, w *steps.Workload) (int, string) {
	why := steps.EmulatedEnd(env, w)
	if q := qptFor(&w.Workload, why != ""); q > 0 {
		return q, why
	}
	return 0, ""
}

// qptFor is the QP timeout a perftest of w is given when an end is
// emulated or not: raised over RC (the one transport with ACKs), unless
// the lab's args set it.
func qptFor(w *kinds.Workload, emulated bool) int {
	t, _ := kinds.Lookup(w.Tool)
	if !emulated || !rc(w, t) || t.QPTimeout.Flag == "" || t.QPTimeout.SetBy(w.Args) {
		return 0
	}
	return kinds.QPTimeoutEmulated
}

// rc reports whether workload w runs tool t over RC, the one transport
// with ACKs (the lab's transport, else the tool's default; a -c in the
// lab's args wins, as perftest reads the last).
func rc(w *kinds.Workload, t kinds.Tool) bool {
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

// side builds one side's perftest command. serverAddr is "" for the
// server side; it is the client's last argument, before which the op adds
// --out_json (perftest ≥ 4.5-0.20) when the client host's perftest has it.
func side(in kinds.ArgvIn, end kinds.End, cm bool, qpt int, serverAddr kinds.Value) []string {
	w := in.W
	argv := []string{w.Tool,
		"-d", end.Device,
		"-x", string(end.GID),
		"-p", strconv.Itoa(in.Port),
	}
	if end.Port > 1 {
		argv = append(argv, "-i", strconv.Itoa(end.Port))
	}
	if in.MTU != "" {
		argv = append(argv, "-m", string(in.MTU))
	}
	t, _ := kinds.Lookup(w.Tool)
	if cm && t.RDMACMFlag != "" && !argsAskCM(w.Args) {
		argv = append(argv, t.RDMACMFlag)
	}
	if t.Flavor == BW {
		argv = append(argv, "--report_gbits")
	}
	// Atomic tests have a fixed 8-byte message; perftest rejects -s there.
	if size := in.Trial.Size; size > 0 && t.FixedSize == 0 {
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
	if qpt > 0 && t.QPTimeout.Flag != "" {
		argv = append(argv, t.QPTimeout.Flag, strconv.Itoa(qpt))
	}
	argv = append(argv, w.Args...)
	if serverAddr != "" {
		argv = append(argv, string(serverAddr))
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

// serverReady is the run's Ready for the server of the two ends: through
// the RDMA CM when an end is iWARP, and then, on an iWARP server, only
// once siw's TCP socket listens too (proto.Ready.IWARP).
func serverReady(w *steps.Workload, e steps.RDMAEnd) *proto.Ready {
	cm := e.Server.Transport == "iWARP" || e.Client.Transport == "iWARP"
	r := perftestReady(w, e.Port, cm)
	r.IWARP = r.RDMACMListen != 0 && e.Server.Transport == "iWARP"
	return r
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
