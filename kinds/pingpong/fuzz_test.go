package pingpong

import (
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/engine/results"
	"github.com/rlab-dev/rlab/engine/toolout"
	"github.com/rlab-dev/rlab/engine/toolout/tooltest"
)

func FuzzPingpong(f *testing.F) {
	tooltest.Seed(f, func(n string) bool { return strings.HasPrefix(n, "ibv_") })
	f.Fuzz(func(t *testing.T, in []byte) {
		tooltest.CheckParse(t, func() ([]results.Sample, toolout.Info, error) {
			return toolout.Parse("ibv_rc_pingpong", in, toolout.Options{})
		})
	})
}
