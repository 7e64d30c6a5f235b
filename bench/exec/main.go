// Command exec benchmarks one trivial command on N network-namespace sshd
// hosts (engine/testbed): `rlab run` of a lab with one exec workload
// (`true`) per host, agent cached (warm) and not (cold), against `ansible
// all -m raw -a true` (ansible-core; pipelining on, fact gathering off,
// forks = N) and the floor, N parallel OpenSSH `ssh host true` logins, the
// latter two with rlab's key exchange (as bench/facts pins it), Ansible also
// with OpenSSH's default; and each with its logins kept between runs: rlab
// --persist, Ansible's default ControlPersist=60s, the floor through
// OpenSSH ControlMaster/ControlPersist. Rounds alternate the order; medians are printed as
// Markdown, raw timings written as JSON.
//
// -rlab-ref times a second rlab (e.g. the previous build) warm and with
// --persist in the same alternating rounds, next to -rlab (its own mux
// daemon; the cold case removes only -rlab's agent).
//
//	make build
//	go run ./bench/exec -rlab bin/rlab -hosts 100 -rounds 5 [-rlab-ref old/rlab]
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
	"slices"
	"strings"
	"time"

	"github.com/rlab-dev/rlab/engine/remote"
	"github.com/rlab-dev/rlab/engine/testbed"
	"github.com/rlab-dev/rlab/kinds/builtin"
)

