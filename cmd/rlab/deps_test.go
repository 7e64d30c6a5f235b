package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDepsDemoApart: testdata/deps.sh installs for `make demo` only what the
// demo needs (QEMU, the image builder, Graphviz: no sshd, chromium or
// Ansible) and for `make test` the demo's packages plus the test toolchain,
// and the Makefile wires demo to the first and test to the second. The
// script runs for real, with apt-get and dpkg-query stand-ins on PATH that
// record what it would install on a machine that has nothing.
func TestDepsDemoApart(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	installs := func(t *testing.T, arg string) []string {
		bin := t.TempDir()
		got := filepath.Join(bin, "apt-get.args")
		stubs := map[string]string{
			"dpkg-query": "#!/bin/sh\nexit 1\n", // nothing installed
			"apt-get":    "#!/bin/sh\necho \"$@\" >> " + got + "\n",
			"sudo":       "#!/bin/sh\nexec \"$@\"\n",
		}
		for n, s := range stubs {
			if err := os.WriteFile(filepath.Join(bin, n), []byte(s), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		cmd := exec.Command("bash", "../../testdata/deps.sh", arg)
		cmd.Env = append(os.Environ(), "PATH="+bin+":/usr/bin:/bin")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("deps.sh %s: %v\n%s", arg, err, out)
		}
		b, err := os.ReadFile(got)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, "install") {
				return strings.Fields(l)
			}
		}
		t.Fatalf("deps.sh %s ran no apt-get install:\n%s", arg, b)
		return nil
	}
	has := func(list []string, p string) bool {
		for _, x := range list {
			if x == p {
				return true
			}
		}
		return false
	}
	demo, test := installs(t, "demo"), installs(t, "test")
	// What the demo path looks up: image.build (mmdebstrap, mke2fs),
	// vm.Boot (qemu-system-x86_64, qemu-img), the report's graph (dot).
	for _, p := range []string{"qemu-system-x86", "qemu-utils", "mmdebstrap", "e2fsprogs", "graphviz"} {
		if !has(demo, p) {
			t.Errorf("deps.sh demo does not install %s: %v", p, demo)
		}
	}
	for _, p := range []string{"openssh-server", "chromium", "ansible-core", "tshark"} {
		if has(demo, p) {
			t.Errorf("deps.sh demo installs %s, which the demo does not need", p)
		}
		if !has(test, p) {
			t.Errorf("deps.sh test does not install %s", p)
		}
	}
	for _, p := range demo {
		if !strings.HasPrefix(p, "-") && p != "install" && !has(test, p) {
			t.Errorf("deps.sh test lacks the demo's %s", p)
		}
	}
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\ndemo: deps-demo ", "\ntest: deps ", "\ndeps-demo: ", "./testdata/deps.sh demo\n", "./testdata/deps.sh test\n"} {
		if !strings.Contains(string(mk), want) {
			t.Errorf("Makefile lacks %q", want)
		}
	}
}

// TestReadmeFirstScreen: the README's first screen (40 lines) gives the two
// commands that do all the set-up (make demo, make test), what the demo
// costs in time and disk and what it installs, and how to build only the
// binary.
func TestReadmeFirstScreen(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	if len(lines) > 40 {
		lines = lines[:40]
	}
	first := strings.Join(lines, "\n")
	for _, want := range []string{"make demo   #", "make test   #", "750 MiB", "minutes", "make deps-demo", "qemu-system-x86", "no sshd", "`make build`"} {
		if !strings.Contains(first, want) {
			t.Errorf("README.md's first 40 lines lack %q", want)
		}
	}
}
