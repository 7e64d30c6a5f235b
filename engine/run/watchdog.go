package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc"
	"github.com/rlab-dev/rlab/steps"
)

// armWatchdog arms the agent watchdog of a host just connected, when it
// has one: should this rlab vanish (its network gone, not a clean exit),
// the agent undoes what the run made there by itself. An agent from before
// the watchdog is said so and used as it is.
func (r *runner) armWatchdog(ctx context.Context, host string, c Host) {
	limit := r.opts.AgentWatchdog
	if limit == 0 {
		limit = DefaultAgentWatchdog
	}
	w, ok := c.(watchdogHost)
	if limit < 0 || !ok {
		return
	}
	err := w.Watchdog(ctx, limit)
	var pe *proto.Error
	switch {
	case err == nil:
	case errors.As(err, &pe) && pe.Code == proto.CodeUnknown:
		r.log.Warn("the host's agent has no watchdog: should rlab lose its network, what the run made there stays until rlab down", "host", host)
	default:
		r.log.Warn("arm the host's agent watchdog", "host", host, "err", err)
	}
}

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

// undoneByWatchdog reports whether the record names e as undone.
func undoneByWatchdog(rec *proto.WatchdogRecord, e steps.Effect) bool {
	if rec == nil {
		return false
	}
	switch e.Type {
	case "rxe":
		return slices.Contains(rec.Undone.DevicesDeleted, e.ID)
	case "impair":
		return slices.Contains(rec.Undone.ImpairsRemoved, e.Netdev)
	default:
		return slices.Contains(rec.Undone.Stopped, e.ID)
	}
}
