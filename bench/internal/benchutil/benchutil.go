// Package benchutil holds what the benchmark harnesses under bench/ share:
// the OpenSSH floor (N parallel logins running `true`), medians, the QEMU
// guard, output tails and the timed rounds of side-by-side cases. It is for
// bench/ only.
package benchutil

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/rlab-dev/rlab/engine/results"
	"github.com/rlab-dev/rlab/engine/testbed"
)

// Kex is the key exchange every side of a comparison uses: what x/crypto
// settles on with OpenSSH 9.2 (OpenSSH's own default costs ~3x the CPU).
const Kex = "curve25519-sha256"

// SSHFloor times one parallel OpenSSH login running `true` on every host of
// the bed, with the same key exchange as rlab.
func SSHFloor(bed *testbed.Bed) (time.Duration, error) {
	return sshFloor(bed, "-o", "ControlMaster=no")
}

// SSHFloorPersist is SSHFloor through OpenSSH's own connection sharing
// (ControlMaster=auto, ControlPersist=persist, sockets in controlDir): the
// floor for rlab --persist. The first call logs in and leaves the masters.
func SSHFloorPersist(bed *testbed.Bed, controlDir, persist string) (time.Duration, error) {
	return sshFloor(bed, "-o", "ControlMaster=auto", "-o", "ControlPersist="+persist, "-o", "ControlPath="+controlDir+"/%C")
}

// AnsibleConfig writes an ansible.cfg for a bed (forks, fact gathering
// off, pipelining on, host keys checked) and returns its path. kex ""
// leaves OpenSSH's default key exchange; persist ("60s" is Ansible's
// default) uses Ansible's own connection sharing (its default ssh_args:
// -C -o ControlMaster=auto -o ControlPersist=...) with control sockets in
// dir; "" a fresh login per run.
func AnsibleConfig(dir, name string, forks int, knownHosts, kex, persist string) (string, error) {
	share := "-o ControlMaster=no"
	if persist != "" {
		share = "-C -o ControlMaster=auto -o ControlPersist=" + persist
	}
	if kex != "" {
		share += " -o KexAlgorithms=" + kex
	}
	p := filepath.Join(dir, name)
	cp := filepath.Join(dir, "ansible-cp")
	if err := os.MkdirAll(cp, 0o700); err != nil {
		return "", err
	}
	err := os.WriteFile(p, []byte(fmt.Sprintf(`[defaults]
forks = %d
gathering = explicit
host_key_checking = True
interpreter_python = auto_silent
[ssh_connection]
pipelining = True
control_path_dir = %s
ssh_args = %s -o UserKnownHostsFile=%s -o StrictHostKeyChecking=yes -o BatchMode=yes
`, forks, cp, share, knownHosts)), 0o600)
	return p, err
}

func sshFloor(bed *testbed.Bed, share ...string) (time.Duration, error) {
	var wg sync.WaitGroup
	errs := make([]error, len(bed.Hosts))
	start := time.Now()
	for i, h := range bed.Hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			args := append([]string{"-F", "none", "-o", "BatchMode=yes"}, share...)
			args = append(args, "-o", "KexAlgorithms="+Kex,
				"-o", "UserKnownHostsFile="+bed.KnownHosts, "-o", "StrictHostKeyChecking=yes",
				"-i", bed.KeyFile, bed.User+"@"+h.Addr, "true")
			// Output to a file, not a pipe: a ControlPersist master that
			// ssh leaves in the background would hold a pipe open.
			f, err := os.CreateTemp("", "rlab-floor-")
			if err != nil {
				errs[i] = err
				return
			}
			defer os.Remove(f.Name())
			defer f.Close()
			cmd := exec.Command("ssh", args...)
			cmd.Stdout, cmd.Stderr = f, f
			if err := cmd.Run(); err != nil {
				out, _ := os.ReadFile(f.Name())
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

// RunQuiet runs cmd with its output in a file (a pipe would be held open
// by an OpenSSH ControlPersist master that Ansible leaves in the
// background) and returns the output's tail with an error.
func RunQuiet(cmd *exec.Cmd) error {
	f, err := os.CreateTemp("", "rlab-bench-out-")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Run(); err != nil {
		out, _ := os.ReadFile(f.Name())
		return fmt.Errorf("%v: %s", err, Tail(string(out), 2000))
	}
	return nil
}

// QEMURunning says whether a QEMU VM runs here (it would be measured too).
// RLAB_BENCH_SMOKE=1 ignores it to check a harness itself: its numbers are
// then not figures.
func QEMURunning() bool {
	return os.Getenv("RLAB_BENCH_SMOKE") != "1" && exec.Command("pgrep", "qemu").Run() == nil
}

// Median of xs (0 for none): the one median rlab reports with.
func Median(xs []float64) float64 { return results.Median(xs) }

// Tail is the last n bytes of s.
func Tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// StopControlMasters ends the OpenSSH ControlPersist masters (ours and
// Ansible's) whose control sockets are under dir: they would otherwise
// outlive the bench by their persist time, holding connections to a bed
// that is gone.
func StopControlMasters(dir string) {
	if dir == "" {
		return
	}
	exec.Command("pkill", "-f", "--", "^ssh: "+dir+"/.*\\[mux\\]").Run()
}

// Case is one side of a benchmark: a command to time, or a floor that
// times itself; Prep runs before each timing, untimed.
type Case struct {
	Name  string
	Prep  func()
	Cmd   func() *exec.Cmd
	Floor func() (time.Duration, error)
}

// Time runs the case once (Prep untimed) and returns how long it took.
func (c Case) Time() (time.Duration, error) {
	if c.Prep != nil {
		c.Prep()
	}
	if c.Floor != nil {
		return c.Floor()
	}
	start := time.Now()
	err := RunQuiet(c.Cmd())
	return time.Since(start), err
}

// WarmUp runs the cases at idx once, untimed: kept-login cases then start
// from kept logins, as a user's second command does.
func WarmUp(cases []Case, idx ...int) error {
	for _, i := range idx {
		if _, err := cases[i].Time(); err != nil {
			return fmt.Errorf("warm-up %s: %w", cases[i].Name, err)
		}
	}
	return nil
}

// Rounds times every case in each round, in the order order(r) gives,
// logging each timing to stderr (names padded to width), and returns the
// seconds per case name. It stops at the first failure, and when a QEMU VM
// starts (it would be measured too).
func Rounds(cases []Case, rounds int, order func(r int) []int, width int) (map[string][]float64, error) {
	times := map[string][]float64{}
	for r := 0; r < rounds; r++ {
		for _, i := range order(r) {
			c := cases[i]
			d, err := c.Time()
			if err != nil {
				return times, fmt.Errorf("round %d, %s: %w", r, c.Name, err)
			}
			times[c.Name] = append(times[c.Name], d.Seconds())
			fmt.Fprintf(os.Stderr, "round %d  %-*s %.3fs\n", r, width, c.Name, d.Seconds())
			if QEMURunning() {
				return times, fmt.Errorf("a QEMU VM started during round %d: the numbers would measure it; run again when it is done", r)
			}
		}
	}
	return times, nil
}

var shippedLine = regexp.MustCompile(`(?m)^agent: (\d+) bytes shipped to \d+ hosts`)

// ShippedBytes is what rlab said it shipped ("agent: N bytes shipped to M
// hosts" on stderr); 0 when it did not say (nothing shipped).
func ShippedBytes(stderr string) int64 {
	g := shippedLine.FindStringSubmatch(stderr)
	if g == nil {
		return 0
	}
	n, _ := strconv.ParseInt(g[1], 10, 64)
	return n
}
