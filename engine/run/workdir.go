package run

import (
	"context"
	"path"

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

// removeDirScript removes $1 (and $2, its folder, once empty) and prints
// what it held ("FILES KIB"), or "gone" when there was no $1.
const removeDirScript = `[ -e "$1" ] || [ -L "$1" ] || { echo gone; exit 0; }
n=$(find "$1" -type f 2>/dev/null | wc -l); k=$(du -sk -- "$1" 2>/dev/null | cut -f1)
rm -rf -- "$1" || exit 1
rmdir -- "$2" 2>/dev/null
echo "$n $k"`

// runWorkDir is the run's work dir on a host as down may remove it: the
// recorded one, when it is .../<run id>/<name> in the same runs folder as
// the down agent's own (.../<run id>-down/<name>, the login user's), never
// another path a state.json names. ok is false, with why, otherwise.
func runWorkDir(recorded, downWD, runID string) (string, string) {
	wd := recorded
	switch {
	case !path.IsAbs(wd) || path.Clean(wd) != wd || path.Base(path.Dir(wd)) != runID:
		return "", "not a work dir of this run (.../" + runID + "/HOST)"
	case downWD != "" && (path.Dir(path.Dir(wd)) != path.Dir(path.Dir(downWD)) || path.Base(wd) != path.Base(downWD)):
		return "", "not in the login user's runs folder (" + path.Dir(path.Dir(downWD)) + ")"
	}
	return wd, ""
}
