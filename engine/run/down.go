package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc"
	"github.com/rlab-dev/rlab/steps"
)

// DownOptions configure Down.
type DownOptions struct {
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
}

// DownResult says what Down did.
type DownResult struct {
	Undone []string // "host: kind id"
	Errors []error
}

// Down undoes what a run left behind, from its state.json alone (no lab
// file): rxe devices it created and did not keep, processes and captures
// still running, link impairments (netem) still in force, and its VMs. Running it again is harmless: what is undone
// is recorded and skipped.
func Down(ctx context.Context, dir string, opts DownOptions) (*DownResult, error) {
	j, err := openJournal(dir)
	if err != nil {
		return nil, err
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
	st := j.snapshot()
	res := &DownResult{}
	pending := map[string][]steps.Effect{}
	for _, e := range st.Effects {
		if e.Undone || (e.Kind == "rxe" && (!e.Created || e.Keep)) {
			continue
		}
		pending[e.Host] = append(pending[e.Host], e)
	}
	var hosts []StateHost
	for _, h := range st.Hosts {
		// A VM host's leftovers go with the VM.
		if !h.VM && (len(pending[h.Name]) > 0 || (opts.RemoveProvisioned && toRemove(h) != nil)) {
			hosts = append(hosts, h)
		}
	}
	var errs []error
	if len(hosts) > 0 && opts.Connector == nil {
		return nil, errors.New("down: no connector")
	}
	err = each(ctx, hosts, opts.Parallel, func(ctx context.Context, h StateHost) error {
		undone, err := downHost(ctx, j, h, pending[h.Name], st.RunID, opts)
		j.mu.Lock()
		res.Undone = append(res.Undone, undone...)
		j.mu.Unlock()
		return err
	})
	if err != nil {
		errs = append(errs, err)
	}
	if len(st.VMs) > 0 && opts.StopVMs != nil {
		if err := opts.StopVMs(ctx, st.VMs); err != nil {
			errs = append(errs, fmt.Errorf("stop VMs of run %s: %w", filepath.Base(dir), err))
		} else {
			j.update(func(s *State) {
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
		j.update(func(s *State) { s.TornDown = &now })
	}
	res.Errors = errs
	return res, errors.Join(errs...)
}

func downHost(ctx context.Context, j *journal, h StateHost, effects []steps.Effect, runID string, opts DownOptions) ([]string, error) {
	c, err := opts.Connector.Connect(ctx, Target{StateHost: h}, runID+"-down")
	if err != nil {
		return nil, fmt.Errorf("down: connect to host %q (%s): %w", h.Name, h.Address, err)
	}
	defer c.Close()
	var undone []string
	var errs []error
	// note says when there was nothing to undo: what the run's agent
	// removes itself when its controller dies (rxe, netem) is found gone.
	mark := func(e steps.Effect, note string) {
		e.Undone, e.Pending = true, false
		if err := j.Note(e); err != nil {
			errs = append(errs, err)
		}
		undone = append(undone, fmt.Sprintf("%s: %s %s%s", h.Name, e.Kind, e.ID, note))
	}
	// The run's agent, if it is somehow still alive, stops its own children
	// and deletes its devices when it ends.
	if h.AgentPID > 0 {
		if err := killIfSame(ctx, c, h.AgentPID, "rlab-agent"); err != nil {
			errs = append(errs, fmt.Errorf("down: host %q: %w", h.Name, err))
		}
	}
	for _, e := range effects {
		switch e.Kind {
		case "rxe":
			r, err := rpc.Invoke(ctx, c, rpc.RXEDelete, proto.RXEDeleteParams{Name: e.ID})
			var pe *proto.Error
			if err != nil && !(errors.As(err, &pe) && (pe.Code == proto.CodeNotFound || pe.Code == proto.CodeNoRXE)) {
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
			r, err := rpc.Invoke(ctx, c, rpc.ImpairRemove, proto.ImpairRemoveParams{Netdev: e.Netdev})
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
				if e.Kind == "tcp" {
					name = "rlab-agent"
				}
				if err := killIfSame(ctx, c, e.PID, name); err != nil {
					errs = append(errs, fmt.Errorf("down: host %q: %w", h.Name, err))
					continue
				}
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
	return undone, errors.Join(errs...)
}

// alreadyGone ends a DownResult.Undone line whose thing down found gone.
const alreadyGone = " (already gone)"

// killIfSame sends SIGTERM to pid on the host only when that pid still runs
// a program named name, so a reused pid is never hit.
func killIfSame(ctx context.Context, c Host, pid int, name string) error {
	p := strconv.Itoa(pid)
	out, code, err := runArgv(ctx, c, "down.ps."+p, []string{"ps", "-o", "args=", "-p", p})
	if err != nil {
		return err
	}
	if code != 0 || !strings.Contains(firstWord(out), name) {
		return nil // gone, or another program now
	}
	// The agent starts each process as the leader of its own group: the
	// group goes (a shell's children too), else the process alone.
	if _, code, err := runArgv(ctx, c, "down.killpg."+p, []string{"kill", "-TERM", "--", "-" + p}); err == nil && code == 0 {
		return nil
	}
	if _, code, err := runArgv(ctx, c, "down.kill."+p, []string{"kill", "-TERM", p}); err != nil || code != 0 {
		return fmt.Errorf("kill %s (pid %d): exit %d: %v", name, pid, code, err)
	}
	return nil
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
