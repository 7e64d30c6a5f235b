package plan

import (
	"fmt"
	"strings"

	"github.com/rlab-dev/rlab/kinds"
)

// VMCost is what a plan's local VMs take from the machine that boots them:
// how many, and their guests' memory and vCPUs summed. qemu's own memory
// (its code, device models, the overlay's cache) comes on top of the
// guests'; a guest touches its memory as it uses it, so the sum is what
// the VMs may take, not what they take at boot.
type VMCost struct {
	VMs         int   `json:"vms"`
	MemoryBytes int64 `json:"memory_bytes"`
	CPUs        int   `json:"cpus"`
	// MinMemoryBytes is the smallest memory of one of these VMs, for the
	// fix a refusal suggests.
	MinMemoryBytes int64 `json:"-"`
}

// Machine is what the machine that would boot the VMs has for them:
// /proc/meminfo's MemAvailable and the CPUs it may run on (engine/vm
// ReadMachine reads them; tests give their own).
type Machine struct {
	MemAvailableBytes int64 `json:"mem_available_bytes"`
	CPUs              int   `json:"cpus"`
}

// MinVMMemory is the least memory a VM may have (the lab refuses less).
const MinVMMemory = 256 << 20

// vmCost sums the VMs the run boots: the working hosts with a vm block.
func (p *Plan) vmCost() *VMCost {
	c := &VMCost{}
	for _, h := range p.Hosts {
		if h.JumpOnly || h.Ref == nil || h.Ref.VM == nil {
			continue
		}
		c.VMs++
		c.MemoryBytes += h.Ref.VM.MemoryBytes
		c.CPUs += h.Ref.VM.CPUs
		if c.MinMemoryBytes == 0 || h.Ref.VM.MemoryBytes < c.MinMemoryBytes {
			c.MinMemoryBytes = h.Ref.VM.MemoryBytes
		}
	}
	if c.VMs == 0 {
		return nil
	}
	return c
}

// FitError is a set of VMs that does not fit this machine: it says the
// numbers and what to change.
type FitError struct {
	Cost    VMCost
	Machine Machine
}

func (e *FitError) Error() string {
	c, m := e.Cost, e.Machine
	s := fmt.Sprintf("%d local VMs need %s of guest memory in all, but this machine has %s available (MemAvailable)",
		c.VMs, kinds.SizeText(c.MemoryBytes), BytesText(m.MemAvailableBytes))
	var fixes []string
	// The memory each VM could have for all of them to fit, down to a
	// multiple of 128MiB, as a lab would write it.
	if per := m.MemAvailableBytes / int64(c.VMs) / (128 << 20) * (128 << 20); per >= MinVMMemory && per < c.MinMemoryBytes {
		fixes = append(fixes, fmt.Sprintf("set memory = %q in the vm blocks (%d × %s = %s)", kinds.SizeText(per), c.VMs, kinds.SizeText(per), BytesText(int64(c.VMs)*per)))
	}
	if n := m.MemAvailableBytes / c.MinMemoryBytes; n >= 1 {
		fixes = append(fixes, fmt.Sprintf("run part of the lab at a time with --only (student keys or workloads): %d of these VMs fit at once", n))
	} else {
		fixes = append(fixes, fmt.Sprintf("free memory: not one VM of %s fits", kinds.SizeText(c.MinMemoryBytes)))
	}
	return s + "; " + strings.Join(fixes, ", or ")
}

// Fit says whether the VMs fit m: nil, or a *FitError. Memory decides:
// guests whose memory passes what is available get the kernel's OOM
// killer mid-run. More vCPUs than CPUs is slow, not fatal (Fit leaves
// that to the plan's words).
func (c *VMCost) Fit(m Machine) error {
	if c == nil || m.MemAvailableBytes <= 0 || c.MemoryBytes <= m.MemAvailableBytes {
		return nil
	}
	return &FitError{Cost: *c, Machine: m}
}

// BytesText is a byte count in the largest binary unit it reaches, cut (not
// rounded up) to one decimal: "3.4GiB". What is available is not a whole
// number of MiB, as a lab's sizes are.
func BytesText(n int64) string {
	for _, u := range []struct {
		name string
		v    int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.v {
			tenths := n * 10 / u.v
			if tenths%10 == 0 {
				return fmt.Sprintf("%d%s", tenths/10, u.name)
			}
			return fmt.Sprintf("%d.%d%s", tenths/10, tenths%10, u.name)
		}
	}
	return fmt.Sprintf("%dB", n)
}

// vmCostText is the plan's paragraph on the local VMs.
func (p *Plan) vmCostText() string {
	c := p.VMCost
	if c == nil {
		return ""
	}
	s := fmt.Sprintf("Local VMs: %d, with %s of guest memory and %d vCPUs in all (qemu's own memory comes on top).\n",
		c.VMs, kinds.SizeText(c.MemoryBytes), c.CPUs)
	m := p.Machine
	if m == nil {
		return s
	}
	s += fmt.Sprintf("This machine: %s available (MemAvailable), %s: ", BytesText(m.MemAvailableBytes), plural(m.CPUs, "CPU"))
	if err := c.Fit(*m); err != nil {
		s += "they do not fit, and rlab run refuses to boot them: " + err.Error() + ".\n"
	} else {
		s += "they fit.\n"
	}
	if m.CPUs > 0 && c.CPUs > m.CPUs {
		s += fmt.Sprintf("%d vCPUs on %s: the guests share them, so boots and workloads run slower (under TCG each vCPU is a busy thread); if boots time out, boot them in waves with rlab run --parallel %d, or raise boot_timeout.\n", c.CPUs, plural(m.CPUs, "CPU"), m.CPUs)
	}
	return s
}
