package plan

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/engine/lab"
)

// TestVMCost: the plan of labs/class-vms.hcl (3 students × a VM pair) sums
// its VMs, and says against a given machine whether they fit; the golden
// holds what rlab plan prints for each machine (the figures injected, as
// rlab reads them from /proc/meminfo and the CPU set).
func TestVMCost(t *testing.T) {
	l := load(t, "../../labs/class-vms.hcl", lab.LoadOptions{})
	p, err := New(l)
	if err != nil {
		t.Fatal(err)
	}
	if c := p.VMCost; c == nil || c.VMs != 6 || c.MemoryBytes != 6<<30 || c.CPUs != 6 {
		t.Fatalf("VMCost = %+v, want 6 VMs, 6GiB, 6 CPUs", c)
	}
	tests := []struct {
		name    string
		m       Machine
		fits    bool
		numbers []string // the refusal must say these
	}{
		{"roomy", Machine{MemAvailableBytes: 30 << 30, CPUs: 16}, true, nil},
		{"exactly", Machine{MemAvailableBytes: 6 << 30, CPUs: 6}, true, nil},
		{"this bed", Machine{MemAvailableBytes: 3<<30 + 400<<20, CPUs: 2}, false, // 3.3GiB: 512MiB each fits
			[]string{"6 local VMs need 6GiB", "3.3GiB available", `memory = "512MiB"`, "6 × 512MiB = 3GiB", "--only", "3 of these VMs fit"}},
		{"small", Machine{MemAvailableBytes: 1200 << 20, CPUs: 2}, false, // under 256MiB each: only --only helps
			[]string{"1.1GiB available", "1 of these VMs fit"}},
		{"none", Machine{MemAvailableBytes: 900 << 20, CPUs: 1}, false, []string{"not one VM of 1GiB fits"}},
	}
	var out strings.Builder
	for _, tt := range tests {
		err := p.VMCost.Fit(tt.m)
		var fe *FitError
		if tt.fits != (err == nil) || (err != nil && !errors.As(err, &fe)) {
			t.Errorf("%s: Fit = %v, want fits %v", tt.name, err, tt.fits)
		}
		for _, n := range tt.numbers {
			if err == nil || !strings.Contains(err.Error(), n) {
				t.Errorf("%s: refusal %v lacks %q", tt.name, err, n)
			}
		}
		if tt.name == "small" && strings.Contains(fmt.Sprint(err), "memory =") {
			t.Errorf("%s: suggests a memory under 256MiB (the least a VM boots with): %v", tt.name, err)
		}
		m := tt.m
		p.Machine = &m
		fmt.Fprintf(&out, "# %s\n%s\n", tt.name, p.vmCostText())
	}
	golden(t, "class-vms-machines.txt", []byte(out.String()))
}

func TestBytesText(t *testing.T) {
	for n, want := range map[int64]string{0: "0B", 1023: "1023B", 1 << 30: "1GiB", 3<<30 + 400<<20: "3.3GiB", 1<<20 - 1: "1023.9KiB", 1536 << 20: "1.5GiB"} {
		if got := BytesText(n); got != want {
			t.Errorf("BytesText(%d) = %q, want %q", n, got, want)
		}
	}
}
