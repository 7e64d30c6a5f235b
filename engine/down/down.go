package down

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc"
	"github.com/rlab-dev/rlab/engine/runstate"
	"github.com/rlab-dev/rlab/internal/fanout"
	"github.com/rlab-dev/rlab/steps"
)

// Options configure Run.
type Options struct {
	Connector Connector
	// StopVMs stops the VMs recorded in state.json (vm.StopFromState);
	// idempotent.
	StopVMs  func(ctx context.Context, state []byte) error
	Parallel int
	Log      *slog.Logger
	Now      func() time.Time
	// RemoveProvisioned also removes the packages the run installed
	// (--provision); by default they stay.
	RemoveProvisioned bool
	// KnownHosts and Identities are the files the user names (--known-hosts,
	// -i): a known_hosts or identity_file a state.json not written by this
	// user's rlab names outside the run directory is used only when it is
	// one of them (engine/runstate.CheckPaths); ~/.ssh/known_hosts when KnownHosts is empty.
	KnownHosts []string
	Identities []string
	// TrustState acts on a state.json this user's rlab did not sign (a
	// received run directory, one edited since, or one from an rlab before
	// state.json was signed whole): the user vouches for its become flag,
	// run ID and effects. Its paths and package list are still checked
	// on their own (engine/runstate.CheckPaths).
	TrustState bool
}

// ErrStateUnsigned is a state.json down does not act on unless told to
// (Options.TrustState).
var ErrStateUnsigned = errors.New("state.json was not written by your rlab (or was changed since)")

// Result says what Run did.
type Result struct {
	Undone []string // "host: kind id"
	Left   []string // what down left in place, and why
	Errors []error
}

