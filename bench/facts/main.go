// Command facts benchmarks `rlab facts` on N network-namespace sshd hosts
// (engine/testbed), cold (no agent cached) and warm, side by side in the
// same run with Ansible gathering the same facts with the raw module
// (pipelining on, fact gathering off, forks = N) and the floor: N parallel
// OpenSSH `ssh host true` logins. Each also with its logins kept between
// runs: rlab --persist, Ansible's default ControlPersist=60s, and the floor
// through OpenSSH ControlMaster/ControlPersist. Rounds alternate the order;
// medians are printed as a Markdown table and raw timings written as JSON.
// Cold runs also report how many agent copies they shipped (the hosts share
// one home: a late host may find a sibling's install). -rlab-ref times a
// second rlab (the previous build) cold and warm in the same rounds.
//
//	go build -o bin/rlab ./cmd/rlab   # with the agent embedded: make build
//	go run ./bench/facts -rlab bin/rlab -hosts 50 -rounds 5 [-rlab-ref old/rlab]
//
// Needs root, openssh-server and ansible-core; no QEMU VM may be running.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/rlab-dev/rlab/bench/internal/benchutil"

	"github.com/rlab-dev/rlab/engine/remote"
	"github.com/rlab-dev/rlab/engine/testbed"
	"github.com/rlab-dev/rlab/kinds/builtin"
)

// rawFacts is what the Ansible raw task runs on each host: the same facts
// rlab's agent reports (kernel, OS, CPUs, memory, netdevs, RDMA devices,
// rdma_rxe, tools, memlock, free disk).
const rawFacts = `uname -srm; . /etc/os-release; echo "$PRETTY_NAME"; nproc; head -1 /proc/meminfo; ip -o addr; ls /sys/class/infiniband 2>/dev/null; modinfo -n rdma_rxe 2>/dev/null || echo no-rdma_rxe; for t in rdma ibv_devinfo ib_write_bw rping tcpdump; do command -v $t || true; done; ulimit -l; df -B1 --output=avail ~ | tail -1`

func main() {
	builtin.Register() // the tool families whose programs facts probes
	rlab := flag.String("rlab", "bin/rlab", "rlab binary (with the agent embedded)")
	n := flag.Int("hosts", 50, "hosts")
	rounds := flag.Int("rounds", 5, "alternating rounds")
	persist = flag.String("persist", "60s", "how long rlab --persist, Ansible's and OpenSSH's ControlPersist keep logins (Ansible's default is 60s; rounds longer than it let them expire)")
	out := flag.String("out", "bench/facts/out", "folder for raw results")
	flag.StringVar(&rlabRef, "rlab-ref", "", "a second rlab (e.g. the previous build) timed cold and warm in the same rounds, next to -rlab")
	flag.Parse()
	if err := run(*rlab, *n, *rounds, *out); err != nil {
		fmt.Fprintln(os.Stderr, "bench/facts:", err)
		os.Exit(1)
	}
}

