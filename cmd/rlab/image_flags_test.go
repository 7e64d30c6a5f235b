package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/engine/image"
)

// TestImageBuildFlags: what `rlab image build` hands the builder for each
// flag, with a stand-in mmdebstrap on PATH that records its argv, prints a
// line and fails (a real build takes minutes): --force builds although the
// image is cached, --release names the suite, --mirror is passed on,
// --image minimal builds the minimal image's package list, --verbose shows
// the builder's output (without it, only the stages).
func TestImageBuildFlags(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("image build needs root")
	}
	bin := t.TempDir()
	argvFile := filepath.Join(bin, "argv")
	script := "#!/bin/sh\necho \"$@\" > " + argvFile + "\necho fake-mmdebstrap-output\nexit 3\n"
	if err := os.WriteFile(filepath.Join(bin, "mmdebstrap"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	cached := func(t *testing.T) string { // an image of the default recipe, cached
		dir := t.TempDir()
		d := filepath.Join(dir, image.DefaultRecipe("").Name())
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for n, b := range map[string]string{"image.json": `{"hash":"` + image.DefaultRecipe("").Hash() + `","release":"bookworm"}`, "root.ext4": "x", "vmlinuz": "k", "initrd.img": "i"} {
			if err := os.WriteFile(filepath.Join(d, n), []byte(b), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	for _, tc := range []struct {
		name      string
		args      []string
		built     bool   // the builder ran
		argv      string // in its argv
		notArgv   string // not in its argv
		stderr    string
		notStderr string
	}{
		{name: "cached", args: nil, built: false},
		{name: "--force", args: []string{"--force"}, built: true, argv: " bookworm ", notStderr: "fake-mmdebstrap-output"},
		{name: "--release", args: []string{"--release", "trixie"}, built: true, argv: " trixie "},
		{name: "--mirror", args: []string{"--force", "--mirror", "http://deb.example.org/debian"}, built: true, argv: "http://deb.example.org/debian"},
		// The minimal image: its own package list (sudo, no perftest),
		// built although the full one is cached.
		{name: "--image", args: []string{"--image", "minimal"}, built: true, argv: ",sudo,", notArgv: "perftest"},
		{name: "--verbose", args: []string{"--force", "--verbose"}, built: true, stderr: "fake-mmdebstrap-output"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(argvFile)
			var out, errb bytes.Buffer
			root := newRootCmd()
			root.SetOut(&out)
			root.SetErr(&errb)
			root.SetArgs(append([]string{"image", "build", "--out", cached(t)}, tc.args...))
			err := root.Execute()
			argv, _ := os.ReadFile(argvFile)
			if tc.built != (len(argv) > 0) || tc.built != (err != nil) {
				t.Fatalf("builder ran: %v (argv %q), err %v; want ran %v\nstdout %s\nstderr %s", len(argv) > 0, argv, err, tc.built, out.String(), errb.String())
			}
			if !strings.Contains(" "+string(argv), tc.argv) {
				t.Errorf("mmdebstrap argv %q lacks %q", argv, tc.argv)
			}
			if tc.notArgv != "" && strings.Contains(string(argv), tc.notArgv) {
				t.Errorf("mmdebstrap argv %q has %q", argv, tc.notArgv)
			}
			if tc.stderr != "" && !strings.Contains(errb.String(), tc.stderr) {
				t.Errorf("stderr lacks %q:\n%s", tc.stderr, errb.String())
			}
			if tc.notStderr != "" && strings.Contains(errb.String(), tc.notStderr) {
				t.Errorf("stderr has %q without --verbose:\n%s", tc.notStderr, errb.String())
			}
		})
	}
}
