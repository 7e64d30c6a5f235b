// Command facts benchmarks `rlab facts` on N network-namespace sshd hosts
// (engine/testbed), cold (no agent cached) and warm, side by side in the
// same run with Ansible gathering the same facts with the raw module
// (pipelining on, fact gathering off, forks = N) and the floor: N parallel
// OpenSSH `ssh host true` logins. Rounds alternate the four; medians are
// printed as a Markdown table and raw timings written as JSON.
//
//	go build -o bin/rlab ./cmd/rlab   # with the agent embedded: make build
//	go run ./bench/facts -rlab bin/rlab -hosts 50 -rounds 5
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

// rawFacts is what the Ansible raw task runs on each host: the same facts
// rlab's agent reports (kernel, OS, CPUs, memory, netdevs, RDMA devices,
// rdma_rxe, tools, memlock, free disk).
const rawFacts = `uname -srm; . /etc/os-release; echo "$PRETTY_NAME"; nproc; head -1 /proc/meminfo; ip -o addr; ls /sys/class/infiniband 2>/dev/null; modinfo -n rdma_rxe 2>/dev/null || echo no-rdma_rxe; for t in rdma ibv_devinfo ib_write_bw rping tcpdump; do command -v $t || true; done; ulimit -l; df -B1 --output=avail ~ | tail -1`

func main() {
	rlab := flag.String("rlab", "bin/rlab", "rlab binary (with the agent embedded)")
	n := flag.Int("hosts", 50, "hosts")
	rounds := flag.Int("rounds", 5, "alternating rounds")
	out := flag.String("out", "bench/out/facts", "folder for raw results")
	flag.Parse()
	if err := run(*rlab, *n, *rounds, *out); err != nil {
		fmt.Fprintln(os.Stderr, "bench/facts:", err)
		os.Exit(1)
	}
}

func run(rlab string, n, rounds int, out string) error {
	if _, err := os.Stat("/usr/sbin/sshd"); err != nil || os.Geteuid() != 0 {
		return fmt.Errorf("needs root and openssh-server (testdata/deps.sh)")
	}
	if exec.Command("pgrep", "qemu").Run() == nil {
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
	dir, err := os.MkdirTemp("", "rlab-bench-facts-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bed, err := testbed.Up(dir, testbed.Options{Hosts: n})
	if err != nil {
		return err
	}
	defer bed.Down()

	labFile := filepath.Join(dir, "bench.hcl")
	var lab strings.Builder
	fmt.Fprintf(&lab, "lab \"bench\" {}\nssh {\n  user = %q\n  identity_file = %q\n  known_hosts = %q\n}\n", bed.User, bed.KeyFile, bed.KnownHosts)
	var inv strings.Builder
	inv.WriteString("[bed]\n")
	for _, h := range bed.Hosts {
		fmt.Fprintf(&lab, "host %q { address = %q }\n", h.Name, h.Addr)
		fmt.Fprintf(&inv, "%s ansible_host=%s\n", h.Name, h.Addr)
	}
	if err := os.WriteFile(labFile, []byte(lab.String()), 0o600); err != nil {
		return err
	}
	invFile := filepath.Join(dir, "inventory.ini")
	os.WriteFile(invFile, []byte(inv.String()), 0o600)
	// Every run logs in afresh, as rlab does: no ControlPersist master left
	// over from the previous round. cfg uses rlab's key exchange; cfgDefault
	// OpenSSH's own default (what an Ansible user gets).
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
			c := exec.Command("ansible", "bed", "-i", invFile, "-m", "raw", "-a", rawFacts, "-f", fmt.Sprint(n), "-u", bed.User, "--private-key", bed.KeyFile)
			c.Env = append(os.Environ(), "ANSIBLE_CONFIG="+cfg)
			return c
		}
	}

	cache := filepath.Join(bed.Home, remote.CacheDir)
	cases := []struct {
		name string
		prep func()
		cmd  func() *exec.Cmd
	}{
		{"rlab facts, cold (agent shipped)", func() { os.RemoveAll(cache) }, func() *exec.Cmd {
			return exec.Command(rlabAbs, "facts", "-json", "--parallel", fmt.Sprint(n), labFile)
		}},
		{"rlab facts, warm (agent cached)", nil, func() *exec.Cmd {
			return exec.Command(rlabAbs, "facts", "-json", "--parallel", fmt.Sprint(n), labFile)
		}},
		{"ansible -m raw (same facts, same kex)", nil, ansible(cfg)},
		{"floor: parallel `ssh host true`", nil, nil},
		{"ansible -m raw (OpenSSH default kex)", nil, ansible(cfgDefault)},
	}
	times := map[string][]float64{}
	for r := 0; r < rounds; r++ {
		// Alternate the order each round so no case always runs first.
		order := []int{0, 1, 2, 3, 4}
		if r%2 == 1 {
			order = []int{4, 3, 2, 0, 1}
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
			fmt.Fprintf(os.Stderr, "round %d  %-40s %.3fs\n", r, c.name, d.Seconds())
			if exec.Command("pgrep", "qemu").Run() == nil {
				return fmt.Errorf("a QEMU VM started during round %d: the numbers would measure it; run again when it is done", r)
			}
		}
	}
	load, _ := os.ReadFile("/proc/loadavg")
	raw, _ := json.MarshalIndent(map[string]any{"hosts": n, "rounds": rounds, "seconds": times, "when": time.Now().UTC(), "loadavg": strings.TrimSpace(string(load))}, "", "  ")
	os.WriteFile(filepath.Join(out, "facts.json"), raw, 0o644)
	ansibleMedian := benchutil.Median(times[cases[2].name])
	floor := benchutil.Median(times[cases[3].name])
	fmt.Printf("| %d hosts, median of %d rounds | seconds | Ansible / this | this / floor |\n|---|---|---|---|\n", n, rounds)
	for _, c := range cases {
		m := benchutil.Median(times[c.name])
		fmt.Printf("| %s | %.2f | %.1fx | %.2fx |\n", c.name, m, ansibleMedian/m, m/floor)
	}
	fmt.Printf("\nload average at the end: %s\n", strings.TrimSpace(string(load)))
	return nil
}
