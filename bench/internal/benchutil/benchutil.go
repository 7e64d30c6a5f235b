// Package benchutil holds what the benchmark harnesses under bench/ share:
// the OpenSSH floor (N parallel logins running `true`), medians, the QEMU
// guard and output tails. It is for bench/ only.
package benchutil

import (
	"fmt"
	"os"
	"os/exec"
	"sort"
	"sync"
	"time"

	"github.com/rlab-dev/rlab/engine/testbed"
)

// Kex is the key exchange every side of a comparison uses: what x/crypto
// settles on with OpenSSH 9.2 (OpenSSH's own default costs ~3x the CPU).
const Kex = "curve25519-sha256"

// SSHFloor times one parallel OpenSSH login running `true` on every host of
// the bed, with the same key exchange as rlab.
func SSHFloor(bed *testbed.Bed) (time.Duration, error) {
	var wg sync.WaitGroup
	errs := make([]error, len(bed.Hosts))
	start := time.Now()
	for i, h := range bed.Hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := exec.Command("ssh", "-F", "none", "-o", "BatchMode=yes", "-o", "ControlMaster=no", "-o", "KexAlgorithms="+Kex,
				"-o", "UserKnownHostsFile="+bed.KnownHosts, "-o", "StrictHostKeyChecking=yes",
				"-i", bed.KeyFile, bed.User+"@"+h.Addr, "true").CombinedOutput()
			if err != nil {
				errs[i] = fmt.Errorf("ssh %s: %v: %s", h.Addr, err, out)
			}
		}()
	}
	wg.Wait()
	d := time.Since(start)
	for _, err := range errs {
		if err != nil {
			return d, err
		}
	}
	return d, nil
}

// QEMURunning says whether a QEMU VM runs here (it would be measured too).
// RLAB_BENCH_SMOKE=1 ignores it to check a harness itself: its numbers are
// then not figures.
func QEMURunning() bool {
	return os.Getenv("RLAB_BENCH_SMOKE") != "1" && exec.Command("pgrep", "qemu").Run() == nil
}

// Median of xs (0 for none).
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// Tail is the last n bytes of s.
func Tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
