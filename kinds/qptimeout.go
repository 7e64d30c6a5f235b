package kinds

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// An RC QP's requester waits for each ACK 4.096 µs × 2^timeout (the local
// ACK timeout of the InfiniBand spec, which rxe turns into jiffies the same
// way) and retransmits at most retry_cnt (7) times; after that the work
// request completes with IBV_WC_RETRY_EXC_ERR, status 12, "transport retry
// counter exceeded", and the QP is dead. The tools' usual timeout is 14:
// 67 ms. Under TCG a guest stalls for longer than that whenever the host is
// busy (issue 27: TestE2ERealRXE failed with `Completion with error`,
// `Failed status 9`, IBV_WC_REM_INV_REQ_ERR, while the machine ran a
// 1,000-host netns bed), so rlab raises it when an end is an emulated
// guest, for the tools that take it (perftest's -u; ibv_rc_pingpong and
// rping have no option for it, and the plan says so).
// 18 is 1.07 s a try, 8.6 s before the QP gives up: longer than the stalls
// seen, short enough that a link that is really gone still fails the
// workload well inside its timeout.

// QPTimeoutEmulated is the QP timeout rlab gives a tool when an end of its
// workload is an emulated (TCG) guest.
const QPTimeoutEmulated = 18

// QPRetries is the retry count the tools set (perftest, ibv_rc_pingpong:
// retry_cnt 7), the most the spec allows.
const QPRetries = 7

// QPTimeout says how a tool sets the ACK timeout of its RC QPs.
type QPTimeout struct {
	// Flag is the option that sets it (perftest's -u, --qp-timeout);
	// "" when the tool has none.
	Flag string
	// Long is the flag's long form ("--qp-timeout"): a lab's args that set
	// the timeout either way are left alone.
	Long string
	// Default is the tool's own value when it is not told (0: not the
	// tool's to choose, e.g. the RDMA CM's).
	Default int
	// Fixed says, when Flag is "", why it cannot be raised: for the plan
	// and for the error of a retry-exceeded failure.
	Fixed string
}

// SetBy reports whether args set the timeout themselves: the flag ("-u
// 20", "-u20") or its long form ("--qp-timeout 20", "--qp-timeout=20").
func (q QPTimeout) SetBy(args []string) bool {
	for _, a := range args {
		switch {
		case q.Flag != "" && strings.HasPrefix(a, q.Flag):
			return true
		case q.Long != "" && (a == q.Long || strings.HasPrefix(a, q.Long+"=")):
			return true
		}
	}
	return false
}

// RC reports whether the tool has RC QPs whose timeout it sets or fixes.
func (q QPTimeout) RC() bool { return q.Flag != "" || q.Fixed != "" }

// QPTimeoutDuration is one ACK wait of QP timeout t: 4.096 µs × 2^t.
func QPTimeoutDuration(t int) time.Duration {
	return time.Duration(4096 * math.Pow(2, float64(t)))
}

// QPTimeoutText is QP timeout t for a person: "18 (1.07s a try)".
func QPTimeoutText(t int) string {
	d := QPTimeoutDuration(t)
	r := d.Round(time.Millisecond)
	if d >= time.Second {
		r = d.Round(10 * time.Millisecond)
	}
	return fmt.Sprintf("%d (%s a try)", t, r)
}

// QPTimeoutPlan is what the plan says of tool t on a workload an end of
// which is emulated (why names the host and how rlab knows), or "" when
// the tool has no RC QP timeout.
func QPTimeoutPlan(t Tool, why string) string {
	q := t.QPTimeout
	switch {
	case q.Flag != "":
		return fmt.Sprintf("QP timeout raised from %s to %s (%s %d): %s", QPTimeoutText(q.Default), QPTimeoutText(QPTimeoutEmulated), q.Flag, QPTimeoutEmulated, why)
	case q.Fixed != "":
		return fmt.Sprintf("QP timeout not raised (%s): %s", q.Fixed, why)
	}
	return ""
}
