package server

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
)

// sleeper is a `sleep` the test started as the leader of its own group.
type sleeper struct {
	cmd    *exec.Cmd
	exited chan struct{}
	id     proto.ProcIdentity
}

func startSleeper(t *testing.T, cred *syscall.Credential) *sleeper {
	t.Helper()
	cmd := exec.Command("sleep", "300")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: cred}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return watchSleeper(t, cmd)
}

func watchSleeper(t *testing.T, cmd *exec.Cmd) *sleeper {
	s := &sleeper{cmd: cmd, exited: make(chan struct{}), id: procIdentity(cmd.Process.Pid)}
	go func() { cmd.Wait(); close(s.exited) }()
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Process.Kill() })
	return s
}

func (s *sleeper) alive() bool {
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

func (s *sleeper) waitExit(t *testing.T, what string) {
	t.Helper()
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: still running 10 s after proc.signal", what)
	}
}

// TestProcSignal: proc.signal stops a process only while it is the one
// named (start time, boot, program), with its group, and a root agent
// working for a user signals only what that user could.
func TestProcSignal(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: a root agent working for a user, processes of two users")
	}
	c, _ := startAgent(t, Options{})
	call := func(p proto.ProcSignalParams) (proto.ProcSignalResult, *proto.Error) {
		var r proto.ProcSignalResult
		e := c.call(proto.MethodProcSignal, p, &r)
		return r, e
	}
	t.Run("same process, with its group", func(t *testing.T) {
		// sh leads the group; its sleep child is in it.
		cmd := exec.Command("sh", "-c", "sleep 300 & echo $!; wait")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		var out bytes.Buffer
		cmd.Stdout = &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		s := watchSleeper(t, cmd)
		var child int
		for i := 0; i < 100 && child == 0; i++ {
			time.Sleep(20 * time.Millisecond)
			child, _ = strconv.Atoi(strings.TrimSpace(out.String()))
		}
		r, e := call(proto.ProcSignalParams{PID: cmd.Process.Pid, ProcIdentity: s.id, Program: "sh", Group: true})
		if e != nil || !r.Signalled || !r.Group {
			t.Fatalf("got %+v, %v; want signalled with its group", r, e)
		}
		s.waitExit(t, "the group leader")
		for i := 0; i < 100 && syscall.Kill(child, 0) == nil; i++ {
			time.Sleep(50 * time.Millisecond)
		}
		if child == 0 || syscall.Kill(child, 0) == nil {
			t.Errorf("the leader's child (pid %d) outlived the group's signal", child)
		}
	})
	for _, tc := range []struct {
		name string
		edit func(*proto.ProcSignalParams)
		gone string
	}{
		{"other start time", func(p *proto.ProcSignalParams) { p.StartTicks++ }, proto.GoneReused},
		{"other boot", func(p *proto.ProcSignalParams) { p.BootID = "00000000-0000-0000-0000-000000000000" }, proto.GoneRebooted},
		{"other program", func(p *proto.ProcSignalParams) { p.Program = "iperf3" }, proto.GoneOtherProgram},
		{"other program, no start time", func(p *proto.ProcSignalParams) { p.ProcIdentity, p.Program = proto.ProcIdentity{}, "iperf3" }, proto.GoneOtherProgram},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startSleeper(t, nil)
			p := proto.ProcSignalParams{PID: s.cmd.Process.Pid, ProcIdentity: s.id, Program: "sleep", Group: true}
			tc.edit(&p)
			r, e := call(p)
			if e != nil || r.Signalled || r.Gone != tc.gone {
				t.Errorf("got %+v, %v; want left alone as %q", r, e, tc.gone)
			}
			time.Sleep(100 * time.Millisecond)
			if !s.alive() {
				t.Errorf("the process was signalled")
			}
		})
	}
	t.Run("by program name alone", func(t *testing.T) {
		s := startSleeper(t, nil)
		r, e := call(proto.ProcSignalParams{PID: s.cmd.Process.Pid, Program: "sleep"})
		if e != nil || !r.Signalled {
			t.Fatalf("got %+v, %v; want signalled", r, e)
		}
		s.waitExit(t, "sleep")
	})
	t.Run("as the owner", func(t *testing.T) {
		const nobody = 65534
		co, _ := startAgent(t, Options{Owner: &Owner{UID: nobody, GID: nobody}, WorkDir: ownedTempDir(t, nobody)})
		root := startSleeper(t, nil)
		var r proto.ProcSignalResult
		e := co.call(proto.MethodProcSignal, proto.ProcSignalParams{PID: root.cmd.Process.Pid, ProcIdentity: root.id, Group: true}, &r)
		if e == nil || e.Code != proto.CodePermission {
			t.Errorf("a root process signalled by a root agent working for uid %d: %+v, %v; want %s", nobody, r, e, proto.CodePermission)
		}
		time.Sleep(100 * time.Millisecond)
		if !root.alive() {
			t.Fatal("a root agent working for a user stopped a root process")
		}
		users := startSleeper(t, &syscall.Credential{Uid: nobody, Gid: nobody})
		e = co.call(proto.MethodProcSignal, proto.ProcSignalParams{PID: users.cmd.Process.Pid, ProcIdentity: users.id, Group: true}, &r)
		if e != nil || !r.Signalled {
			t.Fatalf("the user's own process: %+v, %v; want signalled", r, e)
		}
		users.waitExit(t, "the user's sleep")
		// The agent itself keeps root: its thread was the only one dropped.
		if os.Geteuid() != 0 {
			t.Fatal("the agent lost root")
		}
	})
}

