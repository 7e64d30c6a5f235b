// Package builtin registers every tool family rlab ships with, in this one
// visible file (as containerlab's core/register.go registers its node
// kinds). cmd/rlab calls Register before anything reads the registry; a test
// binary that needs the built-in tools calls it from its TestMain. Adding a
// family is its package under kinds/ and one line here.
package builtin

import (
	"sync"

	"github.com/rlab-dev/rlab/kinds"
	"github.com/rlab-dev/rlab/kinds/exec"
	"github.com/rlab-dev/rlab/kinds/perftest"
	"github.com/rlab-dev/rlab/kinds/pingpong"
	"github.com/rlab-dev/rlab/kinds/program"
	"github.com/rlab-dev/rlab/kinds/rping"
	"github.com/rlab-dev/rlab/kinds/tcp"
)

var once sync.Once

// Register registers the built-in families, once however often it is
// called. Their order is the report order of their metrics.
func Register() {
	once.Do(func() {
		kinds.Register(perftest.Kind{})
		kinds.Register(pingpong.Kind{})
		kinds.Register(rping.Kind{})
		kinds.Register(tcp.Kind{})
		kinds.Register(exec.Kind{})
		kinds.Register(program.Kind{})
	})
}