var (
	persist *string
	rlabRef string
)

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
	defer benchutil.StopControlMasters(dir)
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
	// cfg: a fresh login per run (ControlMaster off) with rlab's key
	// exchange; cfgDefault: OpenSSH's default kex (what an Ansible user
	// gets); cfgPersist: Ansible's default connection sharing
	// (ControlPersist=60s), the fair reference for rlab --persist.
	cfg, err := benchutil.AnsibleConfig(dir, "ansible.cfg", n, bed.KnownHosts, benchutil.Kex, "")
	if err != nil {
		return err
	}
	cfgDefault, _ := benchutil.AnsibleConfig(dir, "ansible-default-kex.cfg", n, bed.KnownHosts, "", "")
	cfgPersist, _ := benchutil.AnsibleConfig(dir, "ansible-persist.cfg", n, bed.KnownHosts, benchutil.Kex, *persist)
	ansible := func(cfg string) func() *exec.Cmd {
		return func() *exec.Cmd {
			c := exec.Command("ansible", "bed", "-i", invFile, "-m", "raw", "-a", rawFacts, "-f", fmt.Sprint(n), "-u", bed.User, "--private-key", bed.KeyFile)
			c.Env = append(os.Environ(), "ANSIBLE_CONFIG="+cfg)
			return c
		}
	}
	// rlab --persist keeps its logins in a mux daemon whose folder is
	// private to this bench; it is stopped at the end.
	xdg := filepath.Join(dir, "xdg")
	if err := os.Mkdir(xdg, 0o700); err != nil {
		return err
	}
	rlabCmd := func(extra ...string) func() *exec.Cmd {
		return func() *exec.Cmd {
			c := exec.Command(rlabAbs, append(append([]string{"facts", "-json", "--parallel", fmt.Sprint(n)}, extra...), labFile)...)
			c.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+xdg, "RLAB_PERSIST=")
			return c
		}
	}
	defer func() {
		c := exec.Command(rlabAbs, "mux", "stop")
		c.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+xdg)
		c.Run()
	}()
	cpDir := filepath.Join(dir, "cp")
	if err := os.Mkdir(cpDir, 0o700); err != nil {
		return err
	}

	cache := filepath.Join(bed.Home, remote.CacheDir)
	// Cold runs report what they shipped, in copies of the agent (the
	// bytes one copy costs on the wire, measured on one host): the bed's
	// hosts share one home, so a host that starts late may find a
	// sibling's fresh install.
	lab1 := filepath.Join(dir, "bench1.hcl")
	var lab1hcl strings.Builder
	fmt.Fprintf(&lab1hcl, "lab \"bench1\" {}\nssh {\n  user = %q\n  identity_file = %q\n  known_hosts = %q\n}\nhost %q { address = %q }\n", bed.User, bed.KeyFile, bed.KnownHosts, bed.Hosts[0].Name, bed.Hosts[0].Addr)
	if err := os.WriteFile(lab1, []byte(lab1hcl.String()), 0o600); err != nil {
		return err
	}
	shipped := map[string][]float64{}
	cold := func(name, bin string) (benchutil.Case, error) {
		unit, own, err := copyBytes(bin, lab1, cache, xdg)
		if err != nil {
			return benchutil.Case{}, err
		}
		fmt.Fprintf(os.Stderr, "%s: one agent copy is %d bytes on the wire; its agent is %s\n", bin, unit, filepath.Base(own))
		return benchutil.Case{Name: name, Floor: func() (time.Duration, error) {
			// Only this rlab's agent: the other's stays cached for its
			// warm cases.
			os.RemoveAll(own)
			c := exec.Command(bin, "facts", "-json", "--parallel", fmt.Sprint(n), labFile)
			c.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+xdg, "RLAB_PERSIST=")
			var stderr strings.Builder
			c.Stdout, c.Stderr = io.Discard, &stderr
			start := time.Now()
			err := c.Run()
			d := time.Since(start)
			if err != nil {
				return d, fmt.Errorf("%v: %s", err, benchutil.Tail(stderr.String(), 2000))
			}
			shipped[name] = append(shipped[name], float64(benchutil.ShippedBytes(stderr.String()))/float64(unit))
			return d, nil
		}}, nil
	}
	coldCase, err := cold("rlab facts, cold (agent shipped)", rlabAbs)
	if err != nil {
		return err
	}
	cases := []benchutil.Case{
		coldCase,
		{Name: "rlab facts, warm (agent cached)", Cmd: rlabCmd()},
		{Name: "ansible -m raw (same facts, same kex)", Cmd: ansible(cfg)},
		{Name: "floor: parallel `ssh host true`", Floor: func() (time.Duration, error) { return benchutil.SSHFloor(bed) }},
		{Name: "ansible -m raw (OpenSSH default kex)", Cmd: ansible(cfgDefault)},
		{Name: "rlab facts, warm, --persist " + *persist + " (logins kept)", Cmd: rlabCmd("--persist", *persist)},
		{Name: "ansible -m raw, Ansible's ControlPersist=" + *persist, Cmd: ansible(cfgPersist)},
		{Name: "floor: parallel `ssh host true`, ControlPersist=" + *persist, Floor: func() (time.Duration, error) { return benchutil.SSHFloorPersist(bed, cpDir, *persist) }},
	}
	// Groups keep each warm case right after its cold one; odd rounds
	// run the groups in reverse.
	groups := [][]int{{0, 1}, {2}, {3}, {4}, {5}, {6}, {7}}
	if rlabRef != "" {
		refAbs, err := filepath.Abs(rlabRef)
		if err != nil {
			return err
		}
		refCold, err := cold("ref rlab facts, cold (agent shipped)", refAbs)
		if err != nil {
			return err
		}
		cases = append(cases, refCold, benchutil.Case{Name: "ref rlab facts, warm (agent cached)", Cmd: func() *exec.Cmd {
			c := exec.Command(refAbs, "facts", "-json", "--parallel", fmt.Sprint(n), labFile)
			c.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+xdg, "RLAB_PERSIST=")
			return c
		}})
		groups = append(groups, []int{8, 9})
	}
	if err := benchutil.WarmUp(cases, 5, 6, 7); err != nil {
		return err
	}
	times, err := benchutil.Rounds(cases, rounds, func(r int) []int {
		var order []int
		for i := range groups {
			g := groups[i]
			if r%2 == 1 {
				g = groups[len(groups)-1-i]
			}
			order = append(order, g...)
		}
		return order
	}, 40)
	if err != nil {
		return err
	}
	load, _ := os.ReadFile("/proc/loadavg")
	raw, _ := json.MarshalIndent(map[string]any{"hosts": n, "rounds": rounds, "seconds": times, "cold_copies_shipped": shipped, "rlab": rlabAbs, "rlab_ref": rlabRef, "when": time.Now().UTC(), "loadavg": strings.TrimSpace(string(load))}, "", "  ")
	os.WriteFile(filepath.Join(out, "facts.json"), raw, 0o644)
	ansibleMedian := benchutil.Median(times[cases[2].Name])
	floor := benchutil.Median(times[cases[3].Name])
	ansiblePersist := benchutil.Median(times[cases[6].Name])
	fmt.Printf("| %d hosts, median of %d rounds | seconds | Ansible / this | Ansible ControlPersist / this | this / floor |\n|---|---|---|---|---|\n", n, rounds)
	for _, c := range cases {
		m := benchutil.Median(times[c.Name])
		fmt.Printf("| %s | %.2f | %.1fx | %.1fx | %.2fx |\n", c.Name, m, ansibleMedian/m, ansiblePersist/m, m/floor)
	}
	for _, c := range cases {
		if cp, ok := shipped[c.Name]; ok {
			fmt.Printf("\n%s: agent copies shipped per round %v", c.Name, cp)
		}
	}
	fmt.Printf("\n\nload average at the end: %s\n", strings.TrimSpace(string(load)))
	return nil
}

// copyBytes is what one agent copy costs on the wire for this rlab (what a
// cold `rlab facts` of one host says it shipped) and the cache folder of
// its agent.
func copyBytes(rlab, lab, cache, xdg string) (int64, string, error) {
	os.RemoveAll(cache)
	c := exec.Command(rlab, "facts", "-json", lab)
	c.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+xdg, "RLAB_PERSIST=")
	var stderr strings.Builder
	c.Stdout, c.Stderr = io.Discard, &stderr
	if err := c.Run(); err != nil {
		return 0, "", fmt.Errorf("%s facts of one host: %v: %s", rlab, err, benchutil.Tail(stderr.String(), 2000))
	}
	n := benchutil.ShippedBytes(stderr.String())
	if n <= 0 {
		return 0, "", fmt.Errorf("%s facts of one host, cold, said it shipped nothing: %s", rlab, benchutil.Tail(stderr.String(), 2000))
	}
	dirs, _ := filepath.Glob(filepath.Join(cache, "*", "rlab-agent"))
	if len(dirs) != 1 {
		return 0, "", fmt.Errorf("%s facts of one host, cold: want one agent in %s, found %d", rlab, cache, len(dirs))
	}
	return n, filepath.Dir(dirs[0]), nil
}
