// Command scale measures the rlab controller at class scale on the
// network-namespace sshd test bed (engine/testbed): `rlab facts` and `rlab
// run` of class-scale.hcl (100 student pairs, an exec and a TCP transfer per
// pair) on 200 directly reachable hosts and on 200 hosts behind ONE bastion,
// every sshd with sshd's default MaxStartups 10:30:100. For each command it
// records wall time, CPU, the controller's peak RSS and peak open file
// descriptors, and failures (zero expected); then the same at 2, 10, 50, 100
// and 200 hosts (memory and CPU from 1 pair up). Rounds alternate facts and
// run; medians are printed as Markdown, raw measures written as JSON.
//
//	make build
//	go run ./bench/scale -rlab bin/rlab -hosts 200 -rounds 3
//
// Needs root and openssh-server; no QEMU VM may be running.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"github.com/rlab-dev/rlab/bench/internal/benchutil"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/rlab-dev/rlab/engine/remote"
	"github.com/rlab-dev/rlab/engine/testbed"
	"github.com/rlab-dev/rlab/kinds/builtin"
)

func main() {
	builtin.Register() // the tool families whose programs facts probes
	rlab := flag.String("rlab", "bin/rlab", "rlab binary (with the agent embedded)")
	n := flag.Int("hosts", 200, "hosts (even: they are paired)")
	rounds := flag.Int("rounds", 3, "alternating rounds at full size")
	steps := flag.String("steps", "2,10,50,100,200", "host counts for the memory/CPU curve (direct bed); empty: none")
	out := flag.String("out", "bench/scale/out", "folder for raw results")
	flag.Parse()
	if err := run(*rlab, *n, *rounds, *steps, *out); err != nil {
		fmt.Fprintln(os.Stderr, "bench/scale:", err)
		os.Exit(1)
	}
}

// row is one measured case: its rounds and their medians.
type row struct {
	Bed      string    `json:"bed"`
	Hosts    int       `json:"hosts"`
	Command  string    `json:"command"`
	Rounds   []Measure `json:"rounds"`
	Failures int       `json:"failures"` // hosts without facts, or non-zero run exits, over all rounds
}

func (r *row) med(f func(Measure) float64) float64 {
	var xs []float64
	for _, m := range r.Rounds {
		xs = append(xs, f(m))
	}
	return benchutil.Median(xs)
}

func run(rlab string, n, rounds int, steps, out string) error {
	if _, err := os.Stat("/usr/sbin/sshd"); err != nil || os.Geteuid() != 0 {
		return fmt.Errorf("needs root and openssh-server (testdata/deps.sh)")
	}
	if benchutil.QEMURunning() {
		return fmt.Errorf("a QEMU VM is running: benchmarks would measure it; stop it first")
	}
	if n%2 != 0 {
		return fmt.Errorf("-hosts %d: hosts are paired, give an even number", n)
	}
	rlabAbs, err := filepath.Abs(rlab)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	var rows []*row
	for _, kind := range []string{"direct", "bastion"} {
		r, err := benchBed(rlabAbs, kind, n, rounds, steps)
		rows = append(rows, r...)
		if err != nil {
			return err
		}
	}
	load, _ := os.ReadFile("/proc/loadavg")
	raw, _ := json.MarshalIndent(map[string]any{"hosts": n, "rounds": rounds, "rows": rows, "when": time.Now().UTC(), "loadavg": strings.TrimSpace(string(load))}, "", "  ")
	if err := os.WriteFile(filepath.Join(out, "scale.json"), raw, 0o644); err != nil {
		return err
	}
	fmt.Println("| bed | hosts | command | rounds | wall s (median) | CPU s | peak RSS MiB | peak fds | failures |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|")
	for _, r := range rows {
		fmt.Printf("| %s | %d | %s | %d | %.2f | %.2f | %.1f | %.0f | %d |\n", r.Bed, r.Hosts, r.Command, len(r.Rounds),
			r.med(func(m Measure) float64 { return m.Wall }), r.med(func(m Measure) float64 { return m.CPU }),
			r.med(func(m Measure) float64 { return m.MaxRSSMB }), r.med(func(m Measure) float64 { return float64(m.PeakFDs) }), r.Failures)
	}
	fmt.Printf("\nload average at the end: %s\nraw: %s\n", strings.TrimSpace(string(load)), filepath.Join(out, "scale.json"))
	return nil
}

