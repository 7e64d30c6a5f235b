package main

import (
	"strings"
	"testing"
)

// TestPlanSaysQPTimeout: `rlab plan` of a lab with local VMs says, on each
// perftest step, that the QP timeout is raised when the VMs will run under
// TCG (here forced with RLAB_VM_ACCEL, which the boot obeys too), and that
// the pingpong cannot raise its own; under KVM it says nothing of it.
func TestPlanSaysQPTimeout(t *testing.T) {
	for _, tt := range []struct {
		accel string
		want  bool
	}{{"tcg", true}, {"kvm", false}} {
		t.Run(tt.accel, func(t *testing.T) {
			t.Setenv("RLAB_VM_ACCEL", tt.accel)
			out, errOut, code := rlab(t, "plan", "../../labs/quickstart.hcl")
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			steps := 0
			for _, line := range strings.Split(out, "\n") {
				isPerftest := strings.Contains(line, "workload-") && strings.Contains(line, ": ib_write_")
				isPingpong := strings.Contains(line, "workload-") && strings.Contains(line, ": ibv_rc_pingpong")
				raised := strings.Contains(line, "QP timeout raised from 14 (67ms a try) to 18 (1.07s a try) (-u 18): host ") && strings.Contains(line, "under TCG (RLAB_VM_ACCEL=tcg)")
				fixed := strings.Contains(line, "QP timeout not raised (ibv_rc_pingpong sets QP timeout 14 itself")
				if isPerftest || isPingpong {
					steps++
				}
				if isPerftest && raised != tt.want {
					t.Errorf("perftest step says the raise %v, want %v: %s", raised, tt.want, line)
				}
				if isPingpong && fixed != tt.want {
					t.Errorf("pingpong step says it is fixed %v, want %v: %s", fixed, tt.want, line)
				}
				if strings.Contains(line, ": tcp") && strings.Contains(line, "QP timeout") {
					t.Errorf("a tcp step names a QP timeout: %s", line)
				}
			}
			if steps != 6 { // write_bw, write_lat, rc_pingpong: server and client
				t.Errorf("found %d RDMA workload steps, want 6:\n%s", steps, out)
			}
			if tt.want && !strings.Contains(out, "-u 18") {
				t.Errorf("plan never raises the QP timeout:\n%s", out)
			}
		})
	}
}
