// Package kindstest is for tests that run workloads on this machine: it
// gives each test binary its own block of ports. It imports only kinds and
// the standard library (internal/archtest rules it); nothing but tests
// imports it.
package kindstest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"

	"github.com/rlab-dev/rlab/kinds"
)

// Blocks is how many workloads' blocks of ports UseFreePorts checks are
// free: more than any test lab here has.
const Blocks = 20

// UseFreePorts moves kinds.BasePort to a block of Blocks ×
// kinds.PortsPerWorkload ports that are free on this machine now, chosen
// at random below the kernel's ephemeral range (32768 on Linux) so that
// two test binaries run at once do not listen on the same ports (both
// took 20000 and 20010 before: "address already in use"). Call it from
// TestMain, before any test plans a lab.
func UseFreePorts() error {
	span := Blocks * kinds.PortsPerWorkload
	for try := 0; try < 200; try++ {
		base := 21000 + rand.IntN((32000-21000)/span)*span
		if free(base, span) {
			kinds.BasePort = base
			return nil
		}
	}
	return fmt.Errorf("no free block of %d ports between 21000 and 32000", span)
}

// free says whether every port of base..base+n-1 can be listened on now.
func free(base, n int) bool {
	for p := base; p < base+n; p++ {
		ln, err := net.Listen("tcp", net.JoinHostPort("", strconv.Itoa(p)))
		if err != nil {
			return false
		}
		ln.Close()
	}
	return true
}
