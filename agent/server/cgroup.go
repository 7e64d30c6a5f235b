package server

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Each workload runs in a cgroup of its own, when the host has cgroup v2 and
// the agent may make one, so that what it forks, detached with setsid or
// double-forked, is found and stopped with it (cgroup.kill): a process
// group reaches only the children that stay in it. The tree is
//
//	<cgroup2 mount>/rlab/<uid>/<run>/<host leaf>.<agent pid>/<handle>.<n>
//
// where uid is the user the agent works for, so `rlab down` (cleanup with a
// run id) finds what a killed agent left, and a root agent working for one
// user never reaches another's. The child is born in its cgroup
// (clone3 CLONE_INTO_CGROUP through SysProcAttr.CgroupFD): nothing it runs
// can fork before being placed. Without cgroup v2, or without the right to
// make cgroups there (an ordinary user's agent on most hosts), the agent
// keeps to process groups, and facts say which (ProcTracking).

// Process tracking modes, as facts report them.
const (
	TrackCgroup       = "cgroup"        // cgroup v2 per workload, cgroup.kill
	TrackProcessGroup = "process-group" // setsid'd descendants can escape
)

// cgroups is the agent process's tree (one per process: it depends on the
// mount and the effective uid only).
var cgroups cgroupTree

// cgroupTree is where this agent makes its workloads' cgroups.
type cgroupTree struct {
	once sync.Once
	root string // <mount>/rlab; "" when cgroups are not usable
	why  string // why not, for the log and facts
	bad  atomic.Bool
	seq  atomic.Uint64

	pruned sync.Map // uid -> true once this agent pruned its user's tree
}

// cgroup2Mount finds where cgroup v2 is mounted (/sys/fs/cgroup, or
// /sys/fs/cgroup/unified on hybrid hosts).
func cgroup2Mount() string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root mountpoint options ... - fstype source super
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		if fs := strings.Fields(post); len(fs) > 0 && fs[0] == "cgroup2" {
			if f := strings.Fields(pre); len(f) >= 5 {
				return unescapeMount(f[4])
			}
		}
	}
	return ""
}

// unescapeMount undoes the octal escapes of mountinfo (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func (t *cgroupTree) init() {
	t.once.Do(func() {
		m := cgroup2Mount()
		if m == "" {
			t.why = "no cgroup v2 on this host"
			return
		}
		if os.Geteuid() != 0 {
			// A user's agent could use a subtree systemd delegated to it,
			// but it starts in sshd's session scope, and moving a process
			// needs write access to the common ancestor: not the user's.
			t.why = "the agent is not root (cgroups here need root: become = true)"
			return
		}
		root := filepath.Join(m, "rlab")
		if err := os.Mkdir(root, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			t.why = fmt.Sprintf("cannot make %s: %v", root, err)
			return
		}
		if _, err := os.Stat(filepath.Join(m, "cgroup.procs")); err != nil {
			t.why = "cgroup v2 without cgroup.procs"
			return
		}
		t.root = root
	})
}

// mode is the process tracking the agent uses now.
func (t *cgroupTree) mode() string {
	t.init()
	if t.root == "" || t.bad.Load() {
		return TrackProcessGroup
	}
	return TrackCgroup
}

// runDir is the cgroup folder of a run for the user uid.
func (t *cgroupTree) runDir(uid int, run string) string {
	return filepath.Join(t.root, strconv.Itoa(uid), run)
}

// prune removes the empty cgroups that agents of uid which are gone left
// (an agent killed before its cleanup: what still runs there stays, for
// `rlab down`).
func (t *cgroupTree) prune(uid int) {
	base := filepath.Join(t.root, strconv.Itoa(uid))
	runs, _ := os.ReadDir(base)
	for _, r := range runs {
		if !r.IsDir() {
			continue
		}
		rd := filepath.Join(base, r.Name())
		agents, _ := os.ReadDir(rd)
		for _, a := range agents {
			i := strings.LastIndexByte(a.Name(), '.')
			pid, err := strconv.Atoi(a.Name()[i+1:])
			if !a.IsDir() || i < 0 || err != nil {
				continue
			}
			if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
				continue // that agent still runs (or its pid was reused: left for later)
			}
			if d := filepath.Join(rd, a.Name()); !populated(d) {
				removeCgroup(d)
			}
		}
		os.Remove(rd) // only if empty
	}
}

