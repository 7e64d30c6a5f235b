package run

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/engine/plan"
	"github.com/rlab-dev/rlab/engine/runstate"
	"github.com/rlab-dev/rlab/steps"
)

// TestDownFromState undoes what a crashed run left, from state.json alone:
// a process still running is stopped (only when its pid still runs that
// program), an rxe device it created is deleted, one it found is left alone;
// a second down does nothing and connects to nobody.
func TestDownFromState(t *testing.T) {
	sleeper := exec.Command("sleep", "300")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- sleeper.Wait() }()
	t.Cleanup(func() { sleeper.Process.Kill() })

	// A pid that does not run what the journal says must not be killed.
	bystander := exec.Command("sleep", "300")
	if err := bystander.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bystander.Process.Kill(); bystander.Wait() })

	dir := t.TempDir()
	st := runstate.State{Lab: "t", RunID: "t-1", Started: time.Now(),
		Hosts: []runstate.Host{{Name: "a", Slug: "a", Address: "127.0.0.1", Port: 22, Connected: true}},
		Effects: []steps.Effect{
			{Host: "a", Type: "proc", ID: "wl.x.server.r0", Argv: []string{"sleep", "300"}, PID: sleeper.Process.Pid},
			{Host: "a", Type: "proc", ID: "wl.y.server.r0", Argv: []string{"ib_write_bw", "-d", "rxe0"}, PID: bystander.Process.Pid},
			{Host: "a", Type: "rxe", ID: "rxe_ours", Netdev: "eth1", Created: true},
			{Host: "a", Type: "rxe", ID: "rxe_found", Netdev: "eth2", Created: false},
			{Host: "a", Type: "proc", ID: "done", Argv: []string{"true"}, Undone: true},
		},
	}
	if _, err := runstate.Create(dir, st); err != nil {
		t.Fatal(err)
	}
	bed := newPipeBed(t)
	res, err := Down(context.Background(), dir, DownOptions{Connector: bed})
	if err != nil {
		t.Fatalf("down: %v", err)
	}
	select {
	case <-exited:
	case <-time.After(20 * time.Second):
		t.Fatal("down left the run's process running")
	}
	if err := bystander.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("down killed pid %d, which no longer ran what the journal recorded: %v", bystander.Process.Pid, err)
	}
	got := strings.Join(res.Undone, "\n")
	for _, want := range []string{"a: proc wl.x.server.r0", "a: rxe rxe_ours"} {
		if !strings.Contains(got, want) {
			t.Errorf("undone = %q, want %q", got, want)
		}
	}
	// Recorded without a start time (an older state.json): matched by
	// name, as before, and said so.
	if !strings.Contains(got, "a: proc wl.x.server.r0 (pid matched by program name only: state.json has no start time)") {
		t.Errorf("undone = %q, want the process matched by name only said so", got)
	}
	// This machine has no rxe_ours (no RDMA at all): the agent finds
	// nothing to delete, and down says so.
	if !strings.Contains(got+"\n", "a: rxe rxe_ours (already gone)\n") {
		t.Errorf("undone = %q, want rxe_ours listed as already gone", got)
	}
	if strings.Contains(got, "rxe_found") || strings.Contains(got, "a: proc done") {
		t.Errorf("undone = %q: touched what was not ours or already undone", got)
	}
	after := readState(t, dir)
	if after.TornDown == nil {
		t.Error("state.json: torn_down not set")
	}
	for _, e := range after.Effects {
		if !e.Undone && e.ID != "rxe_found" {
			t.Errorf("still pending after down: %+v", e)
		}
	}

	// Twice is harmless: nothing left, nobody contacted.
	bed2 := newPipeBed(t)
	res, err = Down(context.Background(), dir, DownOptions{Connector: bed2})
	if err != nil || len(res.Undone) != 0 || len(bed2.all) != 0 {
		t.Errorf("second down: undone %v, err %v, connected %d hosts", res.Undone, err, len(bed2.all))
	}
}

func TestDownNotARunDir(t *testing.T) {
	_, err := Down(context.Background(), t.TempDir(), DownOptions{Connector: newPipeBed(t)})
	if err == nil || !strings.Contains(err.Error(), "state") {
		t.Errorf("down of an empty dir: %v", err)
	}
}

