package rping

import (
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/engine/results"
	"github.com/rlab-dev/rlab/engine/toolout"
	"github.com/rlab-dev/rlab/engine/toolout/tooltest"
)

func FuzzRping(f *testing.F) {
	tooltest.Seed(f, func(n string) bool { return strings.HasPrefix(n, "rping") })
	f.Fuzz(func(t *testing.T, in []byte) {
		tooltest.CheckParse(t, func() ([]results.Sample, toolout.Info, error) { return toolout.Parse("rping", in, toolout.Options{}) })
		tooltest.CheckParse(t, func() ([]results.Sample, toolout.Info, error) {
			return toolout.Parse("rping", nil, toolout.Options{Stderr: in})
		})
	})
}