// ownedTempDir is a fresh folder owned by uid, for an agent working for it.
func ownedTempDir(t testing.TB, uid int) string {
	d := t.TempDir()
	for _, p := range []string{filepath.Dir(d), d} { // the user reaches it, as a home's parents let them
		os.Chmod(p, 0o755)
	}
	wd := d + "/wd"
	if err := os.Mkdir(wd, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(wd, uid, uid); err != nil {
		t.Fatal(err)
	}
	return wd
}

// TestProcSignalPidReusedAfterCheck is the race rlab down had left: the
// process is checked (start time, boot), then it exits and another takes
// its pid (and makes it its group), then the signal is sent. Through the
// pidfd, the signal finds the checked process gone and the newcomer is left
// alone; `kill -TERM -- -PID`, as down sent it before, stops the newcomer
// and its group.
func TestProcSignalPidReusedAfterCheck(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: /proc/sys/kernel/ns_last_pid makes the next process take a chosen pid")
	}
	c, _ := startAgent(t, Options{})
	old := startSleeper(t, nil)
	pid := old.cmd.Process.Pid
	var newcomer *sleeper
	testHookSignalChecked = func(int) {
		old.cmd.Process.Kill()
		<-old.exited // reaped: the pid is free
		newcomer = spawnWithPID(t, pid)
	}
	t.Cleanup(func() { testHookSignalChecked = nil })
	var r proto.ProcSignalResult
	if e := c.call(proto.MethodProcSignal, proto.ProcSignalParams{PID: pid, ProcIdentity: old.id, Program: "sleep", Group: true}, &r); e != nil {
		t.Fatal(e)
	}
	if newcomer == nil {
		t.Skip("could not make another process take the pid (other processes forking)")
	}
	if r.Signalled || r.Gone != proto.GoneExited {
		t.Errorf("got %+v; want gone (exited), nothing signalled", r)
	}
	time.Sleep(200 * time.Millisecond)
	if !newcomer.alive() {
		t.Fatalf("the process that took pid %d after the check was stopped", pid)
	}
}

// spawnWithPID starts a group-leading sleep with the given pid, through
// ns_last_pid (the next pid handed out is its value plus one), retrying
// while other processes take it first; nil when it never got it.
func spawnWithPID(t *testing.T, pid int) *sleeper {
	for range 200 {
		if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(pid-1)), 0); err != nil {
			t.Logf("ns_last_pid: %v", err)
			return nil
		}
		cmd := exec.Command("/bin/sleep", "300")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if cmd.Process.Pid == pid {
			return watchSleeper(t, cmd)
		}
		cmd.Process.Kill()
		cmd.Wait()
	}
	return nil
}
