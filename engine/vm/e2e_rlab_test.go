package vm

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/engine/image"
	"github.com/rlab-dev/rlab/engine/results"
)

// e2eBin skips unless the real-rxe bed is asked for, and returns the rlab
// binary under test ($RLAB_BIN, `make test-vm` sets it).
func e2eBin(t *testing.T) string {
	t.Helper()
	if os.Getenv("RLAB_VM_E2E") != "1" {
		t.Skip("real-rxe end-to-end test: set RLAB_VM_E2E=1 (root, qemu, mmdebstrap; see make test-vm)")
	}
	bin := os.Getenv("RLAB_BIN")
	if bin == "" {
		t.Skip("RLAB_BIN is not set (make test-vm sets it to the built rlab)")
	}
	return bin
}

// e2eImage builds (or finds cached) the VM image and returns the project
// root, where the labs are.
func e2eImage(ctx context.Context, t *testing.T) string {
	t.Helper()
	if _, err := image.Ensure(ctx, image.DefaultRecipe(""), image.Options{}); err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// TestE2ERlabRun runs the example labs with the real rlab binary
// ($RLAB_BIN, `make test-vm` sets it) on two local VMs and checks what a
// user would: every workload ok with non-zero samples that carry units, the
// capture holds RoCEv2 packets of the expected opcodes, the rxe devices were
// deleted at teardown, and no qemu is left.
func TestE2ERlabRun(t *testing.T) {
	bin := e2eBin(t)
	if err := exec.Command(bin, "run", "--help").Run(); err != nil {
		t.Skipf("%s has no working `run` command yet: %v", bin, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	root := e2eImage(ctx, t)
	tests := []struct {
		lab     string
		opcodes []int // BTH opcodes the lab's capture must hold
	}{
		// quickstart: ib_write_bw of 4 KiB..1 MiB at IB MTU 1024: WRITE First/Middle/Last and ACKs.
		{"quickstart", []int{6, 7, 8, 17}},
		{"operations-tour", nil}, // no capture in that lab
	}
	only := os.Getenv("RLAB_VM_LABS")
	for _, tt := range tests {
		if only != "" && !strings.Contains(","+only+",", ","+tt.lab+",") {
			continue
		}
		t.Run(tt.lab, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "run")
			keepOnFailure(t, out)
			cmd := rlabCommand(ctx, t, rlabLimit, bin, "run", "--out", out, filepath.Join("labs", tt.lab+".hcl"))
			cmd.Dir = root
			b, err := cmd.CombinedOutput()
			t.Logf("rlab run labs/%s.hcl:\n%s", tt.lab, b)
			checkNoQEMU(t, out)
			if _, serr := os.Stat(filepath.Join(out, "results.json")); serr == nil && tt.lab == "quickstart" {
				// The counters are recorded whatever else failed: check
				// them before a failed run ends the test.
				checkCounters(t, out)
			}
			if err != nil {
				t.Fatalf("rlab run: %v", err)
			}
			checkResults(t, out)
			checkRXETeardown(t, out)
			if tt.opcodes != nil {
				checkCaptures(t, out, tt.opcodes)
			}
		})
	}
}

func checkResults(t *testing.T, dir string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var run results.Run
	if err := json.Unmarshal(b, &run); err != nil {
		t.Fatalf("results.json: %v", err)
	}
	if run.Status != results.RunOK {
		t.Errorf("run status %q: %s", run.Status, run.Error)
	}
	if len(run.Workloads) == 0 {
		t.Fatal("results.json has no workloads")
	}
	for _, w := range run.Workloads {
		if w.Status != results.StatusOK {
			t.Errorf("workload %s: status %q: %s", w.Name, w.Status, w.Error)
		}
		n := 0
		for _, s := range run.Samples {
			if s.Meta.Workload != w.Name || s.Metric == "exit_code" || s.Metric == "duration" {
				continue
			}
			if s.Unit == "" {
				t.Errorf("workload %s: sample %s has no unit", w.Name, s.Metric)
			}
			if s.Value > 0 {
				n++
			}
		}
		if n == 0 {
			t.Errorf("workload %s (%s): no non-zero measured sample", w.Name, w.Tool)
		}
	}
}

// checkCounters: the kernel counters read around quickstart's workloads on
// real rxe: write_bw's rxe device sent RoCEv2 packets on both ends
// (hw_counters/sent_pkts > 0) and its netdev moved packets; the tcp
// baseline's netdevs did too; no rxe hw_counters or netdev statistics was
// unreadable.
func checkCounters(t *testing.T, dir string) {
	t.Helper()
	r, err := results.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, s := range r.Samples {
		if results.IsCounter(s) && len(s.Meta.Hosts) == 1 && len(s.Meta.Devices) == 1 {
			got[s.Meta.Workload+" "+s.Meta.Hosts[0]+" "+s.Metric] = s.Value
			if s.Value != 0 {
				t.Logf("counter %s %s %s %s = %g %s", s.Meta.Workload, s.Meta.Hosts[0], s.Meta.Devices[0], s.Metric, s.Value, s.Unit)
			}
		}
	}
	for _, host := range []string{"server", "client"} {
		for _, k := range []string{"write_bw " + host + " sent_pkts", "write_bw " + host + " rcvd_pkts", "write_bw " + host + " tx_packets",
			"write_bw " + host + " rx_packets", "tcp_baseline " + host + " tx_packets", "tcp_baseline " + host + " rx_bytes"} {
			if v, ok := got[k]; !ok || v <= 0 {
				t.Errorf("counter delta %s = %g (recorded: %v), want > 0", k, v, ok)
			}
		}
	}
	for _, w := range r.Workloads {
		for _, n := range w.CounterNotes {
			t.Logf("counter note %s: %+v", w.Name, n)
			if n.Problem == results.NoteUnreadable && (n.Source == "hw_counters" || n.Source == "statistics") {
				t.Errorf("workload %s: %s %s/%s unreadable on real rxe: %s", w.Name, n.Host, n.Source, n.Counter, n.Reason)
			}
		}
	}
}

// checkRXETeardown reads state.json: every rxe the run created is undone
// (on the run's own VMs: gone with the VM once it stopped, engine/run
// discard.go).
func checkRXETeardown(t *testing.T, dir string) {
	t.Helper()
	var st struct {
		Effects []struct {
			Host, Kind, ID  string
			Created, Undone bool
		} `json:"effects"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatalf("state.json: %v", err)
	}
	n := 0
	for _, e := range st.Effects {
		if e.Kind != "rxe" || !e.Created {
			continue
		}
		n++
		if !e.Undone {
			t.Errorf("rxe %s on %s was not deleted at teardown", e.ID, e.Host)
		}
	}
	if n == 0 {
		t.Error("state.json records no rxe device created")
	}
}

// checkNoQEMU: the VMs state.json names are all gone.
func checkNoQEMU(t *testing.T, dir string) {
	t.Helper()
	var st struct {
		VMs State `json:"vms"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if err != nil {
		t.Logf("no state.json: %v", err)
		return
	}
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatalf("state.json: %v", err)
	}
	if len(st.VMs.VMs) == 0 {
		t.Error("state.json records no VMs")
	}
	for _, v := range st.VMs.VMs {
		if isOurQEMU(v) {
			t.Errorf("qemu of %s (pid %d) still running after rlab run", v.Host, v.PID)
			_ = syscall.Kill(v.PID, syscall.SIGKILL)
		}
	}
}

func checkCaptures(t *testing.T, dir string, opcodes []int) {
	t.Helper()
	counts := map[int]int{}
	total := 0
	err := filepath.WalkDir(filepath.Join(dir, "hosts"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.Contains(d.Name(), ".pcap") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		c, n, err := bthOpcodes(b)
		if err != nil {
			return errors.Join(errors.New(p), err)
		}
		total += n
		for k, v := range c {
			counts[k] += v
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("captures: %d RoCEv2 packets, opcodes %v", total, counts)
	if total == 0 {
		t.Fatal("no RoCEv2 (UDP 4791) packet in the run's captures")
	}
	for _, op := range opcodes {
		if counts[op] == 0 {
			t.Errorf("no packet with BTH opcode %d in the captures (got %v)", op, counts)
		}
	}
}
