package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/rlab-dev/rlab/agent/proto"
)

// pidfdSignalProcessGroup is PIDFD_SIGNAL_PROCESS_GROUP (linux/pidfd.h,
// Linux 6.9): pidfd_send_signal signals the process group whose id is the
// pidfd's pid, the same struct pid, so a group id reused since is not it.
const pidfdSignalProcessGroup = 1 << 2

// testHookSignalChecked runs after proc.signal checked the process and
// before it signals it: tests end the process and give its pid to another
// there, the race the pidfd closes.
var testHookSignalChecked func(pid int)

// procSignal stops a process of an earlier agent (MethodProcSignal). The
// order is what makes it safe: the pidfd first (it names one process for
// good, whatever later holds its pid), then /proc/<pid> opened, then the
// pidfd seen still holding pid (its fdinfo): so the /proc folder read is the
// pidfd's process, and its start time and name are checked there; the
// signal goes through the pidfd. A root agent working for a user signals
// as that user (on a thread of its own whose ids are the user's), exactly
// what the user's kill(1) could do: it cannot stop a root process through
// the agent.
func (s *Server) procSignal(ctx context.Context, c *call, params json.RawMessage) (any, error) {
	var p proto.ProcSignalParams
	if err := decode(proto.MethodProcSignal, params, &p); err != nil {
		return nil, err
	}
	if p.PID <= 1 {
		return nil, perr(proto.CodeBadRequest, "proc.signal: pid %d: want a process's pid above 1", p.PID)
	}
	if p.PID == os.Getpid() {
		// The recorded process is gone: this agent holds its pid now.
		return proto.ProcSignalResult{Gone: proto.GoneReused}, nil
	}
	if p.BootID != "" && p.BootID != bootID() {
		return proto.ProcSignalResult{Gone: proto.GoneRebooted}, nil
	}
	pidfd, err := unix.PidfdOpen(p.PID, 0)
	switch {
	case errors.Is(err, unix.ESRCH):
		return proto.ProcSignalResult{Gone: proto.GoneExited}, nil
	case errors.Is(err, unix.ENOSYS):
		return nil, perr(proto.CodeUnsupported, "proc.signal: this kernel has no pidfd_open (Linux 5.3)")
	case err != nil:
		return nil, perr(proto.CodeInternal, "proc.signal: pidfd_open %d: %v", p.PID, err)
	}
	defer unix.Close(pidfd)
	gone, err := checkPidfd(pidfd, p)
	if err != nil || gone != "" {
		return proto.ProcSignalResult{Gone: gone}, err
	}
	if testHookSignalChecked != nil {
		testHookSignalChecked(p.PID)
	}
	uid := -1
	if o := s.opts.Owner; o != nil && os.Geteuid() == 0 && o.UID != 0 {
		uid = o.UID
	}
	group, err := signalAs(uid, pidfd, p.Group)
	switch {
	case errors.Is(err, unix.ESRCH):
		return proto.ProcSignalResult{Gone: proto.GoneExited}, nil
	case errors.Is(err, unix.EPERM):
		return nil, perr(proto.CodePermission, "proc.signal: pid %d: not the agent user's to signal", p.PID)
	case err != nil:
		return nil, perr(proto.CodeInternal, "proc.signal: pid %d: %v", p.PID, err)
	}
	return proto.ProcSignalResult{Signalled: true, Group: group}, nil
}

