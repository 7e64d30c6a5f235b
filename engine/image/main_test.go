package image_test

import (
	"os"
	"testing"

	"github.com/rlab-dev/rlab/kinds/builtin"
)

// TestMain registers the built-in tool families, as cmd/rlab does: the
// tests here read their descriptors.
func TestMain(m *testing.M) {
	builtin.Register()
	os.Exit(m.Run())
}
