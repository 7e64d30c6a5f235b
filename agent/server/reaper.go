package server

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// Without workload cgroups (an unprivileged agent, a host without cgroup
// v2), a descendant that leaves its workload's process group (setsid, a
// daemon's double fork) would be adopted by init and outlive the run. The
// agent binary makes itself a child subreaper instead: such orphans are
// re-parented to the agent, which ends them when its session ends (cleanup,
// release). What an agent killed before its cleanup adopted goes to init:
// only cgroups reach those (rlab down).

// TrackSubreaper: process groups, and detached descendants adopted by the
// agent and ended with its session.
const TrackSubreaper = "subreaper"

var subreaper atomic.Bool

// EnableSubreaper makes this process a child subreaper (the agent binary
// calls it; an in-process test server does not).
func EnableSubreaper() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return err
	}
	subreaper.Store(true)
	return nil
}

// trackingMode is what facts report.
func trackingMode() string {
	m := cgroups.mode()
	if m == TrackProcessGroup && subreaper.Load() {
		return TrackSubreaper
	}
	return m
}

// leaders are the pids of the processes startProc started and whose Wait
// has not returned: exec.Cmd reaps those; the reaper never touches them.
// startProc holds leadersMu for reading from Start until the pid is
// recorded, the reaper for writing while it picks and reaps, so a process
// that exits at once is never taken from its Wait.
var (
	leadersMu sync.RWMutex
	leaders   sync.Map // pid -> struct{}
)

// endAdopted sends SIGKILL to every orphan the agent adopted and reaps it:
// its children that are neither one of startProc's leaders nor in the
// agent's own process group (the agent's own short commands, e.g. facts'
// tool probes, stay there and are reaped by their exec.Cmd).
func endAdopted() {
	if !subreaper.Load() {
		return
	}
	leadersMu.Lock()
	defer leadersMu.Unlock()
	self, own := os.Getpid(), syscall.Getpgrp()
	for _, pid := range children(self) {
		if _, ok := leaders.Load(pid); ok {
			continue
		}
		if pgid, err := syscall.Getpgid(pid); err != nil || pgid == own {
			continue
		}
		syscall.Kill(pid, syscall.SIGKILL)
		var ws syscall.WaitStatus
		syscall.Wait4(pid, &ws, 0, nil)
	}
}

// children lists the pids whose parent is pid: from the children files of
// pid's threads (/proc/PID/task/*/children), else, on a kernel without them
// (CONFIG_PROC_CHILDREN), from every process's /proc/*/stat. The scan read
// every process of the machine at each agent's exit: on the netns bed, 1,000
// hosts share one /proc, so a class's teardown read millions of files
// (bench/scale, BENCHMARKS.md).
func children(pid int) []int {
	if out, ok := taskChildren(pid); ok {
		return out
	}
	return scanChildren(pid)
}

// taskChildren reads the children files of pid's threads; ok is false when
// the kernel has none.
func taskChildren(pid int) (out []int, ok bool) {
	dir := filepath.Join("/proc", strconv.Itoa(pid), "task")
	// The main thread lives as long as the process: without its file the
	// kernel has none.
	if _, err := os.Stat(filepath.Join(dir, strconv.Itoa(pid), "children")); err != nil {
		return nil, false
	}
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return nil, false
	}
	seen := map[int]bool{}
	for _, t := range tasks {
		b, err := os.ReadFile(filepath.Join(dir, t.Name(), "children"))
		if err != nil {
			continue // a thread that ended meanwhile
		}
		for _, f := range strings.Fields(string(b)) {
			if p, err := strconv.Atoi(f); err == nil && !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out, true
}

// scanChildren lists the pids whose parent is pid from /proc/*/stat.
func scanChildren(pid int) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) >= 2 {
			if pp, err := strconv.Atoi(f[1]); err == nil && pp == pid {
				out = append(out, p)
			}
		}
	}
	return out
}