// workloadCgroup is one workload's cgroup, open for CLONE_INTO_CGROUP.
type workloadCgroup struct {
	path string
	dir  *os.File
}

// make creates the cgroup for one process of the agent whose work dir is wd;
// nil when the agent keeps to process groups.
func (t *cgroupTree) make(uid int, wd, handle string) *workloadCgroup {
	if t.mode() != TrackCgroup {
		return nil
	}
	if _, done := t.pruned.LoadOrStore(uid, true); !done {
		t.prune(uid)
	}
	run, leaf := filepath.Base(filepath.Dir(wd)), filepath.Base(wd)
	if ValidRunID(run) != nil || ValidRunID(leaf) != nil {
		run, leaf = "agent", "agent"
	}
	p := filepath.Join(t.runDir(uid, run), fmt.Sprintf("%s.%d", leaf, os.Getpid()), fmt.Sprintf("%s.%d", handle, t.seq.Add(1)))
	if err := os.MkdirAll(p, 0o755); err != nil {
		return nil
	}
	d, err := os.Open(p)
	if err != nil {
		os.Remove(p)
		return nil
	}
	return &workloadCgroup{path: p, dir: d}
}

// fd is the descriptor for SysProcAttr.CgroupFD.
func (c *workloadCgroup) fd() int { return int(c.dir.Fd()) }

// started closes the descriptor once the child is born.
func (c *workloadCgroup) started() { c.dir.Close() }

// kill ends every process in the cgroup and removes it (with its emptied
// parents up to the tree's root). It waits, bounded, for the kernel to
// empty it.
func (c *workloadCgroup) kill() error {
	if c == nil {
		return nil
	}
	return killCgroup(c.path, true)
}

// killCgroup writes 1 to cgroup.kill of dir (which kills its whole
// subtree), waits until it is empty, and removes dir and its sub-cgroups;
// with parents, also dir's parents that are left empty.
func killCgroup(dir string, parents bool) error {
	if err := os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("kill cgroup %s: %w", dir, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for populated(dir) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	err := removeCgroup(dir)
	if parents {
		// Up to, not including, the tree's root <mount>/rlab.
		for p := filepath.Dir(dir); cgroups.root != "" && strings.HasPrefix(p, cgroups.root+"/") && os.Remove(p) == nil; p = filepath.Dir(p) {
		}
	}
	return err
}

// populated reads cgroup.events: does the cgroup (or a child) hold a process?
func populated(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.events"))
	if err != nil {
		return false
	}
	return strings.Contains(string(b), "populated 1")
}

// removeCgroup removes a cgroup folder and its sub-cgroups, deepest first
// (cgroupfs refuses os.RemoveAll's unlinks of its control files).
func removeCgroup(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	for _, e := range ents {
		if e.IsDir() {
			removeCgroup(filepath.Join(dir, e.Name()))
		}
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove cgroup %s: %w", dir, err)
	}
	return nil
}

// cgroupUID is the user whose cgroups this agent makes and may end.
func (s *Server) cgroupUID() int {
	if s.opts.Owner != nil {
		return s.opts.Owner.UID
	}
	return os.Geteuid()
}

// killRun ends what is left in the cgroups of run (of this agent's user):
// the workloads of an agent that was killed before it could stop them
// (`rlab down`).
func (s *Server) killRun(run string) error {
	if err := ValidRunID(run); err != nil {
		return err
	}
	if cgroups.mode() != TrackCgroup {
		return nil
	}
	dir := cgroups.runDir(s.cgroupUID(), run)
	if _, err := os.Stat(dir); err != nil {
		return nil
	}
	return killCgroup(dir, true)
}
