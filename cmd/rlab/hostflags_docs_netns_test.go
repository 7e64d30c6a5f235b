package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/engine/testbed"
)

// TestHostFlagsNetns proves the shared host flags of facts, check and run
// (hostFlags) on real sshd hosts, for a lab that names no key, no
// known_hosts and no user (a variable without default): without them
// nothing connects; --var-file or --var gives the user, -i the key, --known-hosts the
// host keys; -v logs connection details; --refresh asks the tools again
// (the agent's tools cache on the hosts' shared home is rewritten only
// then). (--parallel is Options.Parallel: TestRunOnlyAndParallel.)
func TestHostFlagsNetns(t *testing.T) {
	bed := testbed.Start(t, testbed.Options{Hosts: 2})
	dir := t.TempDir()
	var lab strings.Builder
	lab.WriteString("lab \"flags\" {}\n\nvariable \"user\" {\n  type = string\n}\n\nssh {\n  user = var.user\n}\n\n")
	for _, h := range bed.Hosts {
		lab.WriteString("host \"" + h.Name + "\" {\n  address = \"" + h.Addr + "\"\n}\n")
	}
	labFile := filepath.Join(dir, "flags.hcl")
	varFile := filepath.Join(dir, "vars.hcl")
	for p, b := range map[string]string{labFile: lab.String(), varFile: "user = \"" + bed.User + "\"\n"} {
		if err := os.WriteFile(p, []byte(b), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// A home of its own: the default ~/.ssh/known_hosts (and config) must
	// not answer for the bed's hosts, whatever other tests left in root's.
	env := []string{"HOME=" + t.TempDir()}
	key, kh := []string{"-i", bed.KeyFile}, []string{"--known-hosts", bed.KnownHosts}
	vf := []string{"--var-file", varFile}
	args := func(parts ...[]string) []string {
		out := []string{"facts", "-json"}
		for _, p := range parts {
			out = append(out, p...)
		}
		return append(out, labFile)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string // in stdout+stderr
	}{
		{"no --var-file", args(key, kh), 1, "No value for required variable"},
		{"no --known-hosts", args(key, vf), 2, "unknown host key"},
		{"no -i", args(kh, vf), 2, "could not be reached"},
		{"all", args(key, kh, vf, []string{"--parallel", "1", "-v"}), 0, `msg="gathered facts"`},
		{"--var", args(key, kh, []string{"--var", "user=" + bed.User}), 0, `"hostname"`},
		{"--var wins over --var-file", args(key, kh, vf, []string{"--var", "user=nobody-here"}), 2, "could not be reached"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, code := runRlabEnv(t, env, tc.args...)
			if code != tc.code || !strings.Contains(out+stderr, tc.want) {
				t.Errorf("rlab %v: exit %d, want %d with %q\n%s%s", tc.args, code, tc.code, tc.want, out, stderr)
			}
		})
	}
	// --refresh: the tools cache is rewritten with it, not without.
	caches := func() map[string]time.Time {
		m := map[string]time.Time{}
		_ = filepath.WalkDir(bed.Home, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasPrefix(d.Name(), "tools-") && strings.HasSuffix(d.Name(), ".json") {
				if st, err := os.Stat(p); err == nil {
					m[p] = st.ModTime()
				}
			}
			return nil
		})
		return m
	}
	before := caches()
	if len(before) == 0 {
		t.Fatalf("no tools cache under %s after facts", bed.Home)
	}
	if _, stderr, code := runRlabEnv(t, env, args(key, kh, vf)...); code != 0 {
		t.Fatalf("facts: exit %d\n%s", code, stderr)
	}
	for p, m := range caches() {
		if !m.Equal(before[p]) {
			t.Errorf("%s rewritten without --refresh", p)
		}
	}
	if _, stderr, code := runRlabEnv(t, env, args(key, kh, vf, []string{"--refresh"})...); code != 0 {
		t.Fatalf("facts --refresh: exit %d\n%s", code, stderr)
	}
	rewritten := 0
	for p, m := range caches() {
		if !m.Equal(before[p]) {
			rewritten++
		}
	}
	if rewritten == 0 {
		t.Errorf("--refresh rewrote no tools cache under %s", bed.Home)
	}
}

