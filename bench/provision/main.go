// Command provision benchmarks `rlab provision` against `rlab check` on N
// network-namespace sshd hosts (engine/testbed) where nothing is missing:
// the lab captures with tcpdump on every host and runs the agent's own tcp
// workload, all of which this machine has, so provision must cost about
// one facts round and call no package manager (issue 15: at most 1.2x
// check). Both run with become (sudo -n), side by side, rounds alternating
// the order; medians are printed as a Markdown table.
//
//	make build
//	go run ./bench/provision -rlab bin/rlab -hosts 50 -rounds 5
//
// Needs root and openssh-server; no QEMU VM may be running.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/rlab-dev/rlab/bench/internal/benchutil"
	"github.com/rlab-dev/rlab/engine/testbed"
)

func main() {
	rlab := flag.String("rlab", "bin/rlab", "rlab binary (with the agent embedded)")
	n := flag.Int("hosts", 50, "hosts")
	rounds := flag.Int("rounds", 5, "alternating rounds")
	flag.Parse()
	if err := run(*rlab, *n, *rounds); err != nil {
		fmt.Fprintln(os.Stderr, "bench/provision:", err)
		os.Exit(1)
	}
}

func run(rlab string, n, rounds int) error {
	if _, err := os.Stat("/usr/sbin/sshd"); err != nil || os.Geteuid() != 0 {
		return fmt.Errorf("needs root and openssh-server (testdata/deps.sh)")
	}
	if benchutil.QEMURunning() {
		return fmt.Errorf("a QEMU VM is running: benchmarks would measure it; stop it first")
	}
	rlabAbs, err := filepath.Abs(rlab)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "rlab-bench-provision-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bed, err := testbed.Up(dir, testbed.Options{Hosts: n})
	if err != nil {
		return err
	}
	defer bed.Down()

	var lab strings.Builder
	fmt.Fprintf(&lab, "lab \"bench\" {}\nssh {\n  user = %q\n  identity_file = %q\n  known_hosts = %q\n  become = true\n}\n", bed.User, bed.KeyFile, bed.KnownHosts)
	for i, h := range bed.Hosts {
		fmt.Fprintf(&lab, "host %q { address = %q }\n", h.Name, h.Addr)
		fmt.Fprintf(&lab, "capture %q {\n  host = host.%s\n  netdev = \"any\"\n}\n", "c"+h.Name, h.Name)
		if i%2 == 1 {
			fmt.Fprintf(&lab, "workload %q {\n  tool = \"tcp\"\n  server = host.%s\n  client = host.%s\n}\n", "tcp"+h.Name, bed.Hosts[i-1].Name, h.Name)
		}
	}
	labFile := filepath.Join(dir, "bench.hcl")
	if err := os.WriteFile(labFile, []byte(lab.String()), 0o600); err != nil {
		return err
	}
	cmd := func(args ...string) func() *exec.Cmd {
		return func() *exec.Cmd {
			c := exec.Command(rlabAbs, append(append(args, "--parallel", fmt.Sprint(n)), labFile)...)
			c.Env = append(os.Environ(), "RLAB_PERSIST=")
			return c
		}
	}
	out := filepath.Join(dir, "prov")
	cases := []benchutil.Case{
		{Name: "rlab check", Cmd: cmd("check")},
		{Name: "rlab provision", Cmd: cmd("provision", "--out", out), Prep: func() { os.RemoveAll(out) }},
	}
	if err := benchutil.WarmUp(cases, 0, 1); err != nil {
		return err
	}
	b, _ := os.ReadFile(filepath.Join(out, "provision.json"))
	if strings.Count(string(b), `"installed": []`) != n {
		return fmt.Errorf("provision installed something, or not on every host:\n%s", b)
	}
	times, err := benchutil.Rounds(cases, rounds, func(r int) []int {
		if r%2 == 1 {
			return []int{1, 0}
		}
		return []int{0, 1}
	}, 16)
	if err != nil {
		return err
	}
	check, prov := benchutil.Median(times["rlab check"]), benchutil.Median(times["rlab provision"])
	fmt.Printf("| %d hosts, median of %d rounds | seconds | / check |\n|---|---|---|\n", n, rounds)
	fmt.Printf("| rlab check | %.3f | 1.00x |\n| rlab provision (nothing missing) | %.3f | %.2fx |\n", check, prov, prov/check)
	return nil
}
