package main

import (
	"testing"

	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/engine/vm"
)

// TestRestoredVM: the estimate counts a local VM as restored by engine/vm's
// rule: its image has iproute2 (the full images, not the minimal ones) and
// RLAB_VM_RESTORE is not 0; a host that is not a VM is never restored.
func TestRestoredVM(t *testing.T) {
	for _, tc := range []struct {
		env, image string
		vm, want   bool
	}{
		{"", "", true, true},
		{"", "trixie", true, true},
		{"", "minimal", true, false},
		{"", "trixie-minimal", true, false},
		{"1", "bookworm", true, true},
		{"0", "", true, false},
		{"", "", false, false},
	} {
		t.Setenv(vm.RestoreEnv, tc.env)
		h := &lab.Host{Name: "h"}
		if tc.vm {
			h.VM = &lab.VM{Image: tc.image}
		}
		if got := restoredVM(h); got != tc.want {
			t.Errorf("%s=%q image %q vm %v: restored %v, want %v", vm.RestoreEnv, tc.env, tc.image, tc.vm, got, tc.want)
		}
	}
}