// TestDownHostKeysNetns: `rlab down` verifies host keys as the run did, and
// takes --known-hosts and --accept-new-host-keys as run does. A run on the
// bed records its lab's known_hosts; once that file is gone (and the run
// kept its work dir, --keep, so down must log in), down refuses the
// unknown key, takes it from --known-hosts, or trusts and records it with
// --accept-new-host-keys.
func TestDownHostKeysNetns(t *testing.T) {
	// --accept-new-host-keys records into the user's ~/.ssh/known_hosts: a
	// HOME of its own, or the bed's next hosts (new keys, same addresses)
	// meet a changed key in every later test.
	t.Setenv("HOME", t.TempDir())
	bed := testbed.Start(t, testbed.Options{Hosts: 1})
	dir := t.TempDir()
	kh := filepath.Join(dir, "known_hosts")
	b, err := os.ReadFile(bed.KnownHosts)
	if err != nil {
		t.Fatal(err)
	}
	h := bed.Hosts[0]
	home := t.TempDir() // the default known_hosts, empty: only the flags may answer
	env := []string{"HOME=" + home}
	src := "lab \"down\" {}\n\nhost \"h0\" {\n  address = \"" + h.Addr + "\"\n  user = \"" + bed.User + "\"\n  identity_file = \"" + bed.KeyFile + "\"\n  known_hosts = \"" + kh + "\"\n}\n\n" +
		"workload \"x\" {\n  tool    = \"exec\"\n  host    = host.h0\n  command = [\"true\"]\n}\n"
	labFile := filepath.Join(dir, "down.hcl")
	if err := os.WriteFile(labFile, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	redo := func(t *testing.T) string { // a fresh run whose exec process down must undo
		t.Helper()
		if err := os.WriteFile(kh, b, 0o600); err != nil {
			t.Fatal(err)
		}
		// --keep leaves the host's work dir, which down logs in to remove
		// (state.json is left as the run signed it).
		out := filepath.Join(t.TempDir(), "run")
		if stdout, stderr, code := runRlabEnv(t, env, "run", "--keep", "--out", out, labFile); code != 0 {
			t.Fatalf("run: exit %d\n%s%s", code, stdout, stderr)
		}
		if err := os.Remove(kh); err != nil {
			t.Fatal(err)
		}
		return out
	}
	// received is a run directory from someone else: its state.json is
	// no longer signed by this user's rlab (edited, or another user's), so
	// down acts on it only with --trust-state, and its known_hosts and
	// identity_file outside the run directory are used only when the user
	// names them too.
	received := func(t *testing.T, out string) {
		t.Helper()
		p := filepath.Join(out, "state.json")
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		re := regexp.MustCompile(`"paths_mac": "[0-9a-f]+"`)
		if !re.Match(b) {
			t.Fatalf("state.json of the run carries no paths_mac:\n%s", b)
		}
		if err := os.WriteFile(p, re.ReplaceAll(b, []byte(`"paths_mac": ""`)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name     string
		flags    []string
		code     int
		received bool
		say      string
	}{
		{"no flag", nil, 2, false, "host key"},
		{"--known-hosts", []string{"--known-hosts", bed.KnownHosts}, 0, false, ""},
		{"--accept-new-host-keys", []string{"--accept-new-host-keys"}, 0, false, ""},
		{"received, not trusted", []string{"--known-hosts", bed.KnownHosts, "--known-hosts", kh, "-i", bed.KeyFile}, 2, true, "--trust-state"},
		{"received, files not named", []string{"--trust-state", "--known-hosts", bed.KnownHosts}, 2, true, "its known_hosts"},
		{"received, key not named", []string{"--trust-state", "--known-hosts", bed.KnownHosts, "--known-hosts", kh}, 2, true, "its identity_file"},
		{"received, files named", []string{"--trust-state", "--known-hosts", bed.KnownHosts, "--known-hosts", kh, "-i", bed.KeyFile}, 0, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := redo(t)
			if tc.received {
				received(t, out)
			}
			stdout, stderr, code := runRlabEnv(t, env, append(append([]string{"down"}, tc.flags...), out)...)
			if code != tc.code {
				t.Errorf("down %v: exit %d, want %d\n%s%s", tc.flags, code, tc.code, stdout, stderr)
			}
			if tc.code == 2 && !strings.Contains(stdout+stderr, tc.say) {
				t.Errorf("down does not say why (%q):\n%s%s", tc.say, stdout, stderr)
			}
			if tc.name == "--accept-new-host-keys" {
				a, _ := os.ReadFile(kh)
				b, _ := os.ReadFile(filepath.Join(home, ".ssh", "known_hosts"))
				if !strings.Contains(string(a)+string(b), h.Addr) {
					t.Errorf("the accepted key of %s is recorded neither in the run's known_hosts nor in ~/.ssh/known_hosts", h.Addr)
				}
			}
		})
	}
}
