package run

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/rlab-dev/rlab/engine/plan"
)

// TestRunRXENameAndKeep: an rxe block's name is the device created, keep =
// true leaves it after the run while the others are deleted, and --keep
// (Options.Keep) leaves every device (labs/README.md, rxe block; README.md,
// rlab run --keep).
func TestRunRXENameAndKeep(t *testing.T) {
	const src = twoHosts + `
rxe "named" {
  host   = host.a
  netdev = "lo"
  name   = "rxe_mine"
  keep   = true
}
rxe "plain" {
  host   = host.b
  netdev = "lo"
}
workload "x" {
  tool    = "exec"
  host    = host.a
  command = ["true"]
}
`
	for _, tc := range []struct {
		name     string
		keepFlag bool
		left     []string
	}{
		{"keep attribute", false, []string{"a/rxe_mine"}},
		{"--keep", true, []string{"a/rxe_mine", "b/rxe_lo"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := &fakeKernel{devs: map[string]string{}}
			res := runPlanned(context.Background(), t, loadLab(t, src), plan.Options{}, Options{Connector: rxeConnector(newPipeBed(t), k), Out: filepath.Join(t.TempDir(), "r"),
				NoReport: true, Preflight: noPreflight, Keep: tc.keepFlag})
			if res.Code != ExitOK {
				t.Fatalf("code %d: %v", res.Code, res.Err)
			}
			slices.Sort(k.created)
			if want := []string{"a/rxe_mine", "b/rxe_lo"}; !slices.Equal(k.created, want) {
				t.Errorf("created %v, want %v (name, else rxe_<netdev>)", k.created, want)
			}
			var left []string
			for id := range k.devs {
				left = append(left, id)
			}
			slices.Sort(left)
			if !slices.Equal(left, tc.left) {
				t.Errorf("left after the run: %v, want %v (deleted %v)", left, tc.left, k.deleted)
			}
		})
	}
}