func main() {
	builtin.Register() // the tool families whose programs facts probes
	rlab := flag.String("rlab", "bin/rlab", "rlab binary (with the agent embedded)")
	n := flag.Int("hosts", 100, "hosts")
	rounds := flag.Int("rounds", 5, "alternating rounds")
	persist = flag.String("persist", "60s", "how long rlab --persist, Ansible's and OpenSSH's ControlPersist keep logins (Ansible's default is 60s; rounds longer than it let them expire)")
	out := flag.String("out", "bench/exec/out", "folder for raw results")
	flag.StringVar(&rlabRef, "rlab-ref", "", "a second rlab (e.g. the previous build) timed warm and with --persist in the same rounds, next to -rlab")
	flag.Parse()
	if err := run(*rlab, *n, *rounds, *out); err != nil {
		fmt.Fprintln(os.Stderr, "bench/exec:", err)
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
	defer benchutil.StopControlMasters(dir)
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
	cfg, err := benchutil.AnsibleConfig(dir, "ansible.cfg", n, bed.KnownHosts, benchutil.Kex, "")
	if err != nil {
		return err
	}
	cfgDefault, _ := benchutil.AnsibleConfig(dir, "ansible-default-kex.cfg", n, bed.KnownHosts, "", "")
	cfgPersist, _ := benchutil.AnsibleConfig(dir, "ansible-persist.cfg", n, bed.KnownHosts, benchutil.Kex, *persist)
	ansible := func(cfg string) func() *exec.Cmd {
		return func() *exec.Cmd {
			c := exec.Command("ansible", "bed", "-i", invFile, "-m", "raw", "-a", "true", "-f", fmt.Sprint(n), "-u", bed.User, "--private-key", bed.KeyFile)
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
	defer func() {
		c := exec.Command(rlabAbs, "mux", "stop")
		c.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+xdg)
		c.Run()
	}()
	refAbs, xdgRef := "", filepath.Join(dir, "xdg-ref")
	if rlabRef != "" {
		if refAbs, err = filepath.Abs(rlabRef); err != nil {
			return err
		}
		if err := os.Mkdir(xdgRef, 0o700); err != nil {
			return err
		}
		defer func() {
			c := exec.Command(refAbs, "mux", "stop")
			c.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+xdgRef)
			c.Run()
		}()
	}
	cpDir := filepath.Join(dir, "cp")
	if err := os.Mkdir(cpDir, 0o700); err != nil {
		return err
	}
	runs := 0
	var own []string // -rlab's agents in the cache
	binRun := func(bin, xdg string, extra ...string) func() *exec.Cmd {
		return func() *exec.Cmd {
			runs++
			args := append([]string{"run", "--parallel", fmt.Sprint(n), "--out", filepath.Join(dir, "runs", fmt.Sprint(runs))}, extra...)
			c := exec.Command(bin, append(args, labFile)...)
			c.Env = append(os.Environ(), "SSH_AUTH_SOCK=", "XDG_RUNTIME_DIR="+xdg, "RLAB_PERSIST=")
			return c
		}
	}
	rlabRun := func(extra ...string) func() *exec.Cmd { return binRun(rlabAbs, xdg, extra...) }
	cache := filepath.Join(bed.Home, remote.CacheDir)
	cases := []benchutil.Case{
		{Name: "rlab run, exec `true` per host (agent cached)", Cmd: rlabRun()},
		{Name: "ansible -m raw -a true (same kex)", Cmd: ansible(cfg)},
		{Name: "floor: parallel `ssh host true` (same kex)", Floor: func() (time.Duration, error) { return benchutil.SSHFloor(bed) }},
		{Name: "ansible -m raw -a true (OpenSSH default kex)", Cmd: ansible(cfgDefault)},
		{Name: "rlab run, cold (agent shipped)", Prep: func() { removeOwn(cache, own) }, Cmd: rlabRun()},
		{Name: "rlab run --persist " + *persist + " (logins kept)", Cmd: rlabRun("--persist", *persist)},
		{Name: "ansible -m raw -a true, Ansible's ControlPersist=" + *persist, Cmd: ansible(cfgPersist)},
		{Name: "floor: parallel `ssh host true`, ControlPersist=" + *persist, Floor: func() (time.Duration, error) { return benchutil.SSHFloorPersist(bed, cpDir, *persist) }},
	}
	// Warm the agent cache once, and open the kept logins of the
	// persisting cases, as a user's first command does. What the first
	// warm-up cached is -rlab's agent, the only one the cold case removes.
	os.RemoveAll(cache)
	if err := benchutil.RunQuiet(rlabRun()()); err != nil {
		return fmt.Errorf("warm-up rlab run: %w", err)
	}
	ents, _ := os.ReadDir(cache)
	for _, e := range ents {
		own = append(own, e.Name())
	}
	warm := []int{5, 6, 7}
	if refAbs != "" {
		cases = append(cases,
			benchutil.Case{Name: "ref rlab run, exec `true` per host (agent cached)", Cmd: binRun(refAbs, xdgRef)},
			benchutil.Case{Name: "ref rlab run --persist " + *persist + " (logins kept)", Cmd: binRun(refAbs, xdgRef, "--persist", *persist)})
		warm = append(warm, 8, 9)
	}
	if err := benchutil.WarmUp(cases, warm...); err != nil {
		return err
	}
	times, err := benchutil.Rounds(cases, rounds, func(r int) []int {
		order := []int{0, 1, 2, 3, 5, 6, 7}
		if refAbs != "" {
			order = []int{0, 8, 1, 2, 3, 5, 9, 6, 7}
		}
		if r%2 == 1 {
			slices.Reverse(order)
		}
		return append(order, 4) // cold last: the rest stay warm
	}, 52)
	if err != nil {
		return err
	}
	load, _ := os.ReadFile("/proc/loadavg")
	raw, _ := json.MarshalIndent(map[string]any{"hosts": n, "rounds": rounds, "kex": benchutil.Kex, "rlab": rlabAbs, "rlab_ref": refAbs, "seconds": times, "when": time.Now().UTC(), "loadavg": strings.TrimSpace(string(load))}, "", "  ")
	if err := os.WriteFile(filepath.Join(out, "exec.json"), raw, 0o644); err != nil {
		return err
	}
	ansibleMedian := benchutil.Median(times[cases[1].Name])
	floor := benchutil.Median(times[cases[2].Name])
	ansiblePersist := benchutil.Median(times[cases[6].Name])
	fmt.Printf("| %d hosts, median of %d rounds | seconds | Ansible (same kex) / this | Ansible ControlPersist / this | this / floor |\n|---|---|---|---|---|\n", n, rounds)
	for _, c := range cases {
		m := benchutil.Median(times[c.Name])
		fmt.Printf("| %s | %.2f | %.1fx | %.1fx | %.2fx |\n", c.Name, m, ansibleMedian/m, ansiblePersist/m, m/floor)
	}
	fmt.Printf("\nload average at the end: %s\nraw: %s\n", strings.TrimSpace(string(load)), filepath.Join(out, "exec.json"))
	return nil
}

// removeOwn removes the named agents from the cache (a cold start of one
// rlab; the other's stays cached).
func removeOwn(cache string, own []string) {
	for _, h := range own {
		os.RemoveAll(filepath.Join(cache, h))
	}
}
