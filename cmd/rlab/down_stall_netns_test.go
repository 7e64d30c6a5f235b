package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/engine/testbed"
)

// TestDownStalledHostNetns: `rlab down` of a run whose host h1 now stalls
// when its agent starts (real sshd: the agent's command is a `sleep` that
// holds the session, so no hello comes) ends by itself, naming h1, and
// still removes h0's work dir (round 7: the host side during down).
func TestDownStalledHostNetns(t *testing.T) {
	t.Setenv("RLAB_PERSIST", "")
	// down waits this limit out for h1's hello (20s made the test 22 s of
	// CI); 10s still leaves the run and h0 ten idle seconds per wait.
	t.Setenv("RLAB_AGENT_TIMEOUT", "10s")
	bed := testbed.Start(t, testbed.Options{Hosts: 2})
	h1 := bed.Host("h1")
	labFile := bedLab(t, bed, bed.KnownHosts, echoOnBothHosts)
	dir := filepath.Join(t.TempDir(), "run")
	if out, stderr, code := runRlabWithin(t, 100*time.Second, "run", "--keep", "--out", dir, labFile); code != 0 {
		t.Fatalf("run: exit %d\n%s%s", code, out, stderr)
	}
	bed.ForceCommand(t, h1, `#!/bin/bash
c="$SSH_ORIGINAL_COMMAND"
case "$c" in internal-sftp|sftp) exec /usr/lib/openssh/sftp-server ;; esac
case "$c" in *" serve "*) exec sleep 100000 ;; esac
exec bash -c "$c"
`)
	start := time.Now()
	out, stderr, code := runRlabWithin(t, 150*time.Second, "down", dir)
	took := time.Since(start)
	t.Logf("down: exit %d in %v\n%s%s", code, took, out, stderr)
	if code == 0 || !strings.Contains(out+stderr, `"h1"`) {
		t.Errorf("down: exit %d, want a failure naming h1", code)
	}
	if took > 120*time.Second {
		t.Errorf("down took %v with h1 stalled", took)
	}
	if !strings.Contains(out+stderr, "h0") {
		t.Errorf("down says nothing of h0")
	}
}
