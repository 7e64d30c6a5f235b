// Command exec benchmarks one trivial command on N network-namespace sshd
// hosts (engine/testbed): `rlab run` of a lab with one exec workload
// (`true`) per host, agent cached (warm) and not (cold), against `ansible
// all -m raw -a true` (ansible-core; pipelining on, fact gathering off,
// forks = N) and the floor, N parallel OpenSSH `ssh host true` logins, the
// latter two with rlab's key exchange (as bench/facts pins it), Ansible also
// with OpenSSH's default. Rounds alternate the order; medians are printed as
// Markdown, raw timings written as JSON.
//
//	make build
//	go run ./bench/exec -rlab bin/rlab -hosts 100 -rounds 5
//
// Needs root, openssh-server and ansible-core; no QEMU VM may be running.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"github.com/rlab-dev/rlab/bench/internal/benchutil"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/rlab-dev/rlab/engine/remote"
	"github.com/rlab-dev/rlab/engine/testbed"
)

func main() {
	rlab := flag.String("rlab", "bin/rlab", "rlab binary (with the agent embedded)")
	n := flag.Int("hosts", 100, "hosts")
	rounds := flag.Int("rounds", 5, "alternating rounds")
	out := flag.String("out", "bench/exec/out", "folder for raw results")
	flag.Parse()
	if err := run(*rlab, *n, *rounds, *out); err != nil {
		fmt.Fprintln(os.Stderr, "bench/exec:", err)
		os.Exit(1)
	}
}

