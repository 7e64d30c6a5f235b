package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
)

// proc is a child process the agent started. It runs in its own cgroup
// (cgroup.go) where the host allows, else in its own process group, so
// stopping it also stops whatever it forked.
type proc struct {
	handle string
	argv   []string
	cmd    *exec.Cmd
	start  time.Time
	wd     *workDir // where its output files are
	ident  proto.ProcIdentity
	cg     *workloadCgroup // nil: process group only

	done     chan struct{} // closed once the process has been reaped
	mu       sync.Mutex
	res      proto.ProcResult
	stopped  bool
	timedOut bool
}

// validHandle accepts handles usable as one file name element.
func validHandle(method, h string) error {
	if err := ValidRunID(h); err != nil {
		return perr(proto.CodeBadRequest, "%s: handle %q: want 1-200 of [A-Za-z0-9._-]", method, h)
	}
	return nil
}

func (s *Server) procStart(ctx context.Context, c *call, params json.RawMessage) (any, error) {
	var p proto.ProcStartParams
	if err := decode(proto.MethodProcStart, params, &p); err != nil {
		return nil, err
	}
	if err := validHandle(proto.MethodProcStart, p.Handle); err != nil {
		return nil, err
	}
	if len(p.Argv) == 0 || p.Argv[0] == "" {
		return nil, perr(proto.CodeBadRequest, "proc.start %q: empty argv", p.Handle)
	}
	for i, a := range p.Argv {
		if strings.ContainsRune(a, 0) {
			return nil, perr(proto.CodeBadRequest, "proc.start %q: argv[%d] contains a NUL byte", p.Handle, i)
		}
	}
	for _, e := range p.Env {
		if k, _, ok := strings.Cut(e, "="); !ok || k == "" || strings.ContainsRune(e, 0) {
			return nil, perr(proto.CodeBadRequest, "proc.start %q: env entry %q: want NAME=value without NUL bytes", p.Handle, e)
		}
	}
	if p.Become && s.opts.Owner != nil && os.Geteuid() == 0 && !rootAllowed(p.Argv, p.Env) {
		// A root agent working for a user (a sudo rule for the agent) must
		// not be a way to run anything as root: only the fixed commands the
		// engine needs keep root, without environment (LD_PRELOAD...).
		return nil, &proto.Error{Code: proto.CodePermission, Command: p.Argv,
			Message: fmt.Sprintf("proc.start %q: %q may not run as root; only %v keep root when the agent runs for a user (workloads run as that user: use sudo in the command if the host allows it)", p.Handle, p.Argv[0], rootArgvs)}
	}
	var re *regexp.Regexp
	if p.Ready != nil && p.Ready.OutputRegex != "" {
		var err error
		if re, err = regexp.Compile(p.Ready.OutputRegex); err != nil {
			return nil, perr(proto.CodeBadRequest, "proc.start %q: ready output_regex: %v", p.Handle, err)
		}
	}
	if p.Dir != "" {
		if !filepath.IsLocal(p.Dir) {
			return nil, perr(proto.CodeBadRequest, "proc.start %q: dir %q is not inside the work dir", p.Handle, p.Dir)
		}
		var fi fs.FileInfo
		wd := s.workDir()
		if err := wd.asUser("proc.start", func() (err error) { fi, err = wd.root.Stat(p.Dir); return err }); err != nil || !fi.IsDir() {
			return nil, perr(proto.CodeBadRequest, "proc.start %q: dir %q is no folder of the work dir", p.Handle, p.Dir)
		}
	}
	pr, err := s.startProcIn(p.Handle, p.Argv, p.Env, p.TimeoutMs, true, !p.Become, p.Dir)
	if err != nil {
		return nil, err
	}
	if err := s.waitReady(ctx, pr, p.Ready, re); err != nil {
		pr.stop(s.opts.StopGrace)
		return nil, err
	}
	st := proto.ProcStarted{Handle: p.Handle, PID: pr.cmd.Process.Pid, ReadyMs: time.Since(pr.start).Milliseconds(), ProcIdentity: pr.ident}
	c.event(proto.EventReady, st)
	return st, nil
}

