package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/server"
)

func TestVersion(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"version"}, nil, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !regexp.MustCompile(`^rlab-agent \S+ proto 1 sha256 [0-9a-f]{64}\n$`).MatchString(out.String()) {
		t.Errorf("version printed %q", out.String())
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{nil, {"bogus"}, {"serve"}, {"serve", "--run-id", "../x"}, {"serve", "--run-id", "a", "extra"},
		{"serve", "--run-id", "a", "--owner", "root"}} {
		var out, errb bytes.Buffer
		if code := run(args, strings.NewReader(""), &out, &errb); code != 2 {
			t.Errorf("run(%q) = %d, want 2 (stderr %q)", args, code, errb.String())
		}
		if out.Len() != 0 {
			t.Errorf("run(%q) wrote to stdout: %q", args, out.String())
		}
	}
}

// TestServe runs the serve command on pipes: hello first, a ping, and a
// clean exit when stdin closes.
func TestServe(t *testing.T) {
	dir := t.TempDir()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var errb bytes.Buffer
	code := make(chan int, 1)
	go func() {
		code <- run([]string{"serve", "--run-id", "r1", "--work-dir", dir}, inR, outW, &errb)
		outW.Close()
	}()
	br := bufio.NewReader(outR)
	line, err := br.ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	var h proto.Hello
	if err := json.Unmarshal(line, &h); err != nil || h.Magic != proto.Magic || h.WorkDir != dir {
		t.Fatalf("hello %q: %v", line, err)
	}
	io.WriteString(inW, `{"id":1,"method":"ping"}`+"\n")
	line, err = br.ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	var resp proto.Response
	if err := json.Unmarshal(line, &resp); err != nil || resp.ID != 1 || resp.Error != nil {
		t.Fatalf("ping reply %q: %v", line, err)
	}
	inW.Close()
	if c := <-code; c != 0 {
		t.Errorf("serve exit %d: %s", c, errb.String())
	}
	if !strings.Contains(errb.String(), "msg=serving") {
		t.Errorf("no log on stderr: %q", errb.String())
	}
}

