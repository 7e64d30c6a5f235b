package run

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/engine/plan"
)

// TestRunRefusesVMsThatDoNotFit: labs/class-vms.hcl (6 VMs of 1GiB) on a
// machine with 3.3GiB available is refused before anything is made (no
// run folder, no connection, no qemu), with the numbers and the fixes; on
// a machine with room, the same run goes on to boot (and here stops at the
// missing image, which proves the check let it through). The figures are
// injected, as rlab reads them from /proc/meminfo.
func TestRunRefusesVMsThatDoNotFit(t *testing.T) {
	l, diags := lab.Load([]string{"../../labs/class-vms.hcl"}, lab.LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	t.Setenv("RLAB_CACHE", t.TempDir()) // no image: a run that passes the check stops at the boot
	tests := []struct {
		name    string
		m       plan.Machine
		refused bool
	}{
		{"this bed", plan.Machine{MemAvailableBytes: 3<<30 + 400<<20, CPUs: 2}, true},
		{"roomy", plan.Machine{MemAvailableBytes: 64 << 30, CPUs: 16}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "run")
			connected := false
			conn := ConnectFunc(func(ctx context.Context, tg Target, runID string) (Host, error) {
				connected = true
				return nil, errors.New("no host in this test")
			})
			vms := &LocalVMs{Machine: func() (plan.Machine, error) { return tt.m, nil }}
			res := runPlanned(context.Background(), t, l, plan.Options{}, Options{Out: out, Connector: conn, VMs: vms})
			var fe *plan.FitError
			if got := errors.As(res.Err, &fe); got != tt.refused {
				t.Fatalf("refused = %v, want %v: %v", got, tt.refused, res.Err)
			}
			if !tt.refused {
				if res.Err == nil || !strings.Contains(res.Err.Error(), "no VM image") {
					t.Errorf("want the run to go on to the boot (and fail there without an image), got %v", res.Err)
				}
				return
			}
			if res.Code != ExitFailed {
				t.Errorf("exit %d, want %d", res.Code, ExitFailed)
			}
			for _, want := range []string{"6 local VMs need 6GiB", "3.3GiB available", `memory = "512MiB"`, "--only"} {
				if !strings.Contains(res.Err.Error(), want) {
					t.Errorf("refusal lacks %q: %v", want, res.Err)
				}
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("refused run made its folder %s (%v)", out, err)
			}
			if connected {
				t.Error("refused run connected to a host")
			}
		})
	}
}
