package e2e

import (
	"os"
	"testing"

	"github.com/rlab-dev/rlab/kinds/builtin"
)

// TestMain registers the built-in tool families: the image these tests boot
// installs each family's packages (engine/image), and an image built
// without them has no perftest (seen in CI after kinds/ landed).
func TestMain(m *testing.M) {
	builtin.Register()
	os.Exit(m.Run())
}
