package plan

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/engine/lab"
)

// TestTrialBytesBounded: a trial holds its workload's argv, so what the
// evaluation guard admits once per workload was written once per trial:
// 60 workloads of a 1 MB argv of '<' (six bytes each in JSON), ten
// repeats each, made rlab plan -json pass 24 GB and be killed. The plan
// is refused at the workload that passes MaxTrialBytes; a lab within it
// plans, and what WriteJSON writes of it stays within the bound.
func TestTrialBytesBounded(t *testing.T) {
	for _, tc := range []struct {
		workloads int
		refused   bool
	}{{1, false}, {12, true}} {
		t.Run(fmt.Sprint(tc.workloads), func(t *testing.T) {
			src := fmt.Sprintf(`lab "big" {}
locals {
  cmd = ["echo", replace(format("%%01000000d", 0), "0", "<")]
}
host "h" {
  address = "192.0.2.1"
}
workload "w" {
  for_each = toset([for i in range(%d) : tostring(i)])
  tool     = "exec"
  host     = host.h
  command  = local.cmd
  repeat   = 10
}
`, tc.workloads)
			l, diags := lab.LoadSource("big.hcl", []byte(src), t.TempDir(), lab.LoadOptions{})
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			p, err := New(l)
			if tc.refused {
				if err == nil || !strings.Contains(err.Error(), "more than 256 MiB") {
					t.Fatalf("plan error %v: want the trials' commands refused past %d MiB", err, MaxTrialBytes>>20)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var n countWriter
			if err := p.WriteJSON(&n); err != nil {
				t.Fatal(err)
			}
			if n.total > MaxTrialBytes+1<<20 || n.largest > 16<<20 {
				t.Errorf("plan JSON %d bytes, largest write %d: want at most %d, a trial at a time", n.total, n.largest, MaxTrialBytes+1<<20)
			}
		})
	}
}

type countWriter struct{ total, largest int64 }

func (c *countWriter) Write(b []byte) (int, error) {
	c.total += int64(len(b))
	c.largest = max(c.largest, int64(len(b)))
	return len(b), nil
}
