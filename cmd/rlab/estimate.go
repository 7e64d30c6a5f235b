package main

import (
	"os"

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

// assumedRestore says whether the estimate counts local VMs as restored from
// saved guests, as engine/vm does unless RLAB_VM_RESTORE=0.
func assumedRestore() bool {
	return os.Getenv(vm.RestoreEnv) != "0"
}
