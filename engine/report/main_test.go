package report_test

import (
	"os"
	"testing"

	"github.com/rlab-dev/rlab/kinds"
	"github.com/rlab-dev/rlab/kinds/builtin"
	"github.com/rlab-dev/rlab/kinds/madeup"
)

// TestMain registers the built-in tool families, as cmd/rlab does: the
// tests here read their descriptors; and the made-up family, by its one
// line (madeup_test.go).
func TestMain(m *testing.M) {
	builtin.Register()
	kinds.Register(madeup.Kind{})
	os.Exit(m.Run())
}
