package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/rlab-dev/rlab/bench/internal/benchutil"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/rlab-dev/rlab/engine/testbed"
)

// Measure is one controller command's cost, taken from the outside: wall
// time, CPU (user+system, its children included), peak RSS (the kernel's
// rusage maxrss) and peak open file descriptors (/proc/PID/fd polled every
// 10 ms).
type Measure struct {
	Args     []string `json:"args"`
	Wall     float64  `json:"wall_s"`
	CPU      float64  `json:"cpu_s"`
	MaxRSSMB float64  `json:"max_rss_mib"`
	PeakFDs  int      `json:"peak_fds"`
	Exit     int      `json:"exit"`
	Stdout   string   `json:"-"`
	Stderr   string   `json:"stderr,omitempty"`
}

// measure runs bin with args, argv only, and measures it.
func measure(bin string, args ...string) (Measure, error) {
	m := Measure{Args: args}
	cmd := exec.Command(bin, args...)
	var o, e strings.Builder
	cmd.Stdout, cmd.Stderr = &o, &e
	cmd.Env = append(os.Environ(), "SSH_AUTH_SOCK=")
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return m, fmt.Errorf("start %s %s: %w", bin, strings.Join(args, " "), err)
	}
	done := make(chan struct{})
	peak := make(chan int)
	go func() {
		fdDir := fmt.Sprintf("/proc/%d/fd", cmd.Process.Pid)
		max := 0
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			if ents, err := os.ReadDir(fdDir); err == nil && len(ents) > max {
				max = len(ents)
			}
			select {
			case <-done:
				peak <- max
				return
			case <-t.C:
			}
		}
	}()
	err := cmd.Wait()
	m.Wall = time.Since(start).Seconds()
	close(done)
	m.PeakFDs = <-peak
	m.Stdout, m.Stderr = o.String(), benchutil.Tail(e.String(), 4000)
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		m.Exit = ee.ExitCode()
	} else if err != nil {
		return m, fmt.Errorf("run %s %s: %w", bin, strings.Join(args, " "), err)
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		m.MaxRSSMB = float64(ru.Maxrss) / 1024 // KiB on Linux
	}
	m.CPU = (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	return m, nil
}

// bedJSON is what bench/scale/class-scale.hcl reads (var.bed): the bed's
// login settings and its hosts paired as students s000.. (server h2k,
// client h2k+1).
type bedJSON struct {
	User         string             `json:"user"`
	IdentityFile string             `json:"identity_file"`
	KnownHosts   string             `json:"known_hosts"`
	Students     map[string]student `json:"students"`
}

type student struct {
	Server string `json:"server"`
	Client string `json:"client"`
}

// writeBed writes the class lab's JSON for the first 2*pairs hosts of the
// bed and returns its path.
func writeBed(bed *testbed.Bed, dir string, pairs int) (string, error) {
	if 2*pairs > len(bed.Hosts) {
		return "", fmt.Errorf("%d pairs need %d hosts, the bed has %d", pairs, 2*pairs, len(bed.Hosts))
	}
	j := bedJSON{User: bed.User, IdentityFile: bed.KeyFile, KnownHosts: bed.KnownHosts, Students: map[string]student{}}
	for i := 0; i < pairs; i++ {
		j.Students[fmt.Sprintf("s%03d", i)] = student{Server: bed.Hosts[2*i].Addr, Client: bed.Hosts[2*i+1].Addr}
	}
	b, _ := json.MarshalIndent(j, "", "  ")
	p := filepath.Join(dir, fmt.Sprintf("bed-%d-pairs.json", pairs))
	return p, os.WriteFile(p, b, 0o600)
}

// ClassLab is the path of class-scale.hcl (found from this source file).
func ClassLab() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "class-scale.hcl")
}

// classLab returns the lab to run on the bed, copied into dir beside the bed
// JSON it reads (file() reads only under the lab's folder): class-scale.hcl
// itself when the hosts are behind the bastion (the run passes --var
// jump=...), else without the jump line (the lab language refuses jump =
// null, so one file cannot say "no jump" through a variable).
func classLab(bed *testbed.Bed, dir string) (path string, vars []string, err error) {
	src, err := os.ReadFile(ClassLab())
	if err != nil {
		return "", nil, err
	}
	if bed.Bastion != nil {
		path = filepath.Join(dir, "class-scale.hcl")
		vars = []string{"--var", "jump=" + bed.User + "@" + bed.Bastion.Addr + ":22"}
		return path, vars, os.WriteFile(path, src, 0o644)
	}
	var out []string
	for _, l := range strings.Split(string(src), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "jump ") {
			continue
		}
		out = append(out, l)
	}
	path = filepath.Join(dir, "class-scale-direct.hcl")
	return path, nil, os.WriteFile(path, []byte(strings.Join(out, "\n")), 0o644)
}

// factsErrors counts the hosts of `rlab facts -json` output without facts
// and returns the first few errors.
func factsErrors(out string, want int) (failed int, firstErrs []string, err error) {
	var got map[string]struct {
		Facts json.RawMessage `json:"facts"`
		Error string          `json:"error"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		return 0, nil, fmt.Errorf("read rlab facts -json output: %w", err)
	}
	if len(got) != want {
		return 0, nil, fmt.Errorf("rlab facts -json reported %d hosts, want %d", len(got), want)
	}
	for name, h := range got {
		if len(h.Facts) == 0 || string(h.Facts) == "null" || h.Error != "" {
			failed++
			if len(firstErrs) < 5 {
				firstErrs = append(firstErrs, name+": "+h.Error)
			}
		}
	}
	return failed, firstErrs, nil
}
