package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/agent/dist"
	"github.com/rlab-dev/rlab/engine/results"
	"github.com/rlab-dev/rlab/engine/testbed"
)

// stuckAgent makes host h's cached agent a hostile build (-tags
// rlabhostile) that claims the shipped agent's hash, answers the hello and
// then never answers anything: a host that is up, logs in, starts the
// agent, and hangs.
func stuckAgent(t *testing.T, bed *testbed.Bed, h *testbed.Host) {
	t.Helper()
	_, hash, err := dist.SHA256("linux", "amd64")
	if err != nil {
		t.Skipf("no embedded agent (make agent): %v", err)
	}
	home := bed.PrivateHome(t, h, nil)
	bin := filepath.Join(home, "hostile-agent")
	build := exec.Command("go", "build", "-tags", "rlabhostile", "-o", bin, "github.com/rlab-dev/rlab/agent/cmd/rlab-agent")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build hostile agent: %v\n%s", err, out)
	}
	dir := filepath.Join(home, ".cache", "rlab", "agent", hash)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	// The host sees its private home at the login home's path (a bind
	// mount in its own mount namespace).
	wrapper := "#!/bin/sh\nRLAB_AGENT_HOSTILE=mute RLAB_AGENT_HOSTILE_HASH=" + hash + " exec " + bed.Home + "/hostile-agent \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "rlab-agent"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("chown", "-R", bed.User+":"+bed.User, home).CombinedOutput(); err != nil {
		t.Fatalf("chown: %v: %s", err, out)
	}
}

// TestStuckHostNetns: two hosts over real sshd, h1's agent answers its
// hello and then nothing. rlab facts, rlab check and rlab run end by
// themselves with exit 2 naming h1 and the call it did not answer; h0's
// facts are printed, and its workload ran with its results and logs kept.
// RLAB_AGENT_TIMEOUT shortens every call's deadline (documented).
func TestStuckHostNetns(t *testing.T) {
	t.Setenv("RLAB_PERSIST", "")
	// Each of facts, check and run waits this limit out: 20s made the test
	// 80 s of CI; 10s still leaves h0's honest calls ten seconds each.
	t.Setenv("RLAB_AGENT_TIMEOUT", "10s")
	bed := testbed.Start(t, testbed.Options{Hosts: 2})
	stuckAgent(t, bed, bed.Host("h1"))
	labFile := bedLab(t, bed, bed.KnownHosts, echoOnBothHosts)
	const want = `host "h1": agent did not answer facts within 10s`

	out, stderr, code := runRlabWithin(t, 4*time.Minute, "facts", "-json", labFile)
	var got map[string]struct {
		Facts *json.RawMessage `json:"facts"`
		Error string           `json:"error"`
	}
	json.Unmarshal([]byte(out), &got)
	if code != 2 || got["h0"].Facts == nil || !strings.Contains(got["h1"].Error, want) {
		t.Errorf("facts with h1 stuck: exit %d, want 2 with h0's facts and %q\n%s%s", code, want, out, stderr)
	}

	out, stderr, code = runRlabWithin(t, 4*time.Minute, "check", labFile)
	if code != 2 || !strings.Contains(out, want) {
		t.Errorf("check with h1 stuck: exit %d, want 2 naming %q\n%s%s", code, want, out, stderr)
	}

	dir := filepath.Join(t.TempDir(), "run")
	out, stderr, code = runRlabWithin(t, 4*time.Minute, "run", "--out", dir, labFile)
	if code != 2 || !strings.Contains(out+stderr, want) {
		t.Errorf("run with h1 stuck: exit %d, want 2 naming %q\n%s%s", code, want, out, stderr)
	}
	r, err := results.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	st := map[string]string{}
	for _, w := range r.Workloads {
		st[w.Name] = w.Status
	}
	if st["on_h0"] != results.StatusOK || st["on_h1"] == results.StatusOK {
		t.Errorf("workloads %v, want on_h0 ok and on_h1 not", st)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "hosts", "h0", "logs", "wl.on_h0.exec.r0.stdout")); err != nil || string(b) != "h0 output\n" {
		t.Errorf("h0's output: %q, %v", b, err)
	}
}

// echoOnBothHosts is a bed lab's workloads: one exec on each of h0 and h1,
// each echoing its host's name (the netns tests of a stuck or hostile h1
// look for "h0 output" to see the good host's result survive).
const echoOnBothHosts = `
workload "on_h0" {
  tool    = "exec"
  host    = host.h0
  command = ["echo", "h0 output"]
}
workload "on_h1" {
  tool    = "exec"
  host    = host.h1
  command = ["echo", "h1 output"]
}
`