// Run undoes what a run left behind, from its state.json alone (no lab
// file): rxe devices it created and did not keep, processes and captures
// still running, link impairments (netem) still in force, and its VMs. Running it again is harmless: what is undone
// is recorded and skipped.
func Run(ctx context.Context, dir string, opts Options) (*Result, error) {
	j, err := runstate.Open(dir)
	if err != nil {
		return nil, err
	}
	// Whoever can write the run directory can write state.json: its become
	// flag makes down work as root, its effects name what down stops and
	// deletes. Run acts on it only as this user's rlab signed it whole,
	// and then keeps it signed as it journals what it undid; otherwise
	// only when the user vouches for it, and then it signs nothing.
	// (runstate.Open keeps the key only when the file was signed with it.)
	key := runstate.ReadKey()
	if !j.Signed() && !opts.TrustState {
		return nil, fmt.Errorf("down %s: %w: down acts on no host, process or device it names (its become flag would run as root); if you trust it (a run of yours from an older rlab, or one you received and checked), rlab down --trust-state %s",
			dir, ErrStateUnsigned, dir)
	}
	if opts.Parallel <= 0 {
		opts.Parallel = 64
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	st := j.Snapshot()
	res := &Result{}
	pending := map[string][]steps.Effect{}
	for _, e := range st.Effects {
		if e.Undone || (e.Type == "rxe" && (!e.Created || e.Keep)) {
			continue
		}
		pending[e.Host] = append(pending[e.Host], e)
	}
	var hosts []runstate.Host
	for _, h := range st.Hosts {
		// Packages are removed only as this user's own rlab journaled them
		// (signed with the host's entry): a received state.json could list
		// any package (openssh-server, sudo) for root to remove.
		if opts.RemoveProvisioned && toRemove(h) != nil && !runstate.PathsSigned(key, st.RunID, h) {
			res.Left = append(res.Left, fmt.Sprintf("left packages %s on host %s: state.json was not written by your rlab (or was changed since), so down removes no package it names; remove them yourself if this run installed them",
				strings.Join(h.Provision.Installed, " "), h.Name))
			h.Provision = nil
		}
		// A VM host's leftovers go with the VM.
		if !h.VM && (len(pending[h.Name]) > 0 || workDirLeft(h) || (opts.RemoveProvisioned && toRemove(h) != nil)) {
			hosts = append(hosts, h)
		}
	}
	var errs []error
	if len(hosts) > 0 && opts.Connector == nil {
		return nil, errors.New("down: no connector")
	}
	userKH := opts.KnownHosts
	if len(userKH) == 0 {
		userKH = []string{"~/.ssh/known_hosts"}
	}
	var mu sync.Mutex // res
	err = fanout.Each(ctx, hosts, opts.Parallel, func(ctx context.Context, h runstate.Host) error {
		if err := runstate.CheckPaths(dir, h, runstate.PathsSigned(key, st.RunID, h), userKH, opts.Identities); err != nil {
			return fmt.Errorf("down: %w", err)
		}
		undone, left, err := downHost(ctx, j, h, pending[h.Name], st.RunID, opts)
		mu.Lock()
		res.Undone = append(res.Undone, undone...)
		res.Left = append(res.Left, left...)
		mu.Unlock()
		return err
	})
	if err != nil {
		errs = append(errs, err)
	}
	if len(st.VMs) > 0 && opts.StopVMs != nil {
		if err := opts.StopVMs(ctx, st.VMs); err != nil {
			errs = append(errs, fmt.Errorf("stop VMs of run %s: %w", filepath.Base(dir), err))
		} else {
			j.Update(func(s *runstate.State) {
				for _, h := range s.Hosts {
					if !h.VM {
						continue
					}
					for i := range s.Effects {
						if s.Effects[i].Host == h.Name {
							s.Effects[i].Undone = true
						}
					}
				}
			})
		}
	}
	if len(errs) == 0 {
		now := opts.Now().UTC()
		j.Update(func(s *runstate.State) { s.TornDown = &now })
	}
	res.Errors = errs
	return res, errors.Join(errs...)
}

// workDirLeft says whether the run's work dir may still be on the host: the
// agent answered with one and neither the run nor a down removed it.
func workDirLeft(h runstate.Host) bool {
	return h.Connected && h.WorkDir != "" && !h.WorkDirRemoved
}

func downHost(ctx context.Context, j *runstate.Journal, h runstate.Host, effects []steps.Effect, runID string, opts Options) (undone, left []string, _ error) {
	c, err := opts.Connector.Connect(ctx, h, runID+"-down")
	if err != nil {
		return nil, nil, fmt.Errorf("down: connect to host %q (%s): %w", h.Name, h.Address, err)
	}
	defer c.Close()
	downWD := ""
	if hp, ok := c.(interface{ Hello() proto.Hello }); ok {
		downWD = hp.Hello().WorkDir
	}
	// down's own agent writes its commands' output in a work dir of its
	// own: it goes last, whatever happened.
	defer removeOwnWorkDir(ctx, c, downWD, runID, opts.Log)
	var errs []error
	// note says when there was nothing to undo: what the run's agent
	// removes itself when its controller dies (rxe, netem) is found gone.
	// The run's agent may have undone it all itself, its watchdog fired
	// (its rlab gone silent): it says so in its work dir.
	rec := readWatchdog(ctx, c, h.WorkDir)
	byWatchdog := undoneByWatchdog(rec, effects)
	mark := func(e steps.Effect, note string) {
		if note == alreadyGone && byWatchdog[watchdogKeyOf(e)] {
			note = watchdogNote(rec)
		}
		e.Undone, e.Pending = true, false
		if err := j.Note(e); err != nil {
			errs = append(errs, err)
		}
		undone = append(undone, fmt.Sprintf("%s: %s %s%s", h.Name, e.Type, e.ID, note))
	}
	// The run's agent, if it is somehow still alive, stops its own children
	// and deletes its devices when it ends.
	if h.AgentPID > 0 {
		if note, err := killIfSame(ctx, c, h.AgentPID, "rlab-agent", h.AgentStart, true); err != nil {
			errs = append(errs, fmt.Errorf("down: host %q: %w", h.Name, err))
		} else if note != "" {
			opts.Log.Info("down: the run's agent", "host", h.Name, "pid", h.AgentPID, "note", strings.TrimSpace(note))
		}
	}
	for _, e := range effects {
		switch e.Type {
		case "rxe":
			r, err := rpc.Invoke(ctx, c, rpc.DeviceDelete, proto.DeviceDeleteParams{Name: e.ID})
			var pe *proto.Error
			if err != nil && !(errors.As(err, &pe) && (pe.Code == proto.CodeNotFound || pe.Code == proto.CodeNoModule)) {
				errs = append(errs, fmt.Errorf("down: delete rxe %q on host %q: %w", e.ID, h.Name, err))
				continue
			}
			note := ""
			if err != nil || !r.Deleted {
				note = alreadyGone
			}
			mark(e, note)
		case "impair":
			// Removes only rlab's netem (by its handle): a qdisc someone set
			// since is left alone. Several impairments of one netdev are one
			// removal; the others find nothing left.
			// The netdev's own gso_max_segs, as the run's agent found it,
			// comes back with it (not the kernel's default).
			r, err := rpc.Invoke(ctx, c, rpc.ImpairRemove, proto.ImpairRemoveParams{Netdev: e.Netdev, GSOOwn: e.GSOOwn})
			if err != nil {
				errs = append(errs, fmt.Errorf("down: remove impairment %s from %s on host %q: %w", e.ID, e.Netdev, h.Name, err))
				continue
			}
			note := ""
			if !r.Removed {
				note = alreadyGone
			}
			mark(e, note)
		default: // proc, capture, tcp
			if e.PID > 0 {
				name := "tcpdump"
				if len(e.Argv) > 0 {
					name = filepath.Base(e.Argv[0])
				}
				if e.Type == "tcp" {
					name = "rlab-agent"
				}
				var id *proto.ProcIdentity
				if e.StartTicks != 0 {
					id = &e.ProcIdentity
				}
				note, err := killIfSame(ctx, c, e.PID, name, id, false)
				if err != nil {
					errs = append(errs, fmt.Errorf("down: host %q: %w", h.Name, err))
					continue
				}
				mark(e, note)
				continue
			}
			mark(e, "")
		}
	}
	if opts.RemoveProvisioned {
		if u, err := removeProvisioned(ctx, j, c, h); err != nil {
			errs = append(errs, err)
		} else if u != "" {
			undone = append(undone, u)
		}
	}
	// Run: what the run's workloads left in their cgroups (setsid'd,
	// daemonised) goes too, should their agent have died before its cleanup.
	if _, err := rpc.Invoke(ctx, c, rpc.Cleanup, proto.CleanupParams{Run: runID}); err != nil {
		opts.Log.Warn("down: agent cleanup", "host", h.Name, "err", err)
	}
	// Then the work dir (logs, pcaps, whatever its workloads wrote), now
	// that nothing of the run writes there.
	if workDirLeft(h) {
		u, l, err := removeRunWorkDir(ctx, j, c, h, downWD, runID)
		switch {
		case err != nil:
			errs = append(errs, err)
		case l != "":
			left = append(left, l)
		default:
			undone = append(undone, u)
		}
	}
	return undone, left, errors.Join(errs...)
}

// removeRunWorkDir removes the run's work dir on h as the login user and
// journals it; it says what it held ("h: work dir PATH (N files, K KiB)"),
// or, with left, why it was not removed.
func removeRunWorkDir(ctx context.Context, j *runstate.Journal, c Host, h runstate.Host, downWD, runID string) (undone, left string, _ error) {
	wd, why := runWorkDir(h.WorkDir, downWD, runID)
	if wd == "" {
		return "", fmt.Sprintf("left work dir %s on host %s: %s", h.WorkDir, h.Name, why), nil
	}
	out, code, err := runArgv(ctx, c, "down.rm.workdir", []string{"sh", "-c", removeDirScript, "sh", wd, path.Dir(wd)})
	if err == nil && code != 0 {
		err = fmt.Errorf("exit %d", code)
	}
	if err != nil {
		return "", "", fmt.Errorf("down: remove work dir %s on host %q: %w", wd, h.Name, err)
	}
	note := alreadyGone
	if f := strings.Fields(out); len(f) == 2 {
		n, err1 := strconv.ParseUint(f[0], 10, 64)
		k, err2 := strconv.ParseUint(f[1], 10, 64)
		if err1 == nil && err2 == nil {
			note = fmt.Sprintf(" (%d files, %d KiB)", n, k)
		} else {
			note = ""
		}
	}
	j.Update(func(s *runstate.State) {
		for i := range s.Hosts {
			if s.Hosts[i].Name == h.Name {
				s.Hosts[i].WorkDirRemoved = true
			}
		}
	})
	return fmt.Sprintf("%s: work dir %s%s", h.Name, wd, note), "", nil
}

// removeOwnWorkDir removes down's own agent's work dir (.../<run id>-down/
// <name>) and its folder once empty.
func removeOwnWorkDir(ctx context.Context, c Host, downWD, runID string, log *slog.Logger) {
	if downWD == "" || !path.IsAbs(downWD) || path.Clean(downWD) != downWD || path.Base(path.Dir(downWD)) != runID+"-down" {
		return
	}
	if _, code, err := runArgv(ctx, c, "down.rm.own", []string{"sh", "-c", removeDirScript, "sh", downWD, path.Dir(downWD)}); err != nil || code != 0 {
		log.Warn("down: remove its own work dir", "host", c.Name(), "work_dir", downWD, "exit", code, "err", err)
	}
}

// alreadyGone ends a Result.Undone line whose thing down found gone.
const alreadyGone = " (already gone)"

// Notes ending a Result.Undone line of a process down did not signal,
// or signalled on weaker evidence.
const (
	pidReused = " (gone; pid reused by another process, left alone)"
	rebooted  = " (gone; the host rebooted since)"
	nameOnly  = " (pid matched by program name only: state.json has no start time)"
)

// killIfSame sends SIGTERM to pid on the host only when that pid is still
// the process the run started: with id, the same start time in the same
// boot (pid_max wraps within the hour, and the same program name is common:
// sleep, iperf3); without (a state.json or agent from before start times
// were recorded), a program named name, as down always did, said in the
// note. The note ends the Undone line ("" when it signalled by start time).
// commToo also asks, with id, that the program be named name (the agent's
// is always rlab-agent; a workload's argv[0] need not be what the kernel
// names it, a script's interpreter, so its start time alone decides).
//
// The agent checks and signals through a pidfd (proto.MethodProcSignal), so
// a pid reused between its check and the signal is never hit; an agent
// without that method, or a kernel without pidfds, gets the check and kill
// as separate commands, as before.
func killIfSame(ctx context.Context, c Host, pid int, name string, id *proto.ProcIdentity, commToo bool) (string, error) {
	q := proto.ProcSignalParams{PID: pid, Group: true}
	if id != nil {
		q.ProcIdentity = *id
	}
	if id == nil || commToo {
		q.Program = name
	}
	r, err := rpc.Invoke(ctx, c, rpc.ProcSignal, q)
	var pe *proto.Error
	switch {
	case err == nil && r.Signalled && id == nil:
		return nameOnly, nil
	case err == nil && r.Signalled:
		return "", nil
	case err == nil:
		switch r.Gone {
		case proto.GoneExited:
			return alreadyGone, nil
		case proto.GoneReused:
			return pidReused, nil
		case proto.GoneRebooted:
			return rebooted, nil
		}
		return "", nil // the same pid, not the program recorded: not ours to signal
	case errors.As(err, &pe) && (pe.Code == proto.CodeUnknown || pe.Code == proto.CodeUnsupported):
		return killIfSameByCommands(ctx, c, pid, name, id, commToo)
	}
	return "", fmt.Errorf("stop %s (pid %d): %w", name, pid, err)
}

// killIfSameByCommands is killIfSame for an agent without proc.signal:
// cat, then kill; a pid reused in between is hit.
func killIfSameByCommands(ctx context.Context, c Host, pid int, name string, id *proto.ProcIdentity, commToo bool) (string, error) {
	p := strconv.Itoa(pid)
	note := ""
	if id != nil {
		out, code, err := runArgv(ctx, c, "down.stat."+p, []string{"cat", "/proc/sys/kernel/random/boot_id", "/proc/" + p + "/stat"})
		if err != nil {
			return "", err
		}
		boot, stat, _ := strings.Cut(out, "\n")
		if strings.TrimSpace(boot) != id.BootID {
			return rebooted, nil
		}
		if code != 0 || strings.TrimSpace(stat) == "" {
			return alreadyGone, nil
		}
		start, ok := proto.ParseStatStartTicks([]byte(stat))
		if !ok {
			return "", fmt.Errorf("check pid %d is still %s: unreadable /proc/%d/stat %q", pid, name, pid, truncate(stat, 200))
		}
		if start != id.StartTicks {
			return pidReused, nil
		}
		if commToo && statComm(stat) != name {
			return "", nil // the same process, not the program recorded: not ours to signal
		}
	} else {
		out, code, err := runArgv(ctx, c, "down.ps."+p, []string{"ps", "-o", "args=", "-p", p})
		if err != nil {
			return "", err
		}
		if code != 0 || !strings.Contains(firstWord(out), name) {
			return "", nil // gone, or another program now
		}
		note = nameOnly
	}
	// The agent starts each process as the leader of its own group: the
	// group goes (a shell's children too), else the process alone.
	if _, code, err := runArgv(ctx, c, "down.killpg."+p, []string{"kill", "-TERM", "--", "-" + p}); err == nil && code == 0 {
		return note, nil
	}
	if _, code, err := runArgv(ctx, c, "down.kill."+p, []string{"kill", "-TERM", p}); err != nil || code != 0 {
		return "", fmt.Errorf("kill %s (pid %d): exit %d: %v", name, pid, code, err)
	}
	return note, nil
}

// statComm is the program name in a /proc/<pid>/stat line (field 2, in
// parentheses, which it may itself hold).
func statComm(stat string) string {
	i, j := strings.IndexByte(stat, '('), strings.LastIndexByte(stat, ')')
	if i < 0 || j < i {
		return ""
	}
	return stat[i+1 : j]
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

func firstWord(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return ""
	}
	return filepath.Base(f[0])
}

func runArgv(ctx context.Context, c Host, hd string, argv []string) (string, int, error) {
	if _, err := rpc.Invoke(ctx, c, rpc.ProcStart, proto.ProcStartParams{Handle: hd, Argv: argv, TimeoutMs: 20000}); err != nil {
		return "", 0, fmt.Errorf("run %s on host %q: %w", strings.Join(argv, " "), c.Name(), err)
	}
	r, err := rpc.Invoke(ctx, c, rpc.ProcWait, proto.ProcWaitParams{Handle: hd, TimeoutMs: 20000})
	if err != nil {
		return "", 0, fmt.Errorf("run %s on host %q: %w", strings.Join(argv, " "), c.Name(), err)
	}
	return r.Stdout, r.ExitCode, nil
}
