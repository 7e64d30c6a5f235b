package vm

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/engine/termsafe"
)

// TestPanicSummary reads guests' consoles for a kernel panic. The first
// case is a real one: the server VM's console of CI's failed stop 36 (a
// Debian trixie guest, kernel 6.12.118, whose rdma_rxe double-faulted while
// ib_write_bw --write_with_imm ran), kept whole in testdata.
func TestPanicSummary(t *testing.T) {
	real, err := os.ReadFile("testdata/console-trixie-rxe-double-fault.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, console, want string
	}{
		{"trixie rxe double fault", string(real),
			"Oops: double fault: 0000 [#1] PREEMPT SMP NOPTI in kmem_cache_alloc_node_noprof+0x6e/0x310, called from rxe_init_packet+0xa0/0x150 [rdma_rxe] (Kernel panic - not syncing: Fatal exception in interrupt)"},
		{"a boot that went well", "[    0.000000] Linux version 6.1.0-28-amd64\n[    1.2] infiniband rxe_eth1: set active\n", ""},
		{"a NULL dereference, no module frame",
			"[  12.1] BUG: kernel NULL pointer dereference, address: 0000000000000008\n[  12.2] RIP: 0010:ib_free_cq+0x10/0x90\n[  12.3] Call Trace:\n[  12.4]  ? __die+0x20/0x70\n[  12.5] Kernel panic - not syncing: Fatal exception\n",
			"BUG: kernel NULL pointer dereference, address: 0000000000000008 in ib_free_cq+0x10/0x90 (Kernel panic - not syncing: Fatal exception)"},
		{"a panic without an oops", "[ 3.0] Kernel panic - not syncing: VFS: Unable to mount root fs on unknown-block(0,0)\n",
			"Kernel panic - not syncing: VFS: Unable to mount root fs on unknown-block(0,0)"},
		{"guest text with escapes", "[ 1.0] Oops: \x1b]0;owned\x07 0000\n[ 1.1] Kernel panic - not syncing: x\n",
			`Oops: \x1b]0;owned\x07 0000 (Kernel panic - not syncing: x)`},
	} {
		got := PanicSummary(strings.Split(tt.console, "\n"))
		if got != tt.want {
			t.Errorf("%s:\n got %q\nwant %q", tt.name, got, tt.want)
		}
	}
}

// TestDiedReadsTheConsole: a VM whose qemu has exited is said to have
// stopped, with its console's panic; one still running is not; a wait
// bounds the one for a qemu not reaped yet.
func TestDiedReadsTheConsole(t *testing.T) {
	dir := t.TempDir()
	real, err := os.ReadFile("testdata/console-trixie-rxe-double-fault.txt")
	if err != nil {
		t.Fatal(err)
	}
	console := dir + "/vm/server/console.log"
	if err := os.MkdirAll(dir+"/vm/server", 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(console, real, 0o600); err != nil {
		t.Fatal(err)
	}
	gone, up := make(chan struct{}), make(chan struct{})
	close(gone)
	s := &Set{Dir: dir + "/vm", VMs: []*VM{
		{Machine: Machine{Name: "server"}, Console: console, exited: gone},
		{Machine: Machine{Name: "client"}, Console: console, exited: up},
	}}
	got := s.Died("server", time.Millisecond)
	for _, want := range []string{"its VM stopped (qemu exited)", "the guest's kernel panicked: Oops: double fault", "[rdma_rxe]", "its console is in vm/server/console.log"} {
		if !strings.Contains(got, want) {
			t.Errorf("Died(server) = %q, want it to say %q", got, want)
		}
	}
	if got := s.Died("client", time.Millisecond); got != "" {
		t.Errorf("Died(client), whose qemu runs = %q, want \"\"", got)
	}
	if got := s.Died("nobody", time.Millisecond); got != "" {
		t.Errorf("Died(nobody) = %q, want \"\"", got)
	}
}

func FuzzPanicSummary(f *testing.F) {
	real, _ := os.ReadFile("testdata/console-trixie-rxe-double-fault.txt")
	f.Add(string(real))
	f.Add("[ 1.0] Oops: x\n[ 1.1] RIP: 0010:f+0x1/0x2\n f+0x1/0x2 [m]\n")
	f.Fuzz(func(t *testing.T, s string) {
		got := PanicSummary(strings.Split(s, "\n"))
		if !termsafe.Safe(got) {
			t.Fatalf("unsafe summary %q", got)
		}
		if len(got) > 4*(200+3)+64 {
			t.Fatalf("summary of %d bytes", len(got))
		}
	})
}

// TestRxePanicked: the VM tests' retry (TestE2ETrixieWriteImm) is taken
// only for what rlab says of a guest whose rdma_rxe panicked.
func TestRxePanicked(t *testing.T) {
	real, err := os.ReadFile("testdata/console-trixie-rxe-double-fault.txt")
	if err != nil {
		t.Fatal(err)
	}
	said := `host "server": its VM stopped (qemu exited): the guest's kernel panicked: ` + PanicSummary(strings.Split(string(real), "\n"))
	if !rxePanicked(said) {
		t.Errorf("rxePanicked(%q) = false", said)
	}
	for _, s := range []string{
		`host "server": its VM stopped (qemu exited): the guest's kernel panicked: Kernel panic - not syncing: sysrq triggered crash`,
		"agent on host \"server\" lost: agent lost: its session ended",
		"workload imm_bw: timed out after 5m0s [rdma_rxe]",
	} {
		if rxePanicked(s) {
			t.Errorf("rxePanicked(%q) = true", s)
		}
	}
}
