package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/engine/testbed"
)

// agentsOfRun lists, per bed host, the rlab-agent processes started with
// run id run in its network namespace, and whether each runs as root.
func agentsOfRun(t *testing.T, hosts []*testbed.Host, run string) map[string][]string {
	t.Helper()
	out, _ := exec.Command("pgrep", "-f", "rlab-agent serve --run-id "+run+" ").Output()
	byNS := map[string]string{}
	for _, h := range hosts {
		byNS[h.NS] = h.Name
	}
	got := map[string][]string{}
	for _, f := range strings.Fields(string(out)) {
		if comm, _ := os.ReadFile("/proc/" + f + "/comm"); strings.TrimSpace(string(comm)) != "rlab-agent" {
			continue // sudo, the shell that starts it
		}
		ns, err := exec.Command("ip", "netns", "identify", f).Output()
		if err != nil {
			continue // gone meanwhile
		}
		name, ok := byNS[strings.TrimSpace(string(ns))]
		if !ok {
			continue // another test's bed
		}
		uid := "user"
		if st, err := os.ReadFile("/proc/" + f + "/status"); err == nil && strings.Contains(string(st), "\nUid:\t0\t") {
			uid = "root"
		}
		got[name] = append(got[name], f+"/"+uid)
	}
	for _, v := range got {
		sort.Strings(v)
	}
	return got
}

// inNS lists the pids of processes whose command line contains pat in one
// of the hosts' namespaces.
func inNS(hosts []*testbed.Host, pat string) []string {
	out, _ := exec.Command("pgrep", "-f", pat).Output()
	var pids []string
	for _, f := range strings.Fields(string(out)) {
		ns, err := exec.Command("ip", "netns", "identify", f).Output()
		if err != nil {
			continue
		}
		for _, h := range hosts {
			if strings.TrimSpace(string(ns)) == h.NS {
				pids = append(pids, f)
			}
		}
	}
	return pids
}

