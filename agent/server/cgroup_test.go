package server

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
)

// detached starts, through the agent, a workload that leaves a process
// behind outside its process group and session (setsid -f), as a daemon
// does; the left process is a sleep with a unique duration, found in /proc.
func detached(t *testing.T, c *client, handle string) string {
	t.Helper()
	mark := fmt.Sprintf("%d.%06d", 1000+os.Getpid()%1000, time.Now().Nanosecond()/1000)
	var st proto.ProcStarted
	c.mustCall(proto.MethodProcStart, proto.ProcStartParams{Handle: handle, Argv: []string{"setsid", "-f", "sleep", mark}}, &st)
	var r proto.ProcResult
	c.mustCall(proto.MethodProcWait, proto.ProcWaitParams{Handle: handle, TimeoutMs: 20000}, &r)
	if r.ExitCode != 0 {
		t.Fatalf("setsid -f sleep: exit %d: %s", r.ExitCode, r.Stderr)
	}
	return mark
}

// sleepers lists the pids of live processes running `sleep mark`.
func sleepers(mark string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && string(b) == "sleep\x00"+mark+"\x00" && !processGone(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// waitNoSleeper waits (bounded) for the kernel to finish killing; not a
// timing assertion: a survivor stays for the whole bound.
func waitNoSleeper(t *testing.T, mark, when string) {
	t.Helper()
	for range 250 {
		if len(sleepers(mark)) == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	pids := sleepers(mark)
	t.Errorf("%s: detached process(es) %v (sleep %s) still running", when, pids, mark)
	for _, p := range pids {
		exec.Command("kill", "-9", strconv.Itoa(p)).Run()
	}
}

// waitSleeper waits (bounded) for setsid -f's child to have become the sleep.
func waitSleeper(mark string) bool {
	for range 250 {
		if len(sleepers(mark)) > 0 {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

func needCgroups(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}
	if cgroups.mode() != TrackCgroup {
		t.Skipf("no workload cgroups on this host (%s): the agent keeps to process groups", cgroups.why)
	}
}

// TestDetachedStopped: what a workload detaches (setsid -f) is stopped when
// the workload ends, when the controller goes away mid-run (stdin closed),
// and by a cleanup naming the run after its agent was killed (rlab down).
// Before, each sleep outlived everything.
func TestDetachedStopped(t *testing.T) {
	needCgroups(t)
	t.Run("workload ends", func(t *testing.T) {
		c, _ := startAgent(t, Options{})
		mark := detached(t, c, "daemon")
		waitNoSleeper(t, mark, "after the workload ended")
		c.close()
	})
	t.Run("controller gone", func(t *testing.T) {
		c, _ := startAgent(t, Options{})
		mark := fmt.Sprintf("%d.%06d", 2000+os.Getpid()%1000, time.Now().Nanosecond()/1000)
		var st proto.ProcStarted
		// A workload still running that has detached a child.
		c.mustCall(proto.MethodProcStart, proto.ProcStartParams{Handle: "running", Argv: []string{"sh", "-c", "setsid -f sleep " + mark + "; echo detached; exec sleep 1000"},
			Ready: &proto.Ready{OutputRegex: "detached"}}, &st)
		if !waitSleeper(mark) {
			t.Fatal("the detached sleep is not running")
		}
		c.close()
		waitNoSleeper(t, mark, "after the agent's stdin closed")
	})
	t.Run("agent killed, then down", func(t *testing.T) {
		self, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		run := fmt.Sprintf("cgtest-%d-%d", os.Getpid(), time.Now().UnixNano())
		wd := filepath.Join(t.TempDir(), run, "h1")
		cmd := exec.Command(self)
		in, out, done := helperServe(t, cmd, wd)
		c := newClient(t, in, out, done)
		mark := fmt.Sprintf("%d.%06d", 3000+os.Getpid()%1000, time.Now().Nanosecond()/1000)
		var st proto.ProcStarted
		c.mustCall(proto.MethodProcStart, proto.ProcStartParams{Handle: "running", Argv: []string{"sh", "-c", "setsid -f sleep " + mark + "; echo detached; exec sleep 1000"},
			Ready: &proto.Ready{OutputRegex: "detached"}}, &st)
		if !waitSleeper(mark) {
			t.Fatal("the detached sleep is not running")
		}
		var f proto.Facts
		c.mustCall(proto.MethodFacts, nil, &f)
		if f.ProcTracking != TrackCgroup {
			t.Errorf("facts say proc_tracking %q, want %q", f.ProcTracking, TrackCgroup)
		}
		cmd.Process.Kill() // SIGKILL: no cleanup; Pdeathsig takes only the direct child
		waitGone(t, cmd.Process.Pid)
		waitGone(t, st.PID)
		if len(sleepers(mark)) == 0 {
			t.Fatal("the detached sleep died with the agent: nothing left for down to prove")
		}
		down, _ := startAgent(t, Options{WorkDir: filepath.Join(t.TempDir(), run+"-down", "h1")})
		var cr proto.CleanupResult
		down.mustCall(proto.MethodCleanup, proto.CleanupParams{Run: run}, &cr)
		if len(cr.Errors) > 0 {
			t.Errorf("cleanup: %v", cr.Errors)
		}
		waitNoSleeper(t, mark, "after cleanup of the run (rlab down)")
		if _, err := os.Stat(cgroups.runDir(os.Geteuid(), run)); !os.IsNotExist(err) {
			t.Errorf("the run's cgroup folder is left: %v", err)
		}
		down.close()
	})
}

// TestCleanupRunRefusesPaths: the run id of a cleanup is one path element.
func TestCleanupRunRefusesPaths(t *testing.T) {
	c, _ := startAgent(t, Options{})
	for _, run := range []string{"..", "../..", "a/b", "/"} {
		var cr proto.CleanupResult
		c.mustCall(proto.MethodCleanup, proto.CleanupParams{Run: run}, &cr)
		if len(cr.Errors) == 0 || !strings.Contains(strings.Join(cr.Errors, " "), "run id") {
			t.Errorf("cleanup of run %q: errors %v, want the run id refused", run, cr.Errors)
		}
	}
	c.close()
}

// BenchmarkProcStart: proc.start and proc.wait of `true`, in a cgroup of its
// own (made, entered at birth, killed and removed) and by process group only.
func BenchmarkProcStart(b *testing.B) {
	for _, mode := range []string{TrackCgroup, TrackProcessGroup} {
		b.Run(mode, func(b *testing.B) {
			if mode == TrackCgroup && cgroups.mode() != TrackCgroup {
				b.Skip("no workload cgroups here")
			}
			was := cgroups.bad.Load()
			cgroups.bad.Store(mode == TrackProcessGroup)
			defer cgroups.bad.Store(was)
			c, _ := startAgent(b, Options{})
			defer c.close()
			for i := 0; b.Loop(); i++ {
				h := fmt.Sprintf("b%d", i)
				var st proto.ProcStarted
				c.mustCall(proto.MethodProcStart, proto.ProcStartParams{Handle: h, Argv: []string{"true"}}, &st)
				var r proto.ProcResult
				c.mustCall(proto.MethodProcWait, proto.ProcWaitParams{Handle: h}, &r)
			}
		})
	}
}
