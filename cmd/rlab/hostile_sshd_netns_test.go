package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/engine/results"
	"github.com/rlab-dev/rlab/engine/testbed"
)

// hostileSSHD is the ForceCommand of a host whose sshd (real OpenSSH) runs
// every command as asked except the one mode picks: there it stalls in a
// `sleep` that holds the session (sshd keeps a session's channel while its
// process lives, so closing the session ends no read) or answers with an
// endless stream.
func hostileSSHD(mode string) string {
	return `#!/bin/bash
c="$SSH_ORIGINAL_COMMAND"
case "$c" in internal-sftp|sftp) exec /usr/lib/openssh/sftp-server ;; esac
case "` + mode + `:$c" in
install-stall:*RLAB-INSTALL*) exec sleep 100000 ;;
hash-yes:*"RLAB-PROBE-BEGIN; t="*) exec yes ;;
hash-yes:*RLAB-TOOLS*) bash -c "$c" | sed -u 's/^RLAB-TOOLS gzip/RLAB-TOOLS/'; exit ;;
bundle-stall:*" bundle --work-dir "*) exec sleep 100000 ;;
esac
exec bash -c "$c"
`
}

// TestHostileSSHDNetns: two hosts over real sshd; h1's sshd stalls or
// floods at one step. rlab run (and rlab facts) end by themselves with exit
// 2, naming h1 and the step; h0's workload runs and its results are kept
// (issue 24, high 2, 4 and 5: each hung rlab for good before).
//   - install-stall: cold cache, the install's session never reads its
//     stream (high 2);
//   - hash-yes: a host without gzip answers the SFTP install's hash check
//     with an endless stream (high 5: it filled the controller's memory);
//   - bundle-stall: the bundle pull's command never sends a byte (high 4:
//     its idle limit closed the session, which ends no read with sshd).
func TestHostileSSHDNetns(t *testing.T) {
	t.Setenv("RLAB_PERSIST", "")
	// The stalls are waited out at this limit: twice for install-stall
	// (facts, then run), once for bundle-stall. 20s made the test 65 s of
	// CI; 10s still leaves the honest host's steps ten idle seconds.
	t.Setenv("RLAB_AGENT_TIMEOUT", "10s")
	cases := []struct {
		mode  string
		cold  bool     // h1 has its own, empty home (no cached agent)
		want  []string // in the run's output, with host "h1"
		facts bool     // rlab facts too
	}{
		{"install-stall", true, []string{"install agent", "no progress for 10s"}, true},
		{"hash-yes", true, []string{"verify", "printed more than 64.0 KiB"}, true},
		{"bundle-stall", false, []string{"bundle", "sent nothing for 10s"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.mode, func(t *testing.T) {
			bed := testbed.Start(t, testbed.Options{Hosts: 2})
			h1 := bed.Host("h1")
			if tc.cold {
				bed.PrivateHome(t, h1, nil)
			}
			bed.ForceCommand(t, h1, hostileSSHD(tc.mode))
			labFile := bedLab(t, bed, bed.KnownHosts, echoOnBothHosts)
			named := func(s string) bool {
				if !strings.Contains(s, `host "h1"`) {
					return false
				}
				for _, w := range tc.want {
					if !strings.Contains(s, w) {
						return false
					}
				}
				return true
			}
			if tc.facts {
				out, stderr, code := runRlabWithin(t, 100*time.Second, "facts", "-json", labFile)
				var got map[string]struct {
					Facts *json.RawMessage `json:"facts"`
					Error string           `json:"error"`
				}
				json.Unmarshal([]byte(out), &got)
				if code != 2 || got["h0"].Facts == nil || !named(`host "h1": `+got["h1"].Error) {
					t.Errorf("facts: exit %d, want 2 with h0's facts and h1's error saying %q\n%s%s", code, tc.want, out, stderr)
				}
			}
			dir := filepath.Join(t.TempDir(), "run")
			out, stderr, code := runRlabWithin(t, 100*time.Second, "run", "--out", dir, labFile)
			if code != 2 || !named(out+stderr) {
				t.Errorf("run: exit %d, want 2 naming h1 and %q\n%s%s", code, tc.want, out, stderr)
			}
			r, err := results.ReadRun(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range r.Workloads {
				if w.Name == "on_h0" && w.Status != results.StatusOK {
					t.Errorf("on_h0: %s, want ok", w.Status)
				}
			}
			if b, err := os.ReadFile(filepath.Join(dir, "hosts", "h0", "logs", "wl.on_h0.exec.r0.stdout")); err != nil || string(b) != "h0 output\n" {
				t.Errorf("h0's output: %q, %v", b, err)
			}
		})
	}
}

// TestInterruptStalledHostNetns: while h1's agent install hangs in sshd
// (cold cache, a session that never reads; no RLAB_AGENT_TIMEOUT, so its
// own limit is a minute away), SIGTERM ends rlab run within the 30 s it
// promises, and a second SIGINT ends it at once; both exit 130 (issue 24:
// four minutes after SIGTERM rlab still ran, and two SIGINTs did nothing).
func TestInterruptStalledHostNetns(t *testing.T) {
	t.Setenv("RLAB_PERSIST", "")
	t.Setenv("RLAB_AGENT_TIMEOUT", "")
	bed := testbed.Start(t, testbed.Options{Hosts: 2})
	h1 := bed.Host("h1")
	bed.PrivateHome(t, h1, nil)
	bed.ForceCommand(t, h1, hostileSSHD("install-stall"))
	labFile := bedLab(t, bed, bed.KnownHosts, echoOnBothHosts)
	cases := []struct {
		name    string
		signals []syscall.Signal
		within  time.Duration
	}{
		{"SIGTERM", []syscall.Signal{syscall.SIGTERM}, 35 * time.Second},
		{"SIGINT twice", []syscall.Signal{syscall.SIGINT, syscall.SIGINT}, 3 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := bed.Pids(t, h1) // an earlier case's sleep may live on
			cmd := exec.Command(rlabBin(t), "run", "--out", filepath.Join(t.TempDir(), "run"), labFile)
			cmd.Env = append(os.Environ(), "SSH_AUTH_SOCK=")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			defer cmd.Process.Kill()
			stalled := func() bool {
				for pid, c := range bed.Pids(t, h1) {
					if _, old := before[pid]; !old && strings.Contains(c, "sleep 100000") {
						return true
					}
				}
				return false
			}
			deadline := time.Now().Add(90 * time.Second)
			for !stalled() {
				select {
				case err := <-exited:
					t.Fatalf("rlab ended (%v) before h1's install stalled\n%s%s", err, stdout.String(), stderr.String())
				default:
				}
				if time.Now().After(deadline) {
					t.Fatalf("h1's install never stalled\n%s%s", stdout.String(), stderr.String())
				}
				time.Sleep(100 * time.Millisecond)
			}
			time.Sleep(time.Second) // well inside the install's wait
			start := time.Now()
			for _, s := range tc.signals {
				cmd.Process.Signal(s)
				time.Sleep(200 * time.Millisecond)
			}
			select {
			case err := <-exited:
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.ExitCode() != exitInterrupted {
					t.Errorf("exit %v, want %d\n%s%s", err, exitInterrupted, stdout.String(), stderr.String())
				}
				if el := time.Since(start); el > tc.within {
					t.Errorf("exited %s after the signal, want within %s", el, tc.within)
				}
			case <-time.After(tc.within + 30*time.Second):
				t.Fatalf("rlab still runs %s after %v\n%s%s", tc.within+30*time.Second, tc.signals, stdout.String(), stderr.String())
			}
		})
	}
}

// TestInterruptStalledPullNetns: Ctrl-C while h1's bundle pull stalls in
// sshd (its idle limit two minutes away) ends rlab run within the bound,
// exit 130, with the run directory complete and h0's results in it (issue
// 24, attack round 5: the stalled pull took the teardown's whole bound, and
// rlab stopped at 30 s with no results.json, complete.json or report).
func TestInterruptStalledPullNetns(t *testing.T) {
	t.Setenv("RLAB_PERSIST", "")
	t.Setenv("RLAB_AGENT_TIMEOUT", "")
	bed := testbed.Start(t, testbed.Options{Hosts: 2})
	h1 := bed.Host("h1")
	bed.ForceCommand(t, h1, hostileSSHD("bundle-stall"))
	labFile := bedLab(t, bed, bed.KnownHosts, echoOnBothHosts)
	before := bed.Pids(t, h1)
	dir := filepath.Join(t.TempDir(), "run")
	cmd := exec.Command(rlabBin(t), "run", "--out", dir, labFile)
	cmd.Env = append(os.Environ(), "SSH_AUTH_SOCK=")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer cmd.Process.Kill()
	deadline := time.Now().Add(90 * time.Second)
	for stalled := false; !stalled; {
		for pid, c := range bed.Pids(t, h1) {
			if _, old := before[pid]; !old && strings.Contains(c, "sleep 100000") {
				stalled = true
			}
		}
		select {
		case err := <-exited:
			t.Fatalf("rlab ended (%v) before h1's pull stalled\n%s%s", err, stdout.String(), stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("h1's pull never stalled\n%s%s", stdout.String(), stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second)
	start := time.Now()
	cmd.Process.Signal(syscall.SIGINT)
	select {
	case err := <-exited:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != exitInterrupted {
			t.Errorf("exit %v, want %d\n%s%s", err, exitInterrupted, stdout.String(), stderr.String())
		}
		if el := time.Since(start); el > 28*time.Second {
			t.Errorf("exited %s after the signal, want within the engine's teardown bound", el)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("rlab still runs 60 s after SIGINT\n%s%s", stdout.String(), stderr.String())
	}
	r, err := results.ReadRun(dir)
	if err != nil {
		t.Fatalf("no results after the interrupt: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	for _, w := range r.Workloads {
		if w.Name == "on_h0" && w.Status != results.StatusOK {
			t.Errorf("on_h0: %s, want ok", w.Status)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, results.CompleteFile)); err != nil {
		t.Errorf("run directory not complete: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "hosts", "h0", "logs", "wl.on_h0.exec.r0.stdout")); err != nil || string(b) != "h0 output\n" {
		t.Errorf("h0's output: %q, %v", b, err)
	}
}
