package madeup

import (
	"strconv"

	"github.com/rlab-dev/rlab/steps"
)

// NewStep is made_stream's step: a server/client pair between the
// workload's two devices, as every RDMA tool's, whose client prints what
// Rate says it measured at each size.
func (Kind) NewStep(w *steps.Workload) (steps.Step, error) {
	return steps.NewRDMAPair(w, func(_ *steps.Env, r *steps.PairRun, e steps.RDMAEnd) {
		r.Server.Argv = []string{"true"}
		gbps, rtt := Rate(e.Size)
		r.Client.Argv = []string{"echo", "made " + strconv.FormatInt(e.Size, 10) + " " + strconv.FormatFloat(gbps, 'g', -1, 64) + " " + strconv.FormatFloat(rtt, 'g', -1, 64)}
	}), nil
}

// Rate is what made_stream "measures" at a message size: 1 Gb/s per 16 KiB
// and a round trip of 5 usec plus 1 per 16 KiB (at 64 KiB: 4 Gb/s, 9 usec).
func Rate(size int64) (gbps, rtt float64) {
	g := float64(size) / 16384
	return g, 5 + g
}
