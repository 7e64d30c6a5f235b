package steps

import (
	"fmt"
	"regexp"
	"strconv"
)

// wcStatuses name the work completion statuses perftest prints as a bare
// number ("Failed status 9: wr_id 0 syndrom 0x0"), by enum ibv_wc_status
// (rdma-core libibverbs/verbs.h) and what ibv_poll_cq(3) says each means,
// for the ones a lab meets: without the name, "status 9" tells a reader
// nothing.
var wcStatuses = map[int]string{
	1:  "IBV_WC_LOC_LEN_ERR: a message longer than the local buffer",
	2:  "IBV_WC_LOC_QP_OP_ERR: the local QP could not execute the work request",
	4:  "IBV_WC_LOC_PROT_ERR: the local buffer is not registered for this access",
	5:  "IBV_WC_WR_FLUSH_ERR: flushed, because the QP went to the error state after an earlier failure",
	7:  "IBV_WC_BAD_RESP_ERR: an unexpected response came back from the responder",
	8:  "IBV_WC_LOC_ACCESS_ERR: a protection error on the local data buffer",
	9:  "IBV_WC_REM_INV_REQ_ERR: the responder rejected a request as invalid (an out-of-sequence or unsupported operation); with Soft-RoCE on a loaded or stalling link (TCG VMs) it follows lost or late packets of a multi-packet message",
	10: "IBV_WC_REM_ACCESS_ERR: the responder refused the remote address or key",
	11: "IBV_WC_REM_OP_ERR: the responder could not complete the operation",
	12: "IBV_WC_RETRY_EXC_ERR: transport retries exceeded: the peer did not acknowledge within the QP's timeout, retry count times (a dead link, or a peer too loaded to answer)",
	13: "IBV_WC_RNR_RETRY_EXC_ERR: receiver-not-ready retries exceeded: the peer posted no receive buffer in time",
}

var perftestStatus = regexp.MustCompile(`Failed status (\d+):`)

// wcStatusHint names the first work completion status perftest printed as
// a number in out, or "".
func wcStatusHint(out string) string {
	m := perftestStatus.FindStringSubmatch(out)
	if m == nil {
		return ""
	}
	n, _ := strconv.Atoi(m[1])
	if s, ok := wcStatuses[n]; ok {
		return fmt.Sprintf("status %d is %s", n, s)
	}
	return ""
}
