//go:build rlabhostile

package main

import (
	"os"

	"github.com/rlab-dev/rlab/agent/server"
)

// In a binary built with -tags rlabhostile (security tests only), the agent
// misbehaves as RLAB_AGENT_HOSTILE says; see server.HostileModes.
func init() {
	testHooks = func(opts *server.Options) error {
		mode := os.Getenv("RLAB_AGENT_HOSTILE")
		if mode == "" {
			return nil
		}
		return server.EnableHostile(opts, mode)
	}
}
