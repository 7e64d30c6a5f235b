package run

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestStepWorkloadOptions: the step kinds see every option the lab set, as
// the lab model holds it (one type, tooldesc.Options, in both).
func TestStepWorkloadOptions(t *testing.T) {
	l := loadLab(t, twoHosts+`
workload "bulk" {
  tool     = "tcp"
  server   = host.a
  client   = host.b
  duration = "2s"
  timeout  = "1m"
  repeat   = 3
  args     = ["-x"]
}
workload "cmd" {
  tool    = "exec"
  host    = host.a
  command = ["true"]
}
`)
	for _, w := range l.Workloads {
		sw := stepWorkload(l, w)
		if diff := cmp.Diff(w.Options, sw.Options); diff != "" {
			t.Errorf("%s: step options differ from the lab's (-lab +step):\n%s", w.Name, diff)
		}
	}
	if o := l.Workloads[0].Options; o.Duration.Seconds() != 2 || o.Repeat != 3 || o.Timeout.Minutes() != 1 || len(o.Args) != 1 {
		t.Errorf("bulk options = %+v", o)
	}
}