// TestRootPATHPinned: a root agent working for a user finds what it runs as
// root in root's folders, never in a PATH it was started with: sudo without
// secure_path (Arch Linux's default) passes the user's PATH, and the user's
// own dmesg first in it ran as root (found in attack round 10, high).
func TestRootPATHPinned(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	// The test binary runs from /tmp, which the agent refuses for root
	// working for a user (TestServeRefusesUnsafeExecutable).
	checkExecutable = func() error { return nil }
	t.Cleanup(func() { checkExecutable = server.CheckRootExecutable })
	keepEnv(t) // serve --owner pins the environment (server.PinRootPATH)
	const uid = 65534
	bin := t.TempDir()
	os.Chmod(filepath.Dir(bin), 0o711)
	os.Chmod(bin, 0o755)
	marker := filepath.Join(t.TempDir(), "ran-as-root")
	fake := "#!/bin/sh\nid -u > " + marker + "\n"
	if err := os.WriteFile(filepath.Join(bin, "dmesg"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	base := t.TempDir()
	os.Chmod(filepath.Dir(base), 0o711)
	if err := os.Chown(base, uid, uid); err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var errb bytes.Buffer
	code := make(chan int, 1)
	go func() {
		code <- run([]string{"serve", "--run-id", "r1", "--work-dir", filepath.Join(base, "w"), "--owner", "65534:65534"}, inR, outW, &errb)
		outW.Close()
	}()
	lines := bufio.NewScanner(outR)
	lines.Buffer(nil, proto.MaxLine)
	// answer reads lines up to the response to id.
	answer := func(id uint64) proto.Response {
		for lines.Scan() {
			var r proto.Response
			if json.Unmarshal(lines.Bytes(), &r) == nil && r.ID == id && (r.Result != nil || r.Error != nil) {
				return r
			}
		}
		t.Fatalf("no answer to request %d: %v; stderr %s", id, lines.Err(), errb.String())
		return proto.Response{}
	}
	if !lines.Scan() { // the hello, written before any request is read
		t.Fatalf("no hello: %v; stderr %s", lines.Err(), errb.String())
	}
	io.WriteString(inW, `{"id":1,"method":"proc.start","params":{"handle":"d","argv":["dmesg"],"become":true}}`+"\n")
	if r := answer(1); r.Error != nil {
		t.Fatalf("proc.start of dmesg as root: %v", r.Error)
	}
	io.WriteString(inW, `{"id":2,"method":"proc.wait","params":{"handle":"d"}}`+"\n")
	answer(2)
	inW.Close()
	go io.Copy(io.Discard, outR)
	if c := <-code; c != 0 {
		t.Fatalf("serve exit %d: %s", c, errb.String())
	}
	if b, err := os.ReadFile(marker); err == nil {
		t.Errorf("the dmesg first in the agent's PATH ran (as uid %s), not root's", strings.TrimSpace(string(b)))
	}
}

// TestServeRefusesUnsafeExecutable: serve as root for a user (--owner)
// checks the real /proc/self/exe, this test binary under /tmp (mode 1777),
// and refuses before the hello or any work dir, saying why and what to do
// (SECURITY 176). As root for root (no --owner) it serves.
func TestServeRefusesUnsafeExecutable(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	if err := server.CheckRootExecutable(); err == nil {
		t.Skip("this test binary is in root's folders: nothing to refuse")
	}
	keepEnv(t) // serve --owner pins the environment (server.PinRootPATH)
	base := t.TempDir()
	os.Chmod(filepath.Dir(base), 0o711)
	if err := os.Chown(base, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	wd := filepath.Join(base, "w")
	var out, errb bytes.Buffer
	code := run([]string{"serve", "--run-id", "r1", "--work-dir", wd, "--owner", "65534:65534"}, strings.NewReader(""), &out, &errb)
	if code != 1 || out.Len() != 0 {
		t.Fatalf("serve --owner from %s: exit %d, stdout %q; want exit 1 and no hello", os.Args[0], code, out.String())
	}
	for _, want := range []string{"unsafe executable for a root agent", "is writable by its group or others", server.SystemAgentDir, "SECURITY.md"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr %q does not say %q", errb.String(), want)
		}
	}
	if _, err := os.Lstat(wd); err == nil {
		t.Errorf("the refused agent made its work dir %s", wd)
	}
	// Root for root: nothing to check, it serves.
	out.Reset()
	errb.Reset()
	if code := run([]string{"serve", "--run-id", "r1", "--work-dir", filepath.Join(t.TempDir(), "w")}, strings.NewReader(""), &out, &errb); code != 0 || !strings.Contains(out.String(), `"hash"`) {
		t.Errorf("serve as root without --owner: exit %d, stdout %q, stderr %s", code, out.String(), errb.String())
	}
}

// TestServeRefusesSudoArgInjection: sudo matches a rule's arguments against
// the command's arguments joined by spaces, so with SECURITY.md's rule
// (`--work-dir /home/alice/.cache/rlab/runs/* --owner 1000\:1000`) the one
// argument `--work-dir "…/runs/y --owner 1000:1000"` passed it and the
// agent ran as root with no owner: every workload as root (attack round 12,
// high). A root agent now refuses an argument with whitespace, and one that
// sudo started for a user refuses to run without --owner naming that user.
func TestServeRefusesSudoArgInjection(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (the agent must really be root to be refused as root)")
	}
	checkExecutable = func() error { return nil } // the test binary runs from /tmp
	t.Cleanup(func() { checkExecutable = server.CheckRootExecutable })
	keepEnv(t) // serve in the rule's form pins the environment (server.PinRootPATH)
	base := t.TempDir()
	os.Chmod(filepath.Dir(base), 0o711)
	if err := os.Chown(base, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		sudoUID string
		args    []string
		want    string // in stderr
	}{
		{"owner hidden in the work dir", "65534", []string{"--run-id", "x", "--work-dir", filepath.Join(base, "y --owner 65534:65534")}, "whitespace"},
		{"owner hidden, no sudo", "", []string{"--run-id", "x", "--work-dir", filepath.Join(base, "y --owner 65534:65534")}, "whitespace"},
		{"tab in the work dir", "65534", []string{"--run-id", "x", "--work-dir", filepath.Join(base, "y\t"), "--owner", "65534:65534"}, "whitespace"},
		{"newline in an argument", "65534", []string{"--run-id", "x", "--log-level", "info\n", "--work-dir", filepath.Join(base, "y"), "--owner", "65534:65534"}, "whitespace"},
		{"sudo without --owner", "65534", []string{"--run-id", "x", "--work-dir", filepath.Join(base, "y")}, "without --owner"},
		{"sudo for another owner", "65534", []string{"--run-id", "x", "--work-dir", filepath.Join(base, "y"), "--owner", "0:0"}, "another user"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			getenv = func(k string) string {
				if k == "SUDO_UID" {
					return tc.sudoUID
				}
				return os.Getenv(k)
			}
			t.Cleanup(func() { getenv = os.Getenv })
			var out, errb bytes.Buffer
			code := run(append([]string{"serve"}, tc.args...), strings.NewReader(""), &out, &errb)
			if code != 2 || out.Len() != 0 {
				t.Errorf("serve %q: exit %d, stdout %q; want exit 2 and no hello", tc.args, code, out.String())
			}
			if !strings.Contains(errb.String(), tc.want) {
				t.Errorf("stderr %q does not say %q", errb.String(), tc.want)
			}
			entries, _ := os.ReadDir(base)
			for _, e := range entries {
				t.Errorf("the refused agent made %s in %s", e.Name(), base)
				os.RemoveAll(filepath.Join(base, e.Name()))
			}
		})
	}
	// The rule's own form, started by sudo for that user, serves.
	getenv = func(k string) string {
		if k == "SUDO_UID" {
			return "65534"
		}
		return os.Getenv(k)
	}
	t.Cleanup(func() { getenv = os.Getenv })
	var out, errb bytes.Buffer
	if code := run([]string{"serve", "--run-id", "x", "--work-dir", filepath.Join(base, "y"), "--owner", "65534:65534"}, strings.NewReader(""), &out, &errb); code != 0 || !strings.Contains(out.String(), `"hash"`) {
		t.Errorf("serve in the rule's form: exit %d, stdout %q, stderr %s", code, out.String(), errb.String())
	}
}

