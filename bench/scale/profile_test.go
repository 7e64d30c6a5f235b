package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/engine/testbed"
)

// TestProfileRun profiles `rlab run` of the class lab on one direct bed,
// for finding where a class run's time goes (issue 28): binaries in
// RLAB_PROFILE_BINS (comma-separated; before and after a change) run in
// alternating rounds on the same bed, each with RLAB_CPUPROFILE and
// RLAB_MEMPROFILE into RLAB_PROFILE_OUT, and the test logs each round's
// wall, CPU, peak RSS and the run's phases (events.jsonl). Hosts:
// RLAB_PROFILE_HOSTS (default 200), rounds RLAB_PROFILE_ROUNDS (default 2).
// Needs RLAB_NETNS=1 (the bed) like the other netns tests.
func TestProfileRun(t *testing.T) {
	bins := os.Getenv("RLAB_PROFILE_BINS")
	out := os.Getenv("RLAB_PROFILE_OUT")
	if bins == "" || out == "" {
		t.Skip("set RLAB_PROFILE_BINS and RLAB_PROFILE_OUT to profile")
	}
	hosts, rounds := envInt("RLAB_PROFILE_HOSTS", 200), envInt("RLAB_PROFILE_ROUNDS", 2)
	bed := testbed.Start(t, testbed.Options{Hosts: hosts, MaxStartups: "10:30:100"})
	dir := t.TempDir()
	lab, vars, err := classLab(bed, dir)
	if err != nil {
		t.Fatal(err)
	}
	bedFile, err := writeBed(bed, dir, hosts/2)
	if err != nil {
		t.Fatal(err)
	}
	args := append(vars, "--var", "bed="+bedFile)
	list := strings.Split(bins, ",")
	// A first run, cold (the agent is shipped once to the shared home, the
	// hosts' sshd and page cache are new): timed, not profiled.
	coldDir := filepath.Join(out, "run-cold")
	m, err := measure(list[0], append(append([]string{"run", "--out", coldDir}, args...), lab)...)
	if err != nil {
		t.Fatal(err)
	}
	if m.Exit != 0 {
		t.Errorf("cold run: exit %d\n%s", m.Exit, m.Stderr)
	}
	t.Logf("cold %s: wall %.2fs cpu %.2fs rss %.1f MiB; load %s; phases %s", list[0], m.Wall, m.CPU, m.MaxRSSMB, loadavg(), phases(coldDir))
	for k := 0; k < rounds; k++ {
		// `rlab facts` on the same bed: the logins and probes alone, the
		// floor a run cannot beat.
		if m, err := measure(list[0], append(append([]string{"facts", "--json"}, args...), lab)...); err != nil {
			t.Fatal(err)
		} else {
			failed, _, ferr := factsErrors(m.Stdout, hosts)
			t.Logf("facts r%d %s: exit %d wall %.2fs cpu %.2fs rss %.1f MiB; %d hosts failed (%v); load %s", k, list[0], m.Exit, m.Wall, m.CPU, m.MaxRSSMB, failed, ferr, loadavg())
		}
		for j := range list {
			i := j
			if k%2 == 1 {
				i = len(list) - 1 - j
			}
			bin := list[i]
			tag := fmt.Sprintf("b%d-r%d", i, k)
			t.Setenv("RLAB_CPUPROFILE", filepath.Join(out, "cpu-"+tag+".out"))
			t.Setenv("RLAB_MEMPROFILE", filepath.Join(out, "mem-"+tag+".out"))
			runDir := filepath.Join(out, "run-"+tag)
			m, err := measure(bin, append(append([]string{"run", "--out", runDir}, args...), lab)...)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s %s: exit %d wall %.2fs cpu %.2fs rss %.1f MiB; load %s; phases %s", tag, bin, m.Exit, m.Wall, m.CPU, m.MaxRSSMB,
				loadavg(), phases(runDir))
			if m.Exit != 0 {
				t.Errorf("%s: exit %d\n%s", tag, m.Exit, m.Stderr)
			}
		}
	}
}

// loadavg is the machine's 1, 5 and 15 minute load averages.
func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// phases lists the run's phase steps and their seconds from events.jsonl.
func phases(runDir string) string {
	f, err := os.Open(filepath.Join(runDir, "events.jsonl"))
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	// Per kind of step (its first word: connect, exec, fetch...): when the
	// first began and the last ended, from the run's start, and the sum of
	// their durations.
	type span struct {
		first, last, sum float64
		n                int
	}
	spans := map[string]*span{}
	var order []string
	var t0 time.Time
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e struct {
			Time                       time.Time
			Type, Step, Host, Workload string
			Seconds                    float64
		}
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		if t0.IsZero() {
			t0 = e.Time
		}
		if e.Type != "step.end" {
			continue
		}
		k, _, _ := strings.Cut(e.Step, " ")
		if e.Host == "" && e.Workload == "" {
			k = "phase:" + k
		}
		s := spans[k]
		if s == nil {
			s = &span{first: 1e9}
			spans[k] = s
			order = append(order, k)
		}
		end := e.Time.Sub(t0).Seconds()
		s.first = min(s.first, end-e.Seconds)
		s.last = max(s.last, end)
		s.sum += e.Seconds
		s.n++
	}
	var parts []string
	for _, k := range order {
		s := spans[k]
		parts = append(parts, fmt.Sprintf("%s x%d %.2f..%.2f (sum %.1f)", k, s.n, s.first, s.last, s.sum))
	}
	return strings.Join(parts, "; ")
}