// With --persist, `rlab facts` and every `rlab run` share the agents the
// mux daemon keeps (one per host and login, the become one included): each
// run leases them for its own run id, so its workloads run in, and its
// artifacts come from, its own work dir; nothing of one run is left for
// the next; a run killed outright (SIGKILL, no cleanup of its own) leaves
// nothing running either: the daemon's release stops it.
func TestRunKeptAgentsNetns(t *testing.T) {
	bed := testbed.Start(t, testbed.Options{Hosts: 2})
	var lab strings.Builder
	fmt.Fprintf(&lab, "lab \"runkept\" {}\n\nssh {\n  user          = %q\n  identity_file = %q\n  known_hosts   = %q\n}\n\n", bed.User, bed.KeyFile, bed.KnownHosts)
	for i, h := range bed.Hosts {
		fmt.Fprintf(&lab, "host %q {\n  address = %q\n", h.Name, h.Addr)
		if i == 0 {
			lab.WriteString("  become  = true\n")
		}
		lab.WriteString("}\n")
		fmt.Fprintf(&lab, "workload \"where_%s\" {\n  tool    = \"exec\"\n  host    = host.%s\n  command = [\"sh\", \"-c\", \"echo $PPID; pwd\"]\n}\n", h.Name, h.Name)
		// A work dir of its own each run: no note of an earlier run there.
		fmt.Fprintf(&lab, "workload \"note_%s\" {\n  tool    = \"exec\"\n  host    = host.%s\n  command = [\"sh\", \"-c\", \"test ! -e note.txt && echo %s > note.txt && echo fresh\"]\n}\n", h.Name, h.Name, h.Name)
	}
	dir := t.TempDir()
	labFile := filepath.Join(dir, "runkept.hcl")
	if err := os.WriteFile(labFile, []byte(lab.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	// A lab whose one workload outlives the run that is killed.
	slow := strings.Replace(lab.String(), `command = ["sh", "-c", "echo $PPID; pwd"]`, `command = ["sleep", "3217"]`, 1)
	slowFile := filepath.Join(dir, "slow.hcl")
	if err := os.WriteFile(slowFile, []byte(slow), 0o600); err != nil {
		t.Fatal(err)
	}
	env := muxEnv(t)
	u, err := user.Lookup(bed.User)
	if err != nil {
		t.Fatal(err)
	}

	// One kept agent per host, as facts leaves them; later commands must
	// find these same processes.
	keptAgents := func(what string) map[string][]string {
		t.Helper()
		var kept map[string][]string
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			kept = agentsOfRun(t, bed.Hosts, "kept")
			ok := len(kept) == len(bed.Hosts)
			for _, v := range kept {
				ok = ok && len(v) == 1
			}
			if ok {
				return kept
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: kept agents %v, want one per host (%d hosts)", what, kept, len(bed.Hosts))
			}
		}
	}
	for i := 1; i <= 2; i++ { // the first may install the agent (not kept)
		if out, stderr, code := runRlabEnv(t, env, "facts", "-json", "--persist", "1m", labFile); code != 0 {
			t.Fatalf("rlab facts --persist, run %d: exit %d\n%s%s", i, code, out, stderr)
		}
	}
	kept := keptAgents("after rlab facts")
	if !strings.HasSuffix(kept[bed.Hosts[0].Name][0], "/root") || !strings.HasSuffix(kept[bed.Hosts[1].Name][0], "/user") {
		t.Errorf("kept agents %v: want root on %s (become) only", kept, bed.Hosts[0].Name)
	}

	type state struct {
		RunID string `json:"run_id"`
		Hosts []struct {
			Name     string `json:"name"`
			Slug     string `json:"slug"`
			AgentPID int    `json:"agent_pid"`
			WorkDir  string `json:"work_dir"`
		} `json:"hosts"`
	}
	run := func(n int) state {
		t.Helper()
		out := filepath.Join(dir, fmt.Sprintf("run%d", n))
		stdout, stderr, code := runRlabEnv(t, env, "run", "--persist", "1m", "--keep", "--out", out, labFile) // --keep: the work dirs stay to be looked at
		if code != exitOK {
			t.Fatalf("rlab run --persist #%d: exit %d\n%s%s", n, code, stdout, stderr)
		}
		b, err := os.ReadFile(filepath.Join(out, "state.json"))
		if err != nil {
			t.Fatal(err)
		}
		var st state
		if err := json.Unmarshal(b, &st); err != nil {
			t.Fatal(err)
		}
		if len(st.Hosts) != len(bed.Hosts) {
			t.Fatalf("run %d: state has %d hosts", n, len(st.Hosts))
		}
		for _, h := range st.Hosts {
			want := filepath.Join(bed.Home, ".cache/rlab/runs", st.RunID, h.Slug)
			if h.WorkDir != want {
				t.Errorf("run %d: host %s work dir %q, want its run's %q", n, h.Name, h.WorkDir, want)
			}
			if h.AgentPID != 0 {
				t.Errorf("run %d: host %s: state names kept agent pid %d for rlab down to end", n, h.Name, h.AgentPID)
			}
			logs := filepath.Join(out, "hosts", h.Slug, "logs")
			for file, want := range map[string]string{
				// Run by the kept agent, in the run's work dir.
				"wl.where_" + h.Name + ".exec.r0.stdout": strings.Split(kept[h.Name][0], "/")[0] + "\n" + h.WorkDir + "\n",
				"wl.note_" + h.Name + ".exec.r0.stdout":  "fresh\n",
			} {
				got, err := os.ReadFile(filepath.Join(logs, file))
				if err != nil || string(got) != want {
					t.Errorf("run %d: host %s: %s = %q, %v; want %q", n, h.Name, file, got, err, want)
				}
			}
			for _, f := range []string{"../facts.json", "agent.log"} {
				if _, err := os.Stat(filepath.Join(logs, f)); err != nil {
					t.Errorf("run %d: host %s: %v", n, h.Name, err)
				}
			}
			// On the host: written in the run's work dir, for the login
			// user even by the root agent.
			fi, err := os.Stat(filepath.Join(h.WorkDir, "note.txt"))
			if err != nil {
				t.Errorf("run %d: host %s: %v", n, h.Name, err)
				continue
			}
			if uid := fmt.Sprint(fi.Sys().(*syscall.Stat_t).Uid); uid != u.Uid {
				t.Errorf("run %d: host %s: note.txt owned by uid %s, want the login user's %s", n, h.Name, uid, u.Uid)
			}
		}
		if now := keptAgents(fmt.Sprintf("after run %d", n)); fmt.Sprint(now) != fmt.Sprint(kept) {
			t.Errorf("agents after run %d: %v, want the kept %v (facts' agents)", n, now, kept)
		}
		return st
	}
	st1 := run(1)
	st2 := run(2)
	if st1.RunID == st2.RunID {
		t.Fatalf("two runs with one run id %q", st1.RunID)
	}
	// The first run's files stay where it wrote them.
	for _, h := range st1.Hosts {
		if b, err := os.ReadFile(filepath.Join(h.WorkDir, "note.txt")); err != nil || string(b) != h.Name+"\n" {
			t.Errorf("run 1's note on %s after run 2: %q, %v", h.Name, b, err)
		}
	}

	// A run killed outright while its workload runs: the daemon releases
	// the agent, which stops the workload, and keeps it.
	cmd := exec.Command(rlabBin(t), "run", "--persist", "1m", "--out", filepath.Join(dir, "killed"), slowFile)
	cmd.Env = append(append(os.Environ(), "SSH_AUTH_SOCK=", "RLAB_PERSIST="), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(60 * time.Second); len(inNS(bed.Hosts, "^sleep 3217$")) == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the slow workload never started\n%s", stderr.String())
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	for deadline := time.Now().Add(30 * time.Second); len(inNS(bed.Hosts, "^sleep 3217$")) > 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the killed run's workload still runs 30s later: %v", inNS(bed.Hosts, "^sleep 3217$"))
		}
	}
	if now := keptAgents("after the killed run"); fmt.Sprint(now) != fmt.Sprint(kept) {
		t.Errorf("agents after the killed run: %v, want the kept %v", now, kept)
	}
	run(3)

	if _, stderr, code := runRlabEnv(t, env, "mux", "stop"); code != 0 {
		t.Fatalf("mux stop: exit %d\n%s", code, stderr)
	}
	for deadline := time.Now().Add(30 * time.Second); len(agentsOfRun(t, bed.Hosts, "kept")) > 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("agents still running 30s after mux stop: %v", agentsOfRun(t, bed.Hosts, "kept"))
		}
	}
}
