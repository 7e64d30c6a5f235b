package down

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc"
	"github.com/rlab-dev/rlab/engine/provision"
	"github.com/rlab-dev/rlab/engine/runstate"
	"github.com/rlab-dev/rlab/steps"
)

// watchdogNote ends a DownResult.Undone line of a thing the run's agent
// had undone by itself when its watchdog fired.
func watchdogNote(rec *proto.WatchdogRecord) string {
	return fmt.Sprintf(" (already undone by the run's agent at %s: it heard nothing from rlab for %s)",
		rec.At.UTC().Format(time.RFC3339), rpc.FormatDuration(time.Duration(rec.SilentMs/1000)*time.Second))
}

// readWatchdog reads the record the run's agent left in its work dir when
// its watchdog fired (nil when there is none). It is read by a process the
// agent runs as the login user (no become), like everything else of the
// work dir.
func readWatchdog(ctx context.Context, c Host, workDir string) *proto.WatchdogRecord {
	if workDir == "" || !path.IsAbs(workDir) {
		return nil
	}
	out, code, err := runArgv(ctx, c, "down.watchdog", []string{"cat", "--", path.Join(workDir, proto.WatchdogFile)})
	if err != nil || code != 0 {
		return nil
	}
	var rec proto.WatchdogRecord
	if json.Unmarshal([]byte(out), &rec) != nil || rec.At.IsZero() || rec.SilentMs < 0 {
		return nil
	}
	return &rec
}

// watchdogKey is what a watchdog record names an effect by: a process by
// its handle, an rxe device by its name, an impairment by its netdev.
type watchdogKey struct{ kind, name string }

func watchdogKeyOf(e steps.Effect) watchdogKey {
	switch e.Type {
	case "rxe":
		return watchdogKey{"rxe", e.ID}
	case "impair":
		return watchdogKey{"impair", e.Netdev}
	default:
		return watchdogKey{"proc", e.ID}
	}
}

// undoneByWatchdog is the set of the host's effects that the record names as
// undone, by watchdogKeyOf. Both sides are large and neither is rlab's: the
// effects come from the run directory's state.json (up to a million
// objects, rundir.StateObjects) and the record from the host (one answer of
// up to proto.MaxLine, 8 MiB: some 2 million short names), and looking each
// effect up in the record's lists cost effects × entries (SECURITY 149). So
// the effects are indexed once and the record read once: time effects +
// entries, memory the effects'.
func undoneByWatchdog(rec *proto.WatchdogRecord, effects []steps.Effect) map[watchdogKey]bool {
	if rec == nil {
		return nil
	}
	want := make(map[watchdogKey]bool, len(effects))
	for _, e := range effects {
		want[watchdogKeyOf(e)] = true
	}
	found := map[watchdogKey]bool{}
	for kind, names := range map[string][]string{
		"rxe":    rec.Undone.DevicesDeleted,
		"impair": rec.Undone.ImpairsRemoved,
		"proc":   rec.Undone.Stopped,
	} {
		for _, n := range names {
			if k := (watchdogKey{kind, n}); want[k] {
				found[k] = true
			}
		}
	}
	return found
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

// toRemove is what `rlab down --remove-provisioned` removes on h: what
// this run installed there and has not removed yet.
func toRemove(h runstate.Host) *runstate.Provision {
	if p := h.Provision; p != nil && !p.Removed && len(p.Installed) > 0 {
		return p
	}
	return nil
}

// removeProvisioned removes, through the host's agent, the packages this
// run installed on h, and journals it.
func removeProvisioned(ctx context.Context, j *runstate.Journal, c Host, h runstate.Host) (string, error) {
	p := toRemove(h)
	if p == nil {
		return "", nil
	}
	r := provision.Remove(ctx, c, h.Name, provision.Family(p.Family), p.Installed, provision.Options{})
	if r.Err != nil {
		return "", fmt.Errorf("down: %w", r.Err)
	}
	err := j.NoteHost(func(st *runstate.State) {
		for i := range st.Hosts {
			if st.Hosts[i].Name == h.Name && st.Hosts[i].Provision != nil {
				st.Hosts[i].Provision.Removed = true
			}
		}
	})
	return fmt.Sprintf("%s: packages %s removed", h.Name, strings.Join(p.Installed, " ")), err
}
