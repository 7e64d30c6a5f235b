// Package kindstest is for tests that run workloads on this machine: it
// gives each test binary its own block of ports. It imports only kinds and
// the standard library (internal/archtest rules it); nothing but tests
// imports it.
package kindstest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"

	"github.com/rlab-dev/rlab/kinds"
)

// Blocks is how many workloads' blocks of ports UseFreePorts checks are
// free: more than any test lab here has.
const Blocks = 20

// UseFreePorts moves kinds.BasePort to a block of Blocks ×
// kinds.PortsPerWorkload ports that are free on this machine now, chosen
// at random below the kernel's ephemeral range (32768 on Linux) so that
// two test binaries run at once do not listen on the same ports (both
// took 20000 and 20010 before: "address already in use"). A block is
// also claimed with a lock held until the binary exits (claim): free only
// says nobody listens yet, and two binaries starting together both found
// the same block free, then both listened on it. Call it from TestMain,
// before any test plans a lab.
func UseFreePorts() error {
	span := Blocks * kinds.PortsPerWorkload
	for try := 0; try < 200; try++ {
		base := 21000 + rand.IntN((32000-21000)/span)*span
		f, ok := claim(base)
		if !ok {
			continue
		}
		if free(base, span) {
			held.Lock()
			held.files = append(held.files, f) // open, so the lock lasts
			held.Unlock()
			kinds.BasePort = base
			return nil
		}
		f.Close()
	}
	return fmt.Errorf("no free block of %d ports between 21000 and 32000", span)
}

// held keeps the claimed blocks' lock files open for the binary's life.
var held struct {
	sync.Mutex
	files []*os.File
}

// claim takes the lock of the block at base (flock, released when its file
// closes or the process ends), or says another holds it.
func claim(base int) (*os.File, bool) {
	p := filepath.Join(os.TempDir(), "rlab-kindstest-ports-"+strconv.Itoa(base)+".lock")
	f, err := os.OpenFile(p, os.O_RDONLY|os.O_CREATE, 0o666)
	if err != nil {
		return nil, false
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, false
	}
	return f, true
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
