package main

import (
	"os"
	"testing"

	"github.com/rlab-dev/rlab/kinds"
	"github.com/rlab-dev/rlab/kinds/builtin"
)

// TestMain registers the built-in families (as run does) and the made-up
// one of madeup_test.go.
func TestMain(m *testing.M) {
	builtin.Register()
	kinds.Register(cliFakeKind{})
	os.Exit(m.Run())
}