func run(rlab string, n, rounds int, out string) error {
	if _, err := os.Stat("/usr/sbin/sshd"); err != nil || os.Geteuid() != 0 {
		return fmt.Errorf("needs root and openssh-server (testdata/deps.sh)")
	}
	if benchutil.QEMURunning() {
		return fmt.Errorf("a QEMU VM is running: benchmarks would measure it; stop it first")
	}
	if _, err := exec.LookPath("ansible"); err != nil {
		return fmt.Errorf("ansible not found: apt-get install ansible-core")
	}
	rlabAbs, err := filepath.Abs(rlab)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "rlab-bench-exec-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bed, err := testbed.Up(dir, testbed.Options{Hosts: n})
	if err != nil {
		return err
	}
	defer bed.Down()

	var lab, inv strings.Builder
	fmt.Fprintf(&lab, "lab \"bench-exec\" {}\nssh {\n  user = %q\n  identity_file = %q\n  known_hosts = %q\n}\n", bed.User, bed.KeyFile, bed.KnownHosts)
	inv.WriteString("[bed]\n")
	for _, h := range bed.Hosts {
		fmt.Fprintf(&lab, "host %q { address = %q }\n", h.Name, h.Addr)
		fmt.Fprintf(&inv, "%s ansible_host=%s\n", h.Name, h.Addr)
	}
	for _, h := range bed.Hosts {
		fmt.Fprintf(&lab, "workload \"true_%s\" {\n  tool = \"exec\"\n  host = host.%s\n  command = [\"true\"]\n}\n", h.Name, h.Name)
	}
	labFile := filepath.Join(dir, "bench.hcl")
	if err := os.WriteFile(labFile, []byte(lab.String()), 0o644); err != nil {
		return err
	}
	invFile := filepath.Join(dir, "inventory.ini")
	if err := os.WriteFile(invFile, []byte(inv.String()), 0o600); err != nil {
		return err
	}
	ansibleCfg := func(name, kexOpt string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(fmt.Sprintf(`[defaults]
forks = %d
gathering = explicit
host_key_checking = True
interpreter_python = auto_silent
[ssh_connection]
pipelining = True
ssh_args = -o ControlMaster=no %s -o UserKnownHostsFile=%s -o StrictHostKeyChecking=yes -o BatchMode=yes
`, n, kexOpt, bed.KnownHosts)), 0o600)
		return p
	}
	cfg := ansibleCfg("ansible.cfg", "-o KexAlgorithms="+benchutil.Kex)
	cfgDefault := ansibleCfg("ansible-default-kex.cfg", "")
	ansible := func(cfg string) func() *exec.Cmd {
		return func() *exec.Cmd {
			c := exec.Command("ansible", "bed", "-i", invFile, "-m", "raw", "-a", "true", "-f", fmt.Sprint(n), "-u", bed.User, "--private-key", bed.KeyFile)
			c.Env = append(os.Environ(), "ANSIBLE_CONFIG="+cfg)
			return c
		}
	}
	runs := 0
	rlabRun := func() *exec.Cmd {
		runs++
		c := exec.Command(rlabAbs, "run", "--parallel", fmt.Sprint(n), "--out", filepath.Join(dir, "runs", fmt.Sprint(runs)), labFile)
		c.Env = append(os.Environ(), "SSH_AUTH_SOCK=")
		return c
	}
	cache := filepath.Join(bed.Home, remote.CacheDir)
	cases := []struct {
		name string
		prep func()
		cmd  func() *exec.Cmd
	}{
		{"rlab run, exec `true` per host (agent cached)", nil, rlabRun},
		{"ansible -m raw -a true (same kex)", nil, ansible(cfg)},
		{"floor: parallel `ssh host true` (same kex)", nil, nil},
		{"ansible -m raw -a true (OpenSSH default kex)", nil, ansible(cfgDefault)},
		{"rlab run, cold (agent shipped)", func() { os.RemoveAll(cache) }, rlabRun},
	}
	// Warm the agent cache once.
	if err := rlabRun().Run(); err != nil {
		return fmt.Errorf("warm-up rlab run: %w", err)
	}
	times := map[string][]float64{}
	for r := 0; r < rounds; r++ {
		order := []int{0, 1, 2, 3, 4}
		if r%2 == 1 {
			order = []int{3, 2, 1, 0, 4} // cold last: it leaves the cache warm again
		}
		for _, i := range order {
			c := cases[i]
			if c.prep != nil {
				c.prep()
			}
			var d time.Duration
			var err error
			if c.cmd == nil {
				d, err = benchutil.SSHFloor(bed)
			} else {
				cmd := c.cmd()
				var stderr strings.Builder
				cmd.Stdout, cmd.Stderr = nil, &stderr
				start := time.Now()
				err = cmd.Run()
				d = time.Since(start)
				if err != nil {
					err = fmt.Errorf("%v: %s", err, benchutil.Tail(stderr.String(), 2000))
				}
			}
			if err != nil {
				return fmt.Errorf("round %d, %s: %w", r, c.name, err)
			}
			times[c.name] = append(times[c.name], d.Seconds())
			fmt.Fprintf(os.Stderr, "round %d  %-48s %.3fs\n", r, c.name, d.Seconds())
			if benchutil.QEMURunning() {
				return fmt.Errorf("a QEMU VM started during round %d: the numbers would measure it; run again when it is done", r)
			}
		}
	}
	load, _ := os.ReadFile("/proc/loadavg")
	raw, _ := json.MarshalIndent(map[string]any{"hosts": n, "rounds": rounds, "kex": benchutil.Kex, "seconds": times, "when": time.Now().UTC(), "loadavg": strings.TrimSpace(string(load))}, "", "  ")
	if err := os.WriteFile(filepath.Join(out, "exec.json"), raw, 0o644); err != nil {
		return err
	}
	ansibleMedian := benchutil.Median(times[cases[1].name])
	floor := benchutil.Median(times[cases[2].name])
	fmt.Printf("| %d hosts, median of %d rounds | seconds | Ansible (same kex) / this | this / floor |\n|---|---|---|---|\n", n, rounds)
	for _, c := range cases {
		m := benchutil.Median(times[c.name])
		fmt.Printf("| %s | %.2f | %.1fx | %.2fx |\n", c.name, m, ansibleMedian/m, m/floor)
	}
	fmt.Printf("\nload average at the end: %s\nraw: %s\n", strings.TrimSpace(string(load)), filepath.Join(out, "exec.json"))
	return nil
}
