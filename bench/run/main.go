// Command run benchmarks what `rlab run` adds per workload: a lab of N no-op
// exec workloads (`true`), one on each of N network-namespace sshd hosts
// (engine/testbed), against `rlab facts` on the same lab and hosts, in the
// same process run, rounds alternating. Both connect to every host, ship (a
// cached) agent and read facts; run also creates the run directory, runs the
// workloads, pulls logs, writes results and tears down. The agent cache is
// warmed first so both measure warm runs. Target: run ≤ 1.5 × facts.
//
//	make build
//	go run ./bench/run -rlab bin/rlab -hosts 50 -rounds 5
//
// Needs root and openssh-server; no QEMU VM may be running.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/rlab-dev/rlab/engine/testbed"
)

func main() {
	rlab := flag.String("rlab", "bin/rlab", "rlab binary (with the agent embedded)")
	n := flag.Int("hosts", 50, "hosts (one no-op exec workload each)")
	rounds := flag.Int("rounds", 5, "alternating rounds")
	flag.Parse()
	if err := run(*rlab, *n, *rounds); err != nil {
		fmt.Fprintln(os.Stderr, "bench/run:", err)
		os.Exit(1)
	}
}

func run(rlab string, n, rounds int) error {
	if _, err := os.Stat("/usr/sbin/sshd"); err != nil || os.Geteuid() != 0 {
		return fmt.Errorf("needs root and openssh-server (testdata/deps.sh)")
	}
	if exec.Command("pgrep", "qemu").Run() == nil {
		return fmt.Errorf("a QEMU VM is running: benchmarks would measure it; stop it first")
	}
	rlabAbs, err := filepath.Abs(rlab)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "rlab-bench-run-")
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
	fmt.Fprintf(&lab, "lab \"bench-run\" {}\nssh {\n  user = %q\n  identity_file = %q\n  known_hosts = %q\n}\n", bed.User, bed.KeyFile, bed.KnownHosts)
	for _, h := range bed.Hosts {
		fmt.Fprintf(&lab, "host %q { address = %q }\n", h.Name, h.Addr)
	}
	for _, h := range bed.Hosts {
		fmt.Fprintf(&lab, "workload \"noop_%s\" {\n  tool = \"exec\"\n  host = host.%s\n  command = [\"true\"]\n}\n", h.Name, h.Name)
	}
	labFile := filepath.Join(dir, "bench.hcl")
	if err := os.WriteFile(labFile, []byte(lab.String()), 0o644); err != nil {
		return err
	}
	runs := filepath.Join(dir, "runs")
	facts := []string{"facts", labFile}
	i := 0
	runArgs := func() []string {
		i++
		return []string{"run", "--out", filepath.Join(runs, fmt.Sprint(i)), labFile}
	}
	// Warm the agent cache (shared home) so both commands measure warm runs.
	if _, err := timed(rlabAbs, facts); err != nil {
		return err
	}
	var tf, tr []time.Duration
	for r := 0; r < rounds; r++ {
		d, err := timed(rlabAbs, facts)
		if err != nil {
			return err
		}
		tf = append(tf, d)
		d, err = timed(rlabAbs, runArgs())
		if err != nil {
			return err
		}
		tr = append(tr, d)
		fmt.Fprintf(os.Stderr, "round %d: facts %v, run %v\n", r+1, tf[r].Round(time.Millisecond), tr[r].Round(time.Millisecond))
	}
	mf, mr := median(tf), median(tr)
	fmt.Printf("| hosts | rounds | rlab facts (median) | rlab run, %d no-op exec workloads (median) | run / facts |\n|---|---|---|---|---|\n", n)
	fmt.Printf("| %d | %d | %v | %v | %.2fx |\n", n, rounds, mf.Round(time.Millisecond), mr.Round(time.Millisecond), float64(mr)/float64(mf))
	fmt.Printf("\nraw facts: %v\nraw run:   %v\n", tf, tr)
	return nil
}

func timed(bin string, args []string) (time.Duration, error) {
	cmd := exec.Command(bin, args...)
	cmd.Stdout = nil
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	d := time.Since(start)
	if err != nil {
		return d, fmt.Errorf("rlab %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return d, nil
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
