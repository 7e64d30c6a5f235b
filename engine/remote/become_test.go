package remote

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/rlab-dev/rlab/agent/server"
)

// TestBecomeScript runs the shell that starts the agent as root for a login
// user (becomeScript) with sh and a stand-in sudo that logs each command
// and runs it (root here), refusing install when told: the root-owned copy
// is started when it is there; when it is not and sudo allows install, it
// is installed root-owned, 0755, from the user's copy and started; when
// sudo refuses, the user's copy is started (whose refusal, sudo's or the
// agent's, is then the error) and nothing is left behind (SECURITY 176).
func TestBecomeScript(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the stand-in sudo runs install -o root")
	}
	if _, err := exec.LookPath("install"); err != nil {
		t.Skip("no install(1)")
	}
	cases := []struct {
		name        string
		sysThere    bool
		denyInstall bool
		wantRan     string // "sys" or "cache"
		wantSudo    int    // sudo calls
	}{
		{"root-owned copy there", true, false, "sys", 1},
		{"installed with sudo, then started", false, false, "sys", 4},
		{"sudo refuses install: the user's copy", false, true, "cache", 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			bin := filepath.Join(dir, "bin")
			os.Mkdir(bin, 0o755)
			log := filepath.Join(dir, "sudo.log")
			sudo := "#!/bin/sh\necho \"$*\" >> " + log + "\n[ \"$1 $2\" = '-n --' ] || exit 9\nshift 2\n" +
				"if [ -n \"$DENY_INSTALL\" ] && [ \"$1\" != \"${1%rlab-agent}\" ]; then :; elif [ -n \"$DENY_INSTALL\" ]; then echo 'sudo: a password is required' >&2; exit 1; fi\nexec \"$@\"\n"
			if err := os.WriteFile(filepath.Join(bin, "sudo"), []byte(sudo), 0o755); err != nil {
				t.Fatal(err)
			}
			cache := filepath.Join(dir, "home", ".cache", "rlab", "agent", "HASH", "rlab-agent")
			sys := filepath.Join(dir, "libexec", "rlab", "agent", "HASH", "rlab-agent")
			os.MkdirAll(filepath.Dir(cache), 0o755)
			agent := "#!/bin/sh\necho \"ran $0 $*\"\n"
			if err := os.WriteFile(cache, []byte(agent), 0o755); err != nil {
				t.Fatal(err)
			}
			if c.sysThere {
				os.MkdirAll(filepath.Dir(sys), 0o755)
				if err := os.WriteFile(sys, []byte(agent), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			script := becomeScript(shellQuote(sys), shellQuote(cache), " serve --run-id r1 --work-dir '/w d'", "1000:1001")
			cmd := exec.Command("sh", "-c", script)
			cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
			if c.denyInstall {
				cmd.Env = append(cmd.Env, "DENY_INSTALL=1")
			}
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			want := map[string]string{"sys": sys, "cache": cache}[c.wantRan]
			if got := strings.TrimSpace(string(out)); got != "ran "+want+" serve --run-id r1 --work-dir /w d --owner 1000:1001" {
				t.Errorf("ran %q, want the %s copy %s", got, c.wantRan, want)
			}
			calls, _ := os.ReadFile(log)
			if n := strings.Count(string(calls), "\n"); n != c.wantSudo {
				t.Errorf("%d sudo calls, want %d:\n%s", n, c.wantSudo, calls)
			}
			if c.wantRan == "sys" {
				fi, err := os.Stat(sys)
				if err != nil {
					t.Fatal(err)
				}
				if st := fi.Sys().(*syscall.Stat_t); st.Uid != 0 || fi.Mode().Perm() != 0o755 {
					t.Errorf("%s: uid %d mode %o, want root 0755", sys, st.Uid, fi.Mode().Perm())
				}
				if b, _ := os.ReadFile(sys); string(b) != agent {
					t.Errorf("%s holds %q, want the user's copy", sys, b)
				}
			} else if _, err := os.Lstat(sys); err == nil {
				t.Errorf("%s exists after sudo refused the install", sys)
			}
			if left, _ := filepath.Glob(sys + ".part*"); len(left) > 0 {
				t.Errorf("temp copies left behind: %v", left)
			}
		})
	}
}