// startProcIn starts argv (never through a shell) with output to
// <handle>.stdout/.stderr in the work dir and, when register is set, records
// it under handle for proc.wait/proc.stop; its working directory is dir, a
// folder of the work dir ("" for the work dir): a program's ./server runs
// where it was built.
// asOwner: when the agent runs as root on behalf of a user (become), the
// process runs as that user unless it asked for root (ProcStartParams.Become):
// privilege only for the steps that need it.
func (s *Server) startProcIn(handle string, argv, env []string, timeoutMs int, register, asOwner bool, dir string) (*proc, error) {
	return s.startProcAt(handle, argv, env, timeoutMs, register, asOwner, dir, nil)
}

// startProcAt is startProcIn in the folder at (its output files there, and
// its working directory) instead of the work dir, when at is not nil.
func (s *Server) startProcAt(handle string, argv, env []string, timeoutMs int, register, asOwner bool, dir string, at *workDir) (*proc, error) {
	s.mu.Lock()
	closing, wd := s.closing, s.wd
	s.mu.Unlock()
	cgPath := wd.path // names its cgroup: the run's, wherever it runs
	if at != nil {
		wd = at
	}
	if closing {
		return nil, errClosing(proto.MethodProcStart)
	}
	if err := wd.check("start " + handle); err != nil {
		return nil, err
	}
	pr := &proc{handle: handle, argv: argv, wd: wd, done: make(chan struct{})}
	unreserve := func() {}
	if register {
		s.mu.Lock()
		if _, ok := s.procs[handle]; ok {
			s.mu.Unlock()
			return nil, perr(proto.CodeExists, "proc.start: handle %q already in use", handle)
		}
		s.procs[handle] = pr // reserve the handle
		s.mu.Unlock()
		unreserve = func() {
			s.mu.Lock()
			delete(s.procs, handle)
			s.mu.Unlock()
		}
	}

	// The owner's workloads run as the owner, with the owner's PATH; what
	// runs as root, with root's (PinRootPATH).
	var cred *syscall.Credential
	home := ""
	if asOwner {
		var err error
		if cred, home, err = s.ownerCredential(); err != nil {
			unreserve()
			return nil, perr(proto.CodeInternal, "start %q: %v", argv[0], err)
		}
	}
	path := argv[0]
	if !strings.Contains(path, "/") {
		var p string
		var err error
		if cred != nil {
			p, err = lookOwnerTool(path, s.opts.Owner, cred.Groups)
		} else {
			p, err = lookTool(path)
		}
		if err != nil {
			unreserve()
			return nil, perr(proto.CodeNotFound, "start %q: %v", argv[0], err)
		}
		path = p
	}
	stdout, err := wd.create(handle+".stdout", s.opts.Owner)
	if err != nil {
		unreserve()
		return nil, perr(proto.CodeInternal, "start %q: create output file: %v", argv[0], err)
	}
	stderr, err := wd.create(handle+".stderr", s.opts.Owner)
	if err != nil {
		stdout.Close()
		unreserve()
		return nil, perr(proto.CodeInternal, "start %q: create output file: %v", argv[0], err)
	}
	cmd := exec.Command(path, argv[1:]...)
	cmd.Args[0] = argv[0]
	// The folder opened, not its path (which the owner may have swapped).
	cmd.Dir = wd.fdPath()
	if dir != "" {
		cmd.Dir = filepath.Join(cmd.Dir, dir)
	}
	base := os.Environ()
	if cred != nil {
		base = append(withPATH(base, workloadPATH()), ownerLoginEnv(int(cred.Uid))...)
	}
	cmd.Env = append(base, env...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	// Own process group, so stop and timeout reach whatever it forks; and
	// SIGKILL from the kernel should the agent itself be killed (-9) before
	// it can clean up.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if pr.cg = cgroups.make(s.cgroupUID(), cgPath, handle); pr.cg != nil {
		// Born in its cgroup: whatever it forks, setsid or not, is there.
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, pr.cg.fd()
	}
	if cred != nil {
		cmd.SysProcAttr.Credential = cred
		cmd.Env = append(cmd.Env, "HOME="+home)
	}
	leadersMu.RLock() // reaper.go: the reaper must not take this child from its Wait
	defer leadersMu.RUnlock()
	err = cmd.Start()
	if pr.cg != nil {
		pr.cg.started()
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			// clone3 into a cgroup refused (an old kernel, a cgroup
			// policy): keep to process groups from now on.
			cgroups.bad.Store(true)
			s.log.Warn("cannot start a process in its cgroup; stopping by process group only", "cgroup", pr.cg.path, "err", err)
			pr.cg.kill()
			pr.cg = nil
			again := exec.Command(path, argv[1:]...)
			again.Args, again.Dir, again.Env, again.Stdout, again.Stderr = cmd.Args, cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr
			again.SysProcAttr = cmd.SysProcAttr
			again.SysProcAttr.UseCgroupFD, again.SysProcAttr.CgroupFD = false, 0
			cmd = again
			err = cmd.Start()
		}
	}
	stdout.Close()
	stderr.Close()
	if err != nil {
		unreserve()
		code := proto.CodeCommand
		if errors.Is(err, os.ErrNotExist) {
			code = proto.CodeNotFound
		} else if errors.Is(err, os.ErrPermission) {
			code = proto.CodePermission
		}
		return nil, &proto.Error{Code: code, Message: fmt.Sprintf("start %q: %v", argv[0], err), Command: argv}
	}
	leaders.Store(cmd.Process.Pid, struct{}{})
	// Before Wait can reap it: the pid is still this child's.
	ident := procIdentity(cmd.Process.Pid)
	s.mu.Lock() // lookupProc reads cmd under s.mu
	pr.cmd, pr.start, pr.ident = cmd, time.Now(), ident
	s.mu.Unlock()
	s.log.Info("started", "handle", handle, "pid", cmd.Process.Pid, "argv", argv)
	go func() {
		var timer *time.Timer
		if timeoutMs > 0 {
			timer = time.AfterFunc(time.Duration(timeoutMs)*time.Millisecond, func() {
				pr.mu.Lock()
				pr.timedOut = true
				pr.mu.Unlock()
				s.log.Warn("timed out; killing process group", "handle", handle, "pid", cmd.Process.Pid)
				killGroup(cmd.Process.Pid, syscall.SIGKILL)
				pr.killCgroup()
			})
		}
		werr := cmd.Wait()
		leaders.Delete(cmd.Process.Pid)
		if timer != nil {
			timer.Stop()
		}
		// The leader is gone; anything it forked into its group goes too,
		// and with a cgroup, also what left the group (setsid, daemons).
		killGroup(cmd.Process.Pid, syscall.SIGKILL)
		if err := pr.cg.kill(); err != nil {
			s.log.Warn("stop what the process left", "handle", handle, "err", err)
		}
		s.finishProc(pr, werr)
		close(pr.done)
	}()
	return pr, nil
}

