package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/engine/testbed"
)

// TestDetachedNetns: a workload that detaches a child (setsid -f, a new
// session and process group, as daemons do) leaves nothing running: not
// after the run, not after `rlab run` is killed with SIGKILL mid-workload,
// and not after `rlab down` of a run whose agent was itself SIGKILLed
// (real sshd, the real shipped agent as root through become, real cgroups).
// Before, each detached process outlived all three ("run … is down").
func TestDetachedNetns(t *testing.T) {
	bed := testbed.Start(t, testbed.Options{Hosts: 1})
	h := bed.Hosts[0]
	stamp := time.Now().UnixNano()
	n := 0
	mark := func(what string) string { n++; return fmt.Sprintf("detached-%s-%d-%d", what, n, stamp) }
	// A workload that detaches `sh -c 'sleep 1000; :' MARK` (the shell stays,
	// holding the marker) and then, if long, goes on running itself.
	labFor := func(t *testing.T, marker string, long, become bool) string {
		cmd := fmt.Sprintf(`["setsid", "-f", "sh", "-c", "sleep 1000; :", %q]`, marker)
		if long {
			cmd = fmt.Sprintf(`["sh", "-c", "setsid -f sh -c 'sleep 1000; :' %s; echo detached; exec sleep 1000"]`, marker)
		}
		src := fmt.Sprintf("lab \"detached\" {}\nhost %q {\n  address = %q\n  user = %q\n  identity_file = %q\n  known_hosts = %q\n  become = %v\n}\nworkload \"daemon\" {\n  tool    = \"exec\"\n  host    = host.%s\n  command = %s\n}\n",
			h.Name, h.Addr, bed.User, bed.KeyFile, bed.KnownHosts, become, h.Name, cmd)
		p := filepath.Join(t.TempDir(), "detached.hcl")
		if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// running waits (bounded) for the marked process to be there or gone.
	running := func(marker string, want bool) bool {
		for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
			if (len(inNS(bed.Hosts, marker)) > 0) == want {
				return want
			}
		}
		return !want
	}
	survivors := func(t *testing.T, marker, when string) {
		t.Helper()
		if running(marker, false) {
			pids := inNS(bed.Hosts, marker)
			t.Errorf("%s: the detached process still runs (pids %v)", when, pids)
			for _, p := range pids {
				exec.Command("kill", "-9", p).Run()
			}
		}
	}

	for _, become := range []bool{true, false} {
		// As root (become): a cgroup per workload. As the login user: the
		// agent adopts detached descendants (child subreaper).
		want := "cgroup"
		if !become {
			want = "subreaper"
		}
		t.Run(want, func(t *testing.T) {
			lab := func(t *testing.T, marker string, long bool) string { return labFor(t, marker, long, become) }
			t.Run("after the run", func(t *testing.T) {
				m := mark("run")
				out := filepath.Join(t.TempDir(), "run")
				if o, e, code := runRlab(t, "run", "--out", out, lab(t, m, false)); code != exitOK {
					t.Fatalf("rlab run: exit %d\n%s%s", code, o, e)
				}
				survivors(t, m, "after rlab run ended")
				var f map[string]any
				b, _ := os.ReadFile(filepath.Join(out, "hosts", h.Name, "facts.json"))
				json.Unmarshal(b, &f)
				if f["proc_tracking"] != want {
					t.Errorf("facts.json: proc_tracking %v, want %s", f["proc_tracking"], want)
				}
			})

			t.Run("rlab killed", func(t *testing.T) {
				m := mark("kill")
				cmd := exec.Command(rlabBin(t), "run", "--out", filepath.Join(t.TempDir(), "run"), lab(t, m, true))
				cmd.Env = append(os.Environ(), "SSH_AUTH_SOCK=")
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				if !running(m, true) {
					cmd.Process.Kill()
					cmd.Wait()
					t.Fatal("the workload never detached its child")
				}
				cmd.Process.Signal(syscall.SIGKILL) // no teardown of its own
				cmd.Wait()
				survivors(t, m, "after SIGKILL of rlab run")
			})

			t.Run("agent killed, then rlab down", func(t *testing.T) {
				if !become {
					t.Skip("an orphan of a SIGKILLed user agent goes to init: only cgroups (become) reach it (SECURITY 41)")
				}
				m := mark("down")
				out := filepath.Join(t.TempDir(), "run")
				cmd := exec.Command(rlabBin(t), "run", "--out", out, lab(t, m, true))
				cmd.Env = append(os.Environ(), "SSH_AUTH_SOCK=")
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				if !running(m, true) {
					cmd.Process.Kill()
					cmd.Wait()
					t.Fatal("the workload never detached its child")
				}
				// SIGKILL the run's agent: it cannot stop anything itself.
				var st struct {
					Hosts []struct {
						AgentPID int `json:"agent_pid"`
					} `json:"hosts"`
				}
				b, _ := os.ReadFile(filepath.Join(out, "state.json"))
				if err := json.Unmarshal(b, &st); err != nil || len(st.Hosts) == 0 || st.Hosts[0].AgentPID == 0 {
					cmd.Process.Kill()
					cmd.Wait()
					t.Fatalf("agent pid from state.json %s: %v", b, err)
				}
				syscall.Kill(st.Hosts[0].AgentPID, syscall.SIGKILL)
				cmd.Wait() // the run ends: agent lost
				if !running(m, true) {
					t.Fatal("the detached process died with its agent: nothing left for rlab down to prove")
				}
				if o, e, code := runRlab(t, "down", out); code != exitOK {
					t.Errorf("rlab down: exit %d\n%s%s", code, o, e)
				}
				survivors(t, m, "after rlab down")
			})

		})
	}
}
