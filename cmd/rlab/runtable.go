package main

import (
	"io"

	"github.com/rlab-dev/rlab/engine/results"
)

// printHeadline prints the table rlab run ends with (per workload its key
// numbers, RDMA beside TCP, expects, an exec's output) from the run's
// results.json; false when there is none to read.
func printHeadline(w io.Writer, dir string) bool {
	if dir == "" {
		return false
	}
	r, err := results.ReadRun(dir)
	if err != nil || len(r.Workloads) == 0 {
		return false
	}
	return results.WriteHeadline(w, r) == nil
}