func killGroup(pid int, sig syscall.Signal) {
	if pid > 0 {
		_ = syscall.Kill(-pid, sig)
	}
}

func (s *Server) finishProc(pr *proc, werr error) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	r := proto.ProcResult{
		Handle:        pr.handle,
		Argv:          pr.argv,
		StartUnixNano: pr.start.UnixNano(),
		EndUnixNano:   time.Now().UnixNano(),
		TimedOut:      pr.timedOut,
		Stopped:       pr.stopped,
		StdoutFile:    pr.handle + ".stdout",
		StderrFile:    pr.handle + ".stderr",
	}
	r.ExitCode = pr.cmd.ProcessState.ExitCode()
	if ws, ok := pr.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		r.ExitCode = -1
		r.Signal = ws.Signal().String()
	}
	var t1, t2 bool
	r.Stdout, t1 = pr.wd.readTail(r.StdoutFile, proto.OutputLimit)
	r.Stderr, t2 = pr.wd.readTail(r.StderrFile, proto.OutputLimit)
	r.Truncated = t1 || t2
	fitOutputs(&r)
	pr.res = r
	s.log.Info("exited", "handle", pr.handle, "exit", r.ExitCode, "signal", r.Signal, "err", werr)
}

// fitOutputs shrinks the output tails until the result fits one protocol
// line: JSON escapes control bytes six-fold, so two 1 MiB tails of binary
// output would not.
func fitOutputs(r *proto.ProcResult) {
	const room = proto.MaxLine - 64<<10 // argv, names and the envelope
	for {
		a, _ := json.Marshal(r.Stdout)
		b, _ := json.Marshal(r.Stderr)
		if len(a)+len(b) <= room || (r.Stdout == "" && r.Stderr == "") {
			return
		}
		r.Stdout = tailString(r.Stdout, len(r.Stdout)/2)
		r.Stderr = tailString(r.Stderr, len(r.Stderr)/2)
		r.Truncated = true
	}
}

