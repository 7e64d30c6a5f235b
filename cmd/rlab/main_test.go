package main

import (
	"os"
	"testing"

	"github.com/rlab-dev/rlab/kinds"
	"github.com/rlab-dev/rlab/kinds/builtin"
	"github.com/rlab-dev/rlab/kinds/kindstest"
	"github.com/rlab-dev/rlab/kinds/madeup"
)

// TestMain registers the built-in families (as run does) and the made-up
// one of kinds/madeup, by its one line (madeup_test.go).
func TestMain(m *testing.M) {
	builtin.Register()
	// Its own block of ports: another test binary may run workloads on
	// this machine's loopback at the same time.
	if err := kindstest.UseFreePorts(); err != nil {
		panic(err)
	}
	kinds.Register(madeup.Kind{})
	// The key that signs state.json's paths (engine/runstate paths.go) goes
	// to a config folder of the tests', not the user's.
	cfg, err := os.MkdirTemp("", "rlab-config-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_CONFIG_HOME", cfg)
	code := m.Run()
	os.RemoveAll(cfg)
	os.Exit(code)
}