// checkPidfd says whether the process pidfd holds is the one p names: ""
// when it is, else why not (proto.Gone*).
func checkPidfd(pidfd int, p proto.ProcSignalParams) (string, error) {
	dir, err := unix.Open("/proc/"+strconv.Itoa(p.PID), unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return proto.GoneExited, nil
	}
	defer unix.Close(dir)
	// Opened after the pidfd: if the pidfd's process still holds pid now,
	// it held it all along, and dir is that process's folder.
	if n, err := pidfdPID(pidfd); err != nil {
		return "", perr(proto.CodeInternal, "proc.signal: pid %d: %v", p.PID, err)
	} else if n != p.PID {
		return proto.GoneExited, nil
	}
	read := func(name string) ([]byte, error) {
		fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, err
		}
		f := os.NewFile(uintptr(fd), name)
		defer f.Close()
		var b bytes.Buffer
		_, err = b.ReadFrom(&limitedFile{f, 1 << 16})
		return b.Bytes(), err
	}
	if p.StartTicks != 0 {
		stat, err := read("stat")
		if err != nil {
			return proto.GoneExited, nil
		}
		start, ok := proto.ParseStatStartTicks(stat)
		if !ok {
			return "", perr(proto.CodeInternal, "proc.signal: pid %d: unreadable stat %q", p.PID, truncateText(string(stat), 200))
		}
		if start != p.StartTicks {
			return proto.GoneReused, nil
		}
		if p.Program != "" && statComm(stat) != p.Program {
			return proto.GoneOtherProgram, nil
		}
		return "", nil
	}
	if p.Program == "" {
		return "", perr(proto.CodeBadRequest, "proc.signal: pid %d: neither a start time nor a program to check it by", p.PID)
	}
	cmdline, err := read("cmdline")
	if err != nil {
		return proto.GoneExited, nil
	}
	argv0, _, _ := bytes.Cut(cmdline, []byte{0})
	if f := strings.Fields(string(argv0)); len(f) == 0 || !strings.Contains(filepath.Base(f[0]), p.Program) {
		return proto.GoneOtherProgram, nil
	}
	return "", nil
}

// limitedFile reads at most n bytes of f.
type limitedFile struct {
	f *os.File
	n int64
}

func (l *limitedFile) Read(b []byte) (int, error) {
	if l.n <= 0 {
		return 0, errors.New("too long")
	}
	if int64(len(b)) > l.n {
		b = b[:l.n]
	}
	n, err := l.f.Read(b)
	l.n -= int64(n)
	return n, err
}

// pidfdPID is the pid a pidfd's process holds (the Pid line of its fdinfo),
// -1 once it was reaped.
func pidfdPID(pidfd int) (int, error) {
	f, err := os.Open("/proc/self/fdinfo/" + strconv.Itoa(pidfd))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Pid:"); ok {
			return strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return 0, fmt.Errorf("no Pid in the pidfd's fdinfo")
}

// statComm is the program name in a /proc/<pid>/stat line (field 2, in
// parentheses, which it may itself hold).
func statComm(stat []byte) string {
	i, j := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
	if i < 0 || j < i {
		return ""
	}
	return string(stat[i+1 : j])
}

// signalAs sends SIGTERM through pidfd, to the group it leads when group
// is set (the process alone when it leads none), as uid when uid >= 0: on
// a locked thread whose real, effective and saved uid become uid (Linux
// credentials are per thread; the raw syscall, unlike syscall.Setresuid,
// changes this thread only), which is then discarded, never reused. It
// says whether the group was signalled.
func signalAs(uid, pidfd int, group bool) (bool, error) {
	type result struct {
		group bool
		err   error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		// No UnlockOSThread: the thread ends with this goroutine.
		if uid >= 0 {
			if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, uintptr(uid), uintptr(uid), uintptr(uid)); e != 0 {
				done <- result{err: fmt.Errorf("drop to uid %d: %w", uid, e)}
				return
			}
		}
		g, err := signalPidfd(pidfd, group)
		done <- result{g, err}
	}()
	r := <-done
	return r.group, r.err
}

func signalPidfd(pidfd int, group bool) (bool, error) {
	if group {
		err := unix.PidfdSendSignal(pidfd, unix.SIGTERM, nil, pidfdSignalProcessGroup)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, unix.EINVAL):
			// Before Linux 6.9: by the group's id, while the pidfd's
			// process still holds it (a reuse in between is a window of
			// a few instructions, not of a round trip to the controller).
			if n, perr := pidfdPID(pidfd); perr == nil && n > 0 {
				if syscall.Kill(-n, syscall.SIGTERM) == nil {
					return true, nil // the process leads it: it is in it
				}
			}
		case errors.Is(err, unix.EPERM):
			return false, err
		}
		// ESRCH: it leads no group (or its group is gone): it alone.
	}
	return false, unix.PidfdSendSignal(pidfd, unix.SIGTERM, nil, 0)
}
