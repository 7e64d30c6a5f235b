package kinds_test

import (
	"os"
	"testing"

	"github.com/rlab-dev/rlab/kinds/builtin"
)

// TestMain registers the built-in families: the tests here check them.
func TestMain(m *testing.M) {
	builtin.Register()
	os.Exit(m.Run())
}
