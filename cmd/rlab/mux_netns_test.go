package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/engine/testbed"
)

// runRlabEnv runs the rlab binary with extra environment.
func runRlabEnv(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(rlabBin(t), args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	cmd.Env = append(append(os.Environ(), "SSH_AUTH_SOCK=", "RLAB_PERSIST="), env...)
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return o.String(), e.String(), code
}

// muxEnv is the environment for rlab commands that share a private mux
// folder (XDG_RUNTIME_DIR); its daemon is stopped and the folder removed
// when the test ends.
func muxEnv(t *testing.T) []string {
	t.Helper()
	runtime, err := os.MkdirTemp("", "xdg")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(runtime) })
	os.Chmod(runtime, 0o700)
	env := []string{"XDG_RUNTIME_DIR=" + runtime}
	t.Cleanup(func() { runRlabEnv(t, env, "mux", "stop") })
	return env
}

// sshPeers lists the established TCP connections to sshd (port 22) in a
// host's namespace, as "peer-address:port".
func sshPeers(t *testing.T, h *testbed.Host) []string {
	t.Helper()
	out, err := exec.Command("ip", "netns", "exec", h.NS, "ss", "-Htn", "state", "established", "( sport = :22 )").Output()
	if err != nil {
		t.Fatalf("ss in %s: %v", h.NS, err)
	}
	var peers []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) >= 4 {
			peers = append(peers, f[len(f)-1])
		}
	}
	sort.Strings(peers)
	return peers
}

// `rlab facts --persist` twice through the real binary: the second run
// reuses the logins the first left open (no new TCP connection reaches
// any sshd, the bastion's included), and `rlab mux stop` closes them all.
func TestFactsPersistNetns(t *testing.T) {
	bed := testbed.Start(t, testbed.Options{Hosts: 2, BehindBastion: 1})
	labFile := bedLab(t, bed, bed.KnownHosts, "")
	env := muxEnv(t)

	hosts := append([]*testbed.Host{bed.Bastion}, bed.Hosts...)
	before := map[string][]string{}
	for _, h := range hosts {
		before[h.Name] = sshPeers(t, h)
	}

	out, stderr, code := runRlabEnv(t, env, "facts", "-json", "--persist", "1m", labFile)
	if code != 0 {
		t.Fatalf("first rlab facts --persist: exit %d\n%s%s", code, out, stderr)
	}
	var got map[string]struct {
		Facts *struct {
			Hostname string `json:"hostname"`
		} `json:"facts"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("facts -json: %v\n%s", err, out)
	}
	for _, h := range bed.Hosts {
		if got[h.Name].Facts == nil {
			t.Errorf("no facts for %s: %+v", h.Name, got[h.Name])
		}
	}
	kept := map[string][]string{}
	for _, h := range hosts {
		kept[h.Name] = sshPeers(t, h)
		if len(kept[h.Name]) != len(before[h.Name])+1 {
			t.Errorf("%s after the first run: SSH connections %v, want one more than %v (the kept login)", h.Name, kept[h.Name], before[h.Name])
		}
	}

	// Second run, RLAB_PERSIST instead of the flag: same connections.
	out, stderr, code = runRlabEnv(t, append(env, "RLAB_PERSIST=1m"), "facts", "-json", "-v", labFile)
	if code != 0 {
		t.Fatalf("second rlab facts: exit %d\n%s%s", code, out, stderr)
	}
	if !strings.Contains(stderr, "agent: 0 bytes shipped to 3 hosts") {
		t.Errorf("second run shipped the agent again:\n%s", stderr)
	}
	for _, h := range hosts {
		if now := sshPeers(t, h); strings.Join(now, " ") != strings.Join(kept[h.Name], " ") {
			t.Errorf("%s: SSH connections %v after the second run, want the kept %v (no new login)", h.Name, now, kept[h.Name])
		}
	}

	out, _, code = runRlabEnv(t, env, "mux", "status", "--json")
	var st struct {
		Conns []struct {
			Name string `json:"name"`
			Via  string `json:"via"`
		} `json:"connections"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || len(st.Conns) != 3 {
		t.Errorf("mux status: exit %d, want 3 connections:\n%s", code, out)
	}
	for _, c := range st.Conns {
		if c.Name == "b0" && !strings.Contains(c.Via, bed.Bastion.Addr) {
			t.Errorf("b0 kept without its bastion: %+v", c)
		}
	}

	out, stderr, code = runRlabEnv(t, env, "mux", "stop")
	if code != 0 || !strings.Contains(out, "stopped") {
		t.Fatalf("mux stop: exit %d\n%s%s", code, out, stderr)
	}
	deadline := time.Now().Add(time.Minute)
	for _, h := range hosts {
		for len(sshPeers(t, h)) != len(before[h.Name]) {
			if time.Now().After(deadline) {
				t.Fatalf("%s still has SSH connections %v a minute after mux stop", h.Name, sshPeers(t, h))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if _, _, code := runRlabEnv(t, env, "mux", "status"); code != 1 {
		t.Errorf("mux status after stop: exit %d, want 1", code)
	}
}
