package run

import (
	"context"
	"errors"

	"github.com/rlab-dev/rlab/agent/proto"
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
