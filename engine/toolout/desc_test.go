package toolout

import (
	"testing"

	"github.com/rlab-dev/rlab/kinds"
)

// TestParsersFollowDescriptor: every tool the descriptor runs as a program
// with metrics of its own has a parser, the built-in tools have none, and a
// tool the descriptor does not know (ibv_xsrq_pingpong: rdma_rxe has no XRC)
// is not parsed either.
func TestParsersFollowDescriptor(t *testing.T) {
	for _, tl := range kinds.All() {
		want := tl.Program != nil && len(tl.Metrics) > 0
		if got := Supported(tl.Name); got != want {
			t.Errorf("Supported(%s) = %v, want %v", tl.Name, got, want)
		}
	}
	if Supported("ibv_xsrq_pingpong") {
		t.Error("ibv_xsrq_pingpong is parsed but no other layer knows it")
	}
}