// TestServeTakesOnlyTheRulesArguments: sudo's `*` in the documented rule
// spans whole words, so the login user could insert options between the
// rule's words (`--run-id x --log-level debug --work-dir …`) and the root
// agent served (attack round 14). A root agent working for a user now takes
// exactly the rule's arguments, `--run-id ID --work-dir DIR --owner
// UID:GID`, in that order, each once, and refuses anything else before its
// hello and before any work dir, naming the argument it refused.
func TestServeTakesOnlyTheRulesArguments(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (the agent must really be root to be refused as root)")
	}
	checkExecutable = func() error { return nil } // the test binary runs from /tmp
	t.Cleanup(func() { checkExecutable = server.CheckRootExecutable })
	keepEnv(t) // serve in the rule's form pins the environment (server.PinRootPATH)
	base := t.TempDir()
	os.Chmod(filepath.Dir(base), 0o711)
	if err := os.Chown(base, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	wd := filepath.Join(base, "y")
	for _, tc := range []struct {
		name    string
		sudoUID string // "" for root started without sudo
		args    []string
		want    string // in stderr
	}{
		{"an option inserted", "65534", []string{"--run-id", "x", "--log-level", "debug", "--work-dir", wd, "--owner", "65534:65534"}, `"--log-level"`},
		{"an option inserted, no sudo", "", []string{"--run-id", "x", "--log-level", "debug", "--work-dir", wd, "--owner", "65534:65534"}, `"--log-level"`},
		{"an option appended", "65534", []string{"--run-id", "x", "--work-dir", wd, "--owner", "65534:65534", "--log-level", "debug"}, `"--log-level"`},
		{"run id twice", "65534", []string{"--run-id", "x", "--run-id", "z", "--work-dir", wd, "--owner", "65534:65534"}, `"--run-id"`},
		{"owner twice", "", []string{"--run-id", "x", "--work-dir", wd, "--owner", "0:0", "--owner", "65534:65534"}, `"--owner"`},
		{"another order", "65534", []string{"--work-dir", wd, "--run-id", "x", "--owner", "65534:65534"}, `"--work-dir"`},
		{"flag=value", "65534", []string{"--run-id=x", "--work-dir", wd, "--owner", "65534:65534"}, `"--run-id=x"`},
		{"single dash", "65534", []string{"-run-id", "x", "--work-dir", wd, "--owner", "65534:65534"}, `"-run-id"`},
		{"no work dir", "65534", []string{"--run-id", "x", "--owner", "65534:65534"}, `"--owner"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			getenv = func(k string) string {
				if k == "SUDO_UID" {
					return tc.sudoUID
				}
				return os.Getenv(k)
			}
			t.Cleanup(func() { getenv = os.Getenv })
			var out, errb bytes.Buffer
			code := run(append([]string{"serve"}, tc.args...), strings.NewReader(""), &out, &errb)
			if code != 2 || out.Len() != 0 {
				t.Errorf("serve %q: exit %d, stdout %q; want exit 2 and no hello", tc.args, code, out.String())
			}
			for _, want := range []string{tc.want, "--run-id ID --work-dir DIR --owner UID:GID"} {
				if !strings.Contains(errb.String(), want) {
					t.Errorf("stderr %q does not say %q", errb.String(), want)
				}
			}
			entries, _ := os.ReadDir(base)
			for _, e := range entries {
				t.Errorf("the refused agent made %s in %s", e.Name(), base)
				os.RemoveAll(filepath.Join(base, e.Name()))
			}
		})
	}
	// The rule's own form serves, with sudo and without; root for root
	// (no --owner, no sudo for a user) takes its options as before.
	for _, tc := range []struct {
		sudoUID string
		args    []string
	}{
		{"65534", []string{"--run-id", "x", "--work-dir", wd, "--owner", "65534:65534"}},
		{"", []string{"--run-id", "x", "--work-dir", wd, "--owner", "65534:65534"}},
		{"", []string{"--run-id", "x", "--log-level", "debug", "--work-dir", filepath.Join(t.TempDir(), "w")}},
	} {
		getenv = func(k string) string {
			if k == "SUDO_UID" {
				return tc.sudoUID
			}
			return os.Getenv(k)
		}
		var out, errb bytes.Buffer
		if code := run(append([]string{"serve"}, tc.args...), strings.NewReader(""), &out, &errb); code != 0 || !strings.Contains(out.String(), `"hash"`) {
			t.Errorf("serve %q (SUDO_UID %q): exit %d, stdout %q, stderr %s", tc.args, tc.sudoUID, code, out.String(), errb.String())
		}
		getenv = os.Getenv
	}
}

// keepEnv restores the whole environment after the test: serve as root
// for a user drops what server.PinRootPATH does not keep from this test
// process's.
func keepEnv(t *testing.T) {
	saved := os.Environ()
	t.Cleanup(func() {
		os.Clearenv()
		for _, kv := range saved {
			k, v, _ := strings.Cut(kv, "=")
			os.Setenv(k, v)
		}
	})
}
