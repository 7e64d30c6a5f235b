package main

import (
	"os"
	"slices"

	"github.com/rlab-dev/rlab/engine/image"
	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/engine/plan"
	"github.com/rlab-dev/rlab/engine/vm"
)

// assumedAccel is the accelerator the estimate assumes for local VMs:
// KVM only when RLAB_VM_ACCEL=kvm asks for it. Otherwise TCG, the slower
// one: whether KVM runs guests here only the run's boot probe tells
// (engine/vm; /dev/kvm can answer its ioctls on a machine where guests
// never boot under it, as on the project's), and the estimate then says
// what KVM would take.
func assumedAccel() string {
	if os.Getenv("RLAB_VM_ACCEL") == plan.AccelKVM {
		return plan.AccelKVM
	}
	return plan.AccelTCG
}

// restoredVM says whether the estimate counts a local VM as restored from a
// saved guest, by engine/vm's rule: unless RLAB_VM_RESTORE=0, every VM
// whose image has iproute2 (to take its identity) is restored.
func restoredVM(h *lab.Host) bool {
	if os.Getenv(vm.RestoreEnv) == "0" || h.VM == nil {
		return false
	}
	return slices.Contains(image.RecipeFor(h.VM.Image).Packages, "iproute2")
}
