package steps

import (
	"fmt"
	"regexp"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/kinds"
)

// An emulated guest (QEMU's TCG: every instruction translated in software)
// stalls for longer than an RC QP's usual ACK timeout whenever its host is
// busy, and rxe's requester then runs out of retries (kinds/qptimeout.go).
// Each tool family raises the timeout itself where it can (kinds/perftest's
// Argv, from the descriptor's QPTimeout); this file says which hosts are
// emulated and names the cause of a retry-exceeded failure.

// Emulated says why host is an emulated (TCG) guest, or "" when it is not
// known to be one: a local VM the run booted under TCG (Env.Emulation),
// else the host's facts (a QEMU guest with no KVM clock, as
// systemd-detect-virt says "qemu").
func (e *Env) Emulated(host string) string {
	if why := e.Emulation[host]; why != "" {
		return why
	}
	if f := e.Facts[host]; f != nil && f.Platform.Virtualization == EmulatedVirt {
		return fmt.Sprintf("host %s is a QEMU guest without KVM (its facts: virtualization %q)", host, EmulatedVirt)
	}
	return ""
}

// EmulatedVirt is proto.Platform.Virtualization of a guest QEMU runs
// without KVM (TCG); under KVM it is "kvm".
const EmulatedVirt = "qemu"

// EmulatedEnd says why an end of two-sided workload w is an emulated guest,
// or "": the QP timeout matters on both ends (each side's requester waits
// for the other's ACKs).
func EmulatedEnd(env *Env, w *Workload) string {
	for _, h := range []string{w.ServerHost, w.ClientHost} {
		if why := env.Emulated(h); why != "" {
			return why
		}
	}
	return ""
}

// retryExceeded finds an RC QP's transport retry counter exceeded
// (IBV_WC_RETRY_EXC_ERR, 12) as the tools print it: perftest "Failed
// status 12: wr_id 0 syndrom 0x81", ibv_rc_pingpong "Failed status
// transport retry counter exceeded (12)", rping "cq completion failed
// status 12".
var retryExceeded = regexp.MustCompile(`(?i)transport retry counter exceeded|\bstatus:? 12\b`)

// remoteInvalid is IBV_WC_REM_INV_REQ_ERR (9) as the tools print it: the
// failure TestE2ERealRXE met under TCG on a busy machine (issue 27).
var remoteInvalid = regexp.MustCompile(`(?i)remote invalid request error|\bstatus:? 9\b`)

// QPTimeoutError is a two-sided RDMA run that failed as an RC QP does
// when its peer's ACKs are late: its text keeps the tool's words and adds
// the cause and the fix.
type QPTimeoutError struct {
	Err  error
	Hint string
}

func (e *QPTimeoutError) Error() string { return e.Err.Error() + "\n" + e.Hint }
func (e *QPTimeoutError) Unwrap() error { return e.Err }

// explainRetries wraps err, a failed run of tool t with its outputs, with
// the cause and the fix when the tool reported retries exhausted: the QP
// timeout it ran with (timeout, 0 for the tool's own), and why an end is
// emulated ("" when none is known to be).
func explainRetries(err error, t kinds.Tool, timeout int, emulated string, outs ...*proto.ProcResult) error {
	if err == nil || !t.QPTimeout.RC() {
		return err
	}
	var text string
	for _, o := range outs {
		if o != nil {
			text += o.Stdout + "\n" + o.Stderr + "\n"
		}
	}
	q := t.QPTimeout
	used := timeout
	if used == 0 {
		used = q.Default
	}
	waited := ""
	if used > 0 {
		waited = fmt.Sprintf(" (QP timeout %s, %d retries)", kinds.QPTimeoutText(used), kinds.QPRetries)
	}
	var hint string
	switch {
	case retryExceeded.MatchString(text):
		hint = "cause: the RC QP ran out of retries (IBV_WC_RETRY_EXC_ERR, status 12): no ACK came from the other end in time" + waited + "; "
	case remoteInvalid.MatchString(text) && emulated != "":
		hint = "cause: the RC QP failed with a remote invalid request (status 9), which rxe under TCG has given on a busy machine when the peer stalled" + waited + "; "
	default:
		return err
	}
	switch {
	case emulated != "" && q.Flag != "" && timeout > 0:
		hint += fmt.Sprintf("%s, and even the raised timeout ran out: its machine is too busy (run less beside it), or raise it further with args = [%q, \"20\"] (%s)", emulated, q.Flag, kinds.QPTimeoutText(20))
	case emulated != "" && q.Flag != "":
		hint += fmt.Sprintf("%s: raise the timeout with args = [%q, \"%d\"] (%s)", emulated, q.Flag, kinds.QPTimeoutEmulated, kinds.QPTimeoutText(kinds.QPTimeoutEmulated))
	case emulated != "":
		hint += fmt.Sprintf("%s, and %s: run it with less beside it, on KVM, or use a tool that takes one", emulated, q.Fixed)
	case q.Flag != "":
		hint += fmt.Sprintf("the other end stalled or the link lost packets (a loss impairment, a busy or emulated host); args = [%q, \"%d\"] waits longer (%s)", q.Flag, kinds.QPTimeoutEmulated, kinds.QPTimeoutText(kinds.QPTimeoutEmulated))
	default:
		hint += fmt.Sprintf("the other end stalled or the link lost packets (a loss impairment, a busy or emulated host); %s", q.Fixed)
	}
	return &QPTimeoutError{Err: err, Hint: hint}
}
