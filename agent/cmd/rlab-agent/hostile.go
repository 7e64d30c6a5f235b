//go:build rlabhostile

package main

import (
	"os"

	"github.com/rlab-dev/rlab/agent/server"
)

// In a binary built with -tags rlabhostile (security tests only), the agent
// misbehaves as RLAB_AGENT_HOSTILE says; see server.HostileModes. With
// RLAB_AGENT_HOSTILE_HASH it claims that build hash in its hello, as a
// hostile host can (the controller then takes it for the agent it shipped).
func init() {
	testHooks = func(opts *server.Options) error {
		if h := os.Getenv("RLAB_AGENT_HOSTILE_HASH"); h != "" {
			opts.Hash = h
		}
		mode := os.Getenv("RLAB_AGENT_HOSTILE")
		if mode == "" {
			return nil
		}
		return server.EnableHostile(opts, mode)
	}
}
