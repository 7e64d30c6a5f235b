package kindstest

import (
	"testing"

	"github.com/rlab-dev/rlab/kinds"
)

// TestUseFreePortsClaimsDistinctBlocks: each call (as each test binary
// run at once) gets a block no other holds, though none listens on it yet;
// free alone let two binaries starting together take one block (30 calls
// over the 55 blocks collided nearly always).
func TestUseFreePortsClaimsDistinctBlocks(t *testing.T) {
	defer func(b int) { kinds.BasePort = b }(kinds.BasePort)
	held.Lock()
	before := len(held.files)
	held.Unlock()
	defer func() { // give the blocks back, for -count
		held.Lock()
		for _, f := range held.files[before:] {
			f.Close()
		}
		held.files = held.files[:before]
		held.Unlock()
	}()
	seen := map[int]int{}
	for i := 0; i < 30; i++ {
		if err := UseFreePorts(); err != nil {
			t.Fatal(err)
		}
		if j, ok := seen[kinds.BasePort]; ok {
			t.Fatalf("call %d got block %d, which call %d holds", i, kinds.BasePort, j)
		}
		seen[kinds.BasePort] = i
	}
}