// benchBed brings up one bed (kind "direct": n hosts; "bastion": n hosts
// behind one bastion), default MaxStartups everywhere, and measures it.
func benchBed(rlab, kind string, n, rounds int, steps string) ([]*row, error) {
	dir, err := os.MkdirTemp("", "rlab-bench-scale-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	o := testbed.Options{Hosts: n, MaxStartups: "10:30:100"}
	if kind == "bastion" {
		o = testbed.Options{BehindBastion: n, MaxStartups: "10:30:100"}
	}
	t0 := time.Now()
	bed, err := testbed.Up(dir, o)
	if err != nil {
		return nil, err
	}
	defer bed.Down()
	fmt.Fprintf(os.Stderr, "%s bed of %d hosts up in %v\n", kind, n, time.Since(t0).Round(time.Millisecond))
	lab, vars, err := classLab(bed, dir)
	if err != nil {
		return nil, err
	}
	i := 0
	one := func(r *row, pairs int) error {
		bedFile, err := writeBed(bed, dir, pairs)
		if err != nil {
			return err
		}
		args := append([]string{}, vars...)
		args = append(args, "--var", "bed="+bedFile)
		var m Measure
		if r.Command == "run" {
			i++
			m, err = measure(rlab, append(append([]string{"run", "--out", filepath.Join(dir, "runs", fmt.Sprint(i))}, args...), lab)...)
			if err == nil && m.Exit != 0 {
				r.Failures++
				fmt.Fprintf(os.Stderr, "rlab run exit %d:\n%s\n", m.Exit, m.Stderr)
			}
		} else {
			m, err = measure(rlab, append(append([]string{"facts", "--json"}, args...), lab)...)
			if err == nil {
				failed, first, ferr := factsErrors(m.Stdout, 2*pairs)
				if ferr != nil {
					return fmt.Errorf("%s: %w\n%s", kind, ferr, m.Stderr)
				}
				r.Failures += failed
				if failed > 0 {
					fmt.Fprintf(os.Stderr, "rlab facts: %d hosts failed: %s\n", failed, strings.Join(first, "; "))
				}
			}
		}
		if err != nil {
			return err
		}
		r.Rounds = append(r.Rounds, m)
		fmt.Fprintf(os.Stderr, "%-8s %3d hosts %-14s %6.2fs cpu %6.2fs rss %6.1f MiB fds %4d exit %d\n", kind, r.Hosts, r.Command, m.Wall, m.CPU, m.MaxRSSMB, m.PeakFDs, m.Exit)
		if benchutil.QEMURunning() {
			return fmt.Errorf("a QEMU VM started during the benchmark: the numbers would measure it; run again when it is done")
		}
		return nil
	}
	// Cold: no agent cached on the (shared) home.
	os.RemoveAll(filepath.Join(bed.Home, remote.CacheDir))
	cold := &row{Bed: kind, Hosts: n, Command: "facts (cold)"}
	if err := one(cold, n/2); err != nil {
		return nil, err
	}
	facts := &row{Bed: kind, Hosts: n, Command: "facts"}
	runs := &row{Bed: kind, Hosts: n, Command: "run"}
	rows := []*row{cold, facts, runs}
	for k := 0; k < rounds; k++ {
		order := []*row{facts, runs}
		if k%2 == 1 {
			order = []*row{runs, facts}
		}
		for _, r := range order {
			if err := one(r, n/2); err != nil {
				return rows, err
			}
		}
	}
	if kind != "direct" || steps == "" {
		return rows, nil
	}
	for _, s := range strings.Split(steps, ",") {
		var h int
		if _, err := fmt.Sscan(s, &h); err != nil || h < 2 || h > n || h%2 != 0 {
			return rows, fmt.Errorf("-steps: %q is not an even host count in 2..%d", s, n)
		}
		if h == n {
			continue // measured above
		}
		f := &row{Bed: kind, Hosts: h, Command: "facts"}
		r := &row{Bed: kind, Hosts: h, Command: "run"}
		for k := 0; k < rounds; k++ {
			if err := one(f, h/2); err != nil {
				return rows, err
			}
			if err := one(r, h/2); err != nil {
				return rows, err
			}
		}
		rows = append(rows, f, r)
	}
	sort.SliceStable(rows, func(a, b int) bool { return rows[a].Hosts < rows[b].Hosts })
	return rows, nil
}