func (pr *proc) finished() bool {
	select {
	case <-pr.done:
		return true
	default:
		return false
	}
}

// stop ends a running process: SIGTERM to its group, SIGKILL after grace.
// It reports whether the process was still running.
func (pr *proc) stop(grace time.Duration) bool { return pr.stopWith(syscall.SIGTERM, grace) }

// stopWith is stop with another first signal (SIGINT: proc.stop's
// Interrupt).
func (pr *proc) stopWith(first syscall.Signal, grace time.Duration) bool {
	select {
	case <-pr.done:
		return false
	default:
	}
	pr.mu.Lock()
	pr.stopped = true
	pr.mu.Unlock()
	pid := pr.cmd.Process.Pid
	killGroup(pid, first)
	select {
	case <-pr.done:
	case <-time.After(grace):
		killGroup(pid, syscall.SIGKILL)
		pr.killCgroup()
		<-pr.done
	}
	return true
}

// killCgroup sends SIGKILL to everything in the process's cgroup (not
// removing it: the reaper does, once the leader is reaped).
func (pr *proc) killCgroup() {
	if pr.cg != nil {
		os.WriteFile(filepath.Join(pr.cg.path, "cgroup.kill"), []byte("1"), 0)
	}
}

func (pr *proc) result() proto.ProcResult {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return pr.res
}

func (s *Server) lookupProc(method, handle string) (*proc, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pr, ok := s.procs[handle]
	if !ok || pr.cmd == nil || pr.cmd.Process == nil {
		return nil, perr(proto.CodeNotFound, "%s: no process with handle %q", method, handle)
	}
	return pr, nil
}

func (s *Server) procWait(ctx context.Context, c *call, params json.RawMessage) (any, error) {
	var p proto.ProcWaitParams
	if err := decode(proto.MethodProcWait, params, &p); err != nil {
		return nil, err
	}
	pr, err := s.lookupProc(proto.MethodProcWait, p.Handle)
	if err != nil {
		return nil, err
	}
	var timeout <-chan time.Time
	if p.TimeoutMs > 0 {
		t := time.NewTimer(time.Duration(p.TimeoutMs) * time.Millisecond)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-pr.done:
		return pr.result(), nil
	case <-timeout:
		return nil, perr(proto.CodeTimeout, "wait for %q (%s): still running after %d ms", p.Handle, strings.Join(pr.argv, " "), p.TimeoutMs)
	case <-ctx.Done():
		return nil, perr(proto.CodeInternal, "wait for %q: agent shutting down", p.Handle)
	}
}

func (s *Server) procStop(ctx context.Context, c *call, params json.RawMessage) (any, error) {
	var p proto.ProcStopParams
	if err := decode(proto.MethodProcStop, params, &p); err != nil {
		return nil, err
	}
	pr, err := s.lookupProc(proto.MethodProcStop, p.Handle)
	if err != nil {
		// proc.stop also stops a tcp.serve workload side by its handle, so
		// a controller can stop any workload side the same way.
		s.mu.Lock()
		t, ok := s.tcps[p.Handle]
		s.mu.Unlock()
		if !ok {
			return nil, err
		}
		now := time.Now().UnixNano()
		return proto.ProcResult{Handle: p.Handle, Argv: []string{"tcp.serve", t.ln.Addr().String()},
			Stopped: t.close(), StartUnixNano: now, EndUnixNano: now}, nil
	}
	grace := s.opts.StopGrace
	if p.GraceMs > 0 {
		grace = time.Duration(p.GraceMs) * time.Millisecond
	}
	if p.Interrupt {
		pr.stopWith(syscall.SIGINT, grace)
	} else {
		pr.stop(grace)
	}
	<-pr.done
	return pr.result(), nil
}

// rootArgvs are the only commands a root agent working for a user runs as
// root on request: the kernel log of a hung workload.
var rootArgvs = [][]string{{"dmesg"}}

func rootAllowed(argv, env []string) bool {
	if len(env) > 0 {
		return false
	}
	for _, a := range rootArgvs {
		if slices.Equal(a, argv) {
			return true
		}
	}
	return false
}
