package steps

import (
	"context"
	"slices"
	"testing"

	"github.com/rlab-dev/rlab/kinds"
)

// TestRunPlannedByPosition: each trial runs its own plan whatever its N
// (N numbers ports and handles; a plan's trials need not be numbered
// from 0), in order, and a trial numbered past the list does not panic.
func TestRunPlannedByPosition(t *testing.T) {
	w := &Workload{Workload: kinds.Workload{Name: "w", Tool: "ib_write_bw"}, Trials: []kinds.Planned{
		{Trial: kinds.Trial{Size: 64, N: 5}, Client: []string{"a"}},
		{Trial: kinds.Trial{Size: 128, N: 7}, Client: []string{"b"}},
	}}
	var ran []string
	var out Outcome
	err := RunPlanned(context.Background(), &Env{}, &out, w, func(ctx context.Context, u kinds.Planned) error {
		ran = append(ran, u.Client[0])
		if want := map[string]int64{"a": 64, "b": 128}[u.Client[0]]; u.Size != want {
			t.Errorf("trial %q has size %d, want %d", u.Client[0], u.Size, want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a", "b"}; !slices.Equal(ran, want) {
		t.Errorf("ran %q, want %q", ran, want)
	}
}
