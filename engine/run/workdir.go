package run

import (
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc"
	"github.com/rlab-dev/rlab/engine/down"

	"github.com/rlab-dev/rlab/engine/runstate"
)

// removeWorkDir removes a host's work dir for this run once everything in
// it was pulled (fetchErr nil): the logs, pcaps and whatever its workloads
// wrote there would otherwise stay on the host for good. It is kept, and
// the run's log says where, when the pull failed or the run keeps what it
// made (--keep). Only a work dir of this run is removed: .../<run id>/<host>
// as the agent names it (a kept agent's lease too), never a path a host
// made up, and by a process the agent runs as the login user; the run's
// folder above it goes too once empty (hosts sharing a home).
func (r *runner) removeWorkDir(ctx context.Context, host string, fetchErr error) {
	r.mu.Lock()
	c := r.conns[host]
	f := r.env.Facts[host]
	r.mu.Unlock()
	if c == nil || f == nil {
		return
	}
	wd := f.WorkDir
	if !path.IsAbs(wd) || path.Clean(wd) != wd || path.Base(path.Dir(wd)) != r.runID {
		return
	}
	switch {
	case fetchErr != nil:
		r.log.Warn("the host's work dir is kept: not everything in it was pulled", "host", host, "work_dir", wd)
		return
	case r.opts.Keep:
		r.log.Info("the host's work dir is kept (--keep)", "host", host, "work_dir", wd)
		return
	}
	// One process: once the work dir is gone the agent can start no other
	// (their output files go there). The run's folder may still hold
	// another host's (a shared home): rmdir leaves it then.
	argv := []string{"sh", "-c", `rm -rf -- "$1" && { rmdir -- "$2" 2>/dev/null; true; }`, "sh", wd, path.Dir(wd)}
	if _, code, err := runArgv(ctx, c, "rm.workdir", argv); err != nil || code != 0 {
		r.log.Warn("remove the host's work dir", "host", host, "work_dir", wd, "exit", code, "err", err)
		return
	}
	r.log.Debug("removed the host's work dir", "host", host, "work_dir", wd)
	r.journal.NoteHost(func(st *runstate.State) {
		for i := range st.Hosts {
			if st.Hosts[i].Name == host {
				st.Hosts[i].WorkDirRemoved = true
			}
		}
	})
}

// runArgv runs argv on the host through its agent, as the login user, and
// returns its stdout and exit code (engine/down has its own, for down's
// commands).
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

// DownConnector is c as engine/down connects: a host as state.json
// recorded it, with no plan (rlab down).
func DownConnector(c Connector) down.Connector { return downConnector{c} }

type downConnector struct{ c Connector }

func (d downConnector) Connect(ctx context.Context, h runstate.Host, runID string) (down.Host, error) {
	x, err := d.c.Connect(ctx, Target{Host: h}, runID)
	if err != nil {
		return nil, err
	}
	return x, nil
}
