package rping

import (
	"fmt"
	"strings"

	"github.com/rlab-dev/rlab/engine/toolout"
)

// rping (rdmacm-utils) run with -v prints one line per completed ping-pong:
//
//	ping data: rdma-ping-0: ABCDEFGHIJKLMNOPQRSTUVWXYZ[\]^_`abcdefghijklmnopqr     (client)
//	server ping data: rdma-ping-0: ABCDEFGHIJKLMNOPQRSTUVWXYZ[\]^_`abcdefghijklmnopqr (server)
//
// and reports failures on stderr ("rdma_resolve_addr: No such device",
// "cq completion failed status 5", "connect error -1"). A clean end prints
// "client DISCONNECT EVENT..." and, on the server, "wait for RDMA_READ_ADV
// state 10": those are not errors.

func parse(stdout, stderr []byte) ([]toolout.Row, toolout.Info, error) {
	info := toolout.Info{Source: "text"}
	count := 0
	var errs []string
	scan := func(b []byte) {
		for _, l := range toolout.SplitLines(b) {
			t := strings.TrimSpace(l)
			if t == "" {
				continue
			}
			if strings.HasPrefix(t, "ping data: ") || strings.HasPrefix(t, "server ping data: ") {
				count++
				continue
			}
			if rpingError(t) {
				errs = append(errs, t)
			} else if !rpingDone(t) {
				info.Warnings = append(info.Warnings, t)
			}
		}
	}
	scan(stdout)
	scan(stderr)
	if len(errs) > 0 {
		if len(errs) > 3 {
			errs = errs[:3]
		}
		return nil, info, fmt.Errorf("rping failed after %d ping-pongs: %s", count, strings.Join(errs, "; "))
	}
	if count == 0 {
		return nil, info, fmt.Errorf("no \"ping data:\" lines (was rping run with -v?)")
	}
	return []toolout.Row{{Values: []toolout.Value{{Metric: "rping_count", Value: float64(count)}}}}, info, nil
}

// rpingDone tells the lines of a clean end, which are not warnings.
func rpingDone(t string) bool {
	return strings.HasSuffix(t, "DISCONNECT EVENT...") || strings.HasPrefix(t, "wait for RDMA_READ_ADV state")
}

func rpingError(t string) bool {
	lt := strings.ToLower(t)
	if strings.Contains(lt, "disconnect event") || strings.HasPrefix(lt, "wait for rdma_read_adv state") {
		return false
	}
	for _, s := range []string{"error", "fail", "unable", "reject", "unreachable", "no such", "timed out", "timeout", "invalid"} {
		if strings.Contains(lt, s) {
			return true
		}
	}
	return false
}
