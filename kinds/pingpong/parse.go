package pingpong

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/rlab-dev/rlab/engine/toolout"
)

// ibv_*_pingpong (rdma-core libibverbs/examples) ends with two lines:
//
//	2457600 bytes in 1.38 seconds = 14.27 Mbit/sec
//	300 iters in 1.38 seconds = 4593.58 usec/iter
//
// The byte count is size x iters x 2 (each iteration is a ping and a pong),
// which gives back the message size. The address lines before them carry
// the GIDs used.

var (
	ppBytes = regexp.MustCompile(`^(\d+) bytes in ([0-9.]+) seconds = ([0-9.]+) Mbit/sec$`)
	ppIters = regexp.MustCompile(`^(\d+) iters in ([0-9.]+) seconds = ([0-9.]+) usec/iter$`)
	ppAddr  = regexp.MustCompile(`^(local|remote) address:.*GID ([0-9a-fA-F:.]+)$`)
	// ppQP matches the address lines without a GID: an InfiniBand port
	// (rdma-core before GIDs were printed, or -g not given) and the
	// "remote address: ..., local address: ..." pairs ibv_srq_pingpong
	// prints for each of its QPs.
	ppQP = regexp.MustCompile(`^(local|remote) address: +LID 0x[0-9a-fA-F]+, QPN 0x[0-9a-fA-F]+, PSN 0x[0-9a-fA-F]+`)
)

func parse(b []byte) ([]toolout.Row, toolout.Info, error) {
	info := toolout.Info{Source: "text"}
	lines := toolout.SplitLines(b)
	var (
		r                  toolout.Row
		haveBytes, haveIts bool
		bytes              int64
	)
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" {
			continue
		}
		if m := ppAddr.FindStringSubmatch(t); m != nil {
			// ibv_srq_pingpong prints one line per QP: the first names the GID
			if m[1] == "local" && info.LocalGID == "" {
				info.LocalGID = m[2]
			} else if m[1] == "remote" && info.RemoteGID == "" {
				info.RemoteGID = m[2]
			}
			continue
		}
		if m := ppBytes.FindStringSubmatch(t); m != nil {
			n, err := strconv.ParseInt(m[1], 10, 64)
			if err != nil {
				return nil, info, fmt.Errorf("byte count in %q: %w", t, err)
			}
			x, err := toolout.ParseNumber(m[3])
			if err != nil {
				return nil, info, fmt.Errorf("throughput in %q: %w", t, err)
			}
			bytes, haveBytes = n, true
			r.Values = append(r.Values, toolout.Value{Metric: "pp_bw", Value: x})
			continue
		}
		if m := ppIters.FindStringSubmatch(t); m != nil {
			n, err := strconv.ParseInt(m[1], 10, 64)
			if err != nil {
				return nil, info, fmt.Errorf("iteration count in %q: %w", t, err)
			}
			x, err := toolout.ParseNumber(m[3])
			if err != nil {
				return nil, info, fmt.Errorf("time per iteration in %q: %w", t, err)
			}
			r.Iters, haveIts = n, true
			r.Values = append(r.Values, toolout.Value{Metric: "pp_lat", Value: x})
			continue
		}
		if ppQP.MatchString(t) {
			continue
		}
		// anything else (an error, a line of a newer rdma-core) is kept
		info.Warnings = append(info.Warnings, t)
	}
	if !haveBytes || !haveIts {
		return nil, info, fmt.Errorf("no \"N bytes in S seconds\" and \"N iters in S seconds\" summary lines%s", toolout.FailHint(lines, info.Warnings))
	}
	if r.Iters > 0 && bytes%(2*r.Iters) == 0 {
		r.Size = bytes / (2 * r.Iters)
	}
	return []toolout.Row{r}, info, nil
}