// TestRunAgentLost kills one host's agent during its workload: exit 2, the
// workload fails naming the host, the other host's workload and artifacts
// are kept, and the lost host's leftovers stay pending for `rlab down`.
func TestRunAgentLost(t *testing.T) {
	bed := newPipeBed(t)
	l := loadLab(t, twoHosts+`
workload "long" {
  tool = "exec"
  host = host.a
  command = ["sleep", "30"]
}
workload "other" {
  tool = "exec"
  host = host.b
  command = ["echo", "b was here"]
}
workload "later" {
  tool = "exec"
  host = host.a
  command = ["true"]
}`)
	opts := Options{Connector: bed, NoReport: true, Out: filepath.Join(t.TempDir(), "r"), OnEvent: func(e Event) {
		if e.Type == "step.start" && e.Workload == "long" {
			go func() { time.Sleep(300 * time.Millisecond); bed.host("a").kill() }()
		}
	}}
	res := runPlanned(context.Background(), t, l, plan.Options{}, opts)
	if res.Code != ExitInfra {
		t.Fatalf("code %d, err %v", res.Code, res.Err)
	}
	status := map[string]string{}
	for _, o := range res.Outcomes {
		status[o.Workload] = o.Status
	}
	if status["long"] != "failed" || status["other"] != "ok" || status["later"] != "skipped" {
		t.Errorf("statuses = %v", status)
	}
	if !strings.Contains(res.Err.Error(), `"a"`) {
		t.Errorf("error does not name host a: %v", res.Err)
	}
	b, err := os.ReadFile(filepath.Join(res.Dir, "hosts", "b", "logs", "wl.other.exec.r0.stdout"))
	if err != nil || string(b) != "b was here\n" {
		t.Errorf("host b's artifacts: %q, %v", b, err)
	}
	st := readState(t, res.Dir)
	pending := 0
	for _, e := range st.Effects {
		if !e.Undone {
			pending++
			if e.Host != "a" {
				t.Errorf("pending on a host that was not lost: %+v", e)
			}
		}
	}
	if pending == 0 {
		t.Error("the lost host's process is not left pending for rlab down")
	}
	// rlab down finishes it (the in-process agent already stopped it; the
	// pid no longer runs sleep, so down only records it).
	if _, err := Down(context.Background(), res.Dir, DownOptions{Connector: newPipeBed(t)}); err != nil {
		t.Errorf("down after a lost agent: %v", err)
	}
	for _, e := range readState(t, res.Dir).Effects {
		if !e.Undone {
			t.Errorf("pending after down: %+v", e)
		}
	}
}

// TestDownSparesReusedPID: a process whose pid the journal recorded with
// another start time (the run's process ended and the pid was reused by an
// unrelated one running the same program) is not signalled, and down says
// so; the same process recorded with its own start time is stopped; one of
// another boot is left as gone.
func TestDownSparesReusedPID(t *testing.T) {
	bootB, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		t.Skip("no boot id")
	}
	boot := strings.TrimSpace(string(bootB))
	start := func() (*exec.Cmd, chan error, proto.ProcIdentity) {
		cmd := exec.Command("sleep", "300")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		t.Cleanup(func() { cmd.Process.Kill() })
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid))
		if err != nil {
			t.Fatal(err)
		}
		f := strings.Fields(string(b)) // "sleep" has no spaces: field 22 is f[21]
		n, err := strconv.ParseUint(f[21], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return cmd, exited, proto.ProcIdentity{StartTicks: n, BootID: boot}
	}
	reused, reusedExit, reusedID := start()
	ours, oursExit, oursID := start()
	otherBoot, otherBootExit, otherBootID := start()
	reusedID.StartTicks++ // the run's process started at another time
	otherBootID.BootID = "00000000-0000-0000-0000-000000000000"

	dir := t.TempDir()
	st := runstate.State{Lab: "t", RunID: "t-1", Started: time.Now(),
		Hosts: []runstate.Host{{Name: "a", Slug: "a", Address: "127.0.0.1", Port: 22, Connected: true}},
		Effects: []steps.Effect{
			{Host: "a", Type: "proc", ID: "wl.reused", Argv: []string{"sleep", "300"}, PID: reused.Process.Pid, ProcIdentity: reusedID},
			{Host: "a", Type: "proc", ID: "wl.ours", Argv: []string{"sleep", "300"}, PID: ours.Process.Pid, ProcIdentity: oursID},
			{Host: "a", Type: "proc", ID: "wl.otherboot", Argv: []string{"sleep", "300"}, PID: otherBoot.Process.Pid, ProcIdentity: otherBootID},
		},
	}
	if _, err := runstate.Create(dir, st); err != nil {
		t.Fatal(err)
	}
	res, err := Down(context.Background(), dir, DownOptions{Connector: newPipeBed(t)})
	if err != nil {
		t.Fatalf("down: %v", err)
	}
	select {
	case <-oursExit:
	case <-time.After(20 * time.Second):
		t.Fatal("down left the run's own process (same start time) running")
	}
	for _, p := range []struct {
		name   string
		exited chan error
	}{{"reused", reusedExit}, {"other boot", otherBootExit}} {
		select {
		case err := <-p.exited:
			t.Errorf("down killed the %s process, not the run's: %v", p.name, err)
		default:
		}
	}
	got := strings.Join(res.Undone, "\n") + "\n"
	for _, want := range []string{
		"a: proc wl.reused (gone; pid reused by another process, left alone)\n",
		"a: proc wl.ours\n",
		"a: proc wl.otherboot (gone; the host rebooted since)\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("undone:\n%swant the line %q", got, want)
		}
	}
}
