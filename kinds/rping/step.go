package rping

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/kinds"
	"github.com/rlab-dev/rlab/steps"
)

// rping from rdmacm-utils: an RDMA CM connection and ping-pongs of RDMA
// READ/WRITE. The server is ready once its rdma_cm id listens on the port.

// rpingDefaultCount bounds rping when the lab gives no iterations: an
// unbounded rping never ends.
const rpingDefaultCount = 10

func newOp(w *steps.Workload) (steps.Op, error) {
	return steps.NewRDMAPair(w, func(env *steps.Env, r *steps.PairRun, e steps.RDMAEnd) {
		// No option raises its QP timeout (kinds/qptimeout.go): a failure
		// with retries exhausted on an emulated end says so.
		r.Emulated = steps.EmulatedEnd(env, w)
		r.Server.Ready = serverReady(e)
		r.Stall = siwStall(env, w, e)
		r.Client.Harmless = func(res *proto.ProcResult) string { return teardownRace(res, count(&w.Workload)) }
	}), nil
}

// serverReady: the server's rdma_cm id listens; on iWARP the agent also
// waits for siw's TCP socket, whose LISTEN can come after the cm_id's
// (proto.Ready.IWARP).
func serverReady(e steps.RDMAEnd) *proto.Ready {
	return &proto.Ready{RDMACMListen: e.Port, IWARP: e.Server.Transport == "iWARP"}
}

// siwStall names rping's known stall over siw, or "" when an end is not
// iWARP. Seen about 1 run in 14 in CI with siw in Debian's 6.1 guest kernel
// under TCG, and looked at live in the VM bed: the connection is up, the
// client's first Send (40 bytes on the wire) sits unread in the server's
// siw TCP socket (ss: Recv-Q 40, for minutes), so the server's rping never
// sees it, never issues its RDMA Read, and both sides wait (in
// ucma_get_event and ib_uverbs_event_read) until the workload's timeout;
// the server's last words, once killed, are "wait for RDMA_READ_COMPLETE
// state 10". siw missed the data that came as the connection passed from
// its MPA handshake to the QP. rlab does not end it sooner: rping's -v
// lines reach its stdout file a stdio buffer at a time, so silence is no
// sign of a stall.
func siwStall(env *steps.Env, w *steps.Workload, e steps.RDMAEnd) string {
	if e.Server.Transport != "iWARP" && e.Client.Transport != "iWARP" {
		return ""
	}
	kernel := "seen with Debian's 6.1"
	if k := env.HostFacts(w.ServerHost).Kernel; k != "" {
		kernel = k + "; " + kernel
	}
	return fmt.Sprintf("rping over siw stalled: likely a known stall of siw (soft-iWARP) in the guest kernel (%s), not a fault of the lab, when the client's output stops after its first ping (its first Send stays unread in the server's siw TCP socket, so the server never issues its RDMA Read; the server's last words are \"wait for RDMA_READ_COMPLETE state 10\"); otherwise the count (-C) may need more than the workload's timeout; run it again (a shorter workload timeout costs less), or run rping over rxe or on a newer kernel", kernel)
}

// Argv is rping's argv hook (kinds.Argver): both sides name the
// server's address, the server with -s, the client with -c.
func (Kind) Argv(in kinds.ArgvIn) (server, client []string) {
	return side(in, "-s"), side(in, "-c")
}

func side(in kinds.ArgvIn, mode string) []string {
	w := in.W
	argv := []string{w.Tool, mode, "-a", string(in.Addr), "-p", strconv.Itoa(in.Port), "-C", strconv.FormatInt(count(w), 10), "-v"}
	if size := in.Trial.Size; size > 0 {
		argv = append(argv, "-S", strconv.FormatInt(size, 10))
	}
	return append(argv, w.Args...)
}

// count is the ping-pongs a workload asks for (-C).
func count(w *kinds.Workload) int64 {
	if w.Iterations > 0 {
		return w.Iterations
	}
	return rpingDefaultCount
}

// teardownRace says why an rping client's exit 255 is harmless, or "": its
// cm thread still waits in rdma_get_cm_event when the main thread destroys
// the event channel at the end, gets EBADF and calls exit(-1) (rdma-core's
// rping.c cm_thread), racing main's own exit 0. Seen under TCG after all
// 100 ping-pongs and the disconnect. Harmless only when every ping-pong
// asked for was printed and nothing else went wrong.
func teardownRace(res *proto.ProcResult, want int64) string {
	out := res.Stdout + "\n" + res.Stderr
	if res.ExitCode != 255 || !strings.Contains(out, "DISCONNECT EVENT") || !strings.Contains(out, "rdma_get_cm_event: Bad file descriptor") {
		return ""
	}
	n := int64(0)
	for _, l := range strings.Split(res.Stdout, "\n") {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "ping data: ") {
			n++
		} else if t != "" && rpingError(t) {
			return ""
		}
	}
	for _, l := range strings.Split(res.Stderr, "\n") {
		if t := strings.TrimSpace(l); t != "" && rpingError(t) {
			return ""
		}
	}
	if n != want {
		return ""
	}
	return fmt.Sprintf("rping's cm thread lost the race with its own teardown (rdma_get_cm_event: Bad file descriptor after the disconnect, exit 255); all %d ping-pongs completed", n)
}
