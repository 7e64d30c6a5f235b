package steps

import (
	"testing"

	"github.com/rlab-dev/rlab/kinds"
)

// TestEveryToolHasAKind: every tool of the descriptor has a step kind, so no
// tool passes `rlab validate` to fail only in `rlab run`.
func TestEveryToolHasAKind(t *testing.T) {
	for _, n := range kinds.Names() {
		if _, ok := KindOf(n); !ok {
			t.Errorf("tool %s (descriptor) has no step kind", n)
		}
	}
	if _, ok := KindOf("no_such_tool"); ok {
		t.Error("an undescribed tool has a step kind")
	}
}