// TestBecomeScriptConcurrentInstall: starters of hosts sharing a
// filesystem run becomeScript at once, each installing the root-owned copy;
// every one must exec a whole copy. With one temp name for all, one starter
// renamed another's half-written copy into place (the review measured 2
// partial execs in 20 pairs) and a starter killed mid-copy left it there
// for good. The stand-in agent is 4 MiB and prints its own size.
func TestBecomeScriptConcurrentInstall(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the stand-in sudo runs install -o root")
	}
	if _, err := exec.LookPath("install"); err != nil {
		t.Skip("no install(1)")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	os.Mkdir(bin, 0o755)
	if err := os.WriteFile(filepath.Join(bin, "sudo"), []byte("#!/bin/sh\nshift 2\nexec \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(dir, "cache", "rlab-agent")
	os.MkdirAll(filepath.Dir(cache), 0o755)
	agent := "#!/bin/sh\nwc -c < \"$0\"\nexit 0\n#" + strings.Repeat("x", 4<<20) + "\n"
	if err := os.WriteFile(cache, []byte(agent), 0o755); err != nil {
		t.Fatal(err)
	}
	for round := 0; round < 5; round++ {
		sys := filepath.Join(dir, "libexec", strconv.Itoa(round), "rlab-agent")
		script := becomeScript(shellQuote(sys), shellQuote(cache), " serve", "1:1")
		const n = 6
		outs := make([]string, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cmd := exec.Command("sh", "-c", script)
				cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
				out, err := cmd.CombinedOutput()
				outs[i] = strings.TrimSpace(string(out))
				if err != nil {
					outs[i] += " (" + err.Error() + ")"
				}
			}()
		}
		wg.Wait()
		for i, o := range outs {
			if o != strconv.Itoa(len(agent)) {
				t.Errorf("round %d, starter %d: the agent it ran says %q, want its whole size %d", round, i, o, len(agent))
			}
		}
		if left, _ := filepath.Glob(sys + ".part*"); len(left) > 0 {
			t.Errorf("round %d: temp copies left behind: %v", round, left)
		}
	}
}

// TestWarmScriptBecome: with become, the warm start's shell of a login
// that is not root starts the root-owned copy of the build when it is there
// (even with nothing in the user's cache: no upload for it) and never the
// user's copy first; without become nothing of it is there.
func TestWarmScriptBecome(t *testing.T) {
	cands := []warmCand{{"amd64", strings.Repeat("a", 64)}, {"arm64", strings.Repeat("b", 64)}}
	become := warmScript(cands, StartOptions{Host: "h", Become: true}, "r1")
	for _, want := range []string{
		`s="/usr/local/libexec/rlab/agent/$h/rlab-agent"; `,
		`if [ -n "$h" ] && { { [ -f "$a" ] && [ -x "$a" ]; } || { [ "${EUID:-$(id -u)}" != 0 ] && [ -f "$s" ]; }; }; then `,
		`if [ -f "$s" ]; then exec sudo -n -- "$s" serve --run-id r1 --work-dir "$HOME/.cache/rlab/runs/r1/h" --owner "$(id -u):$(id -g)"; fi; `,
		`exec sudo -n -- "$a" serve --run-id r1`,
	} {
		if !strings.Contains(become, want) {
			t.Errorf("become script lacks %q:\n%s", want, become)
		}
	}
	if i, j := strings.Index(become, `exec sudo -n -- "$s"`), strings.Index(become, `exec sudo -n -- "$a"`); i < 0 || j < i {
		t.Errorf("the user's copy comes before the root-owned one:\n%s", become)
	}
	if plain := warmScript(cands, StartOptions{Host: "h"}, "r1"); strings.Contains(plain, "sudo") || strings.Contains(plain, "libexec") {
		t.Errorf("script without become names sudo or the root-owned copy:\n%s", plain)
	}
	for _, o := range []StartOptions{{Host: "h"}, {Host: "h", Become: true}, {Host: "h", Become: true, AgentDisk: true}} {
		if out, err := exec.Command("sh", "-n", "-c", warmScript(cands, o, "r1")).CombinedOutput(); err != nil {
			t.Errorf("%+v: sh -n: %v: %s", o, err, out)
		}
	}
}

// TestUnsafeExecutableText: the agent's refusal is recognised by its text
// (explained: no reinstall loop; explainStart names the fix), which must
// be the agent's own.
func TestUnsafeExecutableText(t *testing.T) {
	if unsafeExecutable != server.ErrUnsafeExecutable.Error() {
		t.Errorf("engine/remote looks for %q, the agent says %q", unsafeExecutable, server.ErrUnsafeExecutable)
	}
}
