package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/agent/dist"
)

// TestAgentExport: `rlab agent export` writes the embedded agent of the
// arch asked, prints the sha256 of what it wrote (hashed here, not taken
// from dist), the install command into the root-owned folder of that hash
// and a sudoers line naming that file and never the user's cache (SECURITY
// 176). -o - writes the binary alone on stdout; a bad arch or no -o fails.
func TestAgentExport(t *testing.T) {
	for _, arch := range []string{"amd64", "arm64"} {
		t.Run(arch, func(t *testing.T) {
			if _, _, _, err := dist.Packed("linux", arch); errors.Is(err, dist.ErrNotEmbedded) {
				t.Skip("agent not embedded: run make agent")
			}
			file := filepath.Join(t.TempDir(), "agent it")
			out, errOut, code := rlab(t, "agent", "export", "--arch", arch, "-o", file)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			s := sha256.Sum256(b)
			sum := hex.EncodeToString(s[:])
			if !strings.HasPrefix(string(b), "\x7fELF") {
				t.Errorf("%s is not an ELF binary", file)
			}
			sys := "/usr/local/libexec/rlab/agent/" + sum + "/rlab-agent"
			for _, want := range []string{
				"rlab-agent linux/" + arch + " sha256 " + sum + "\n",
				"  install -D -o root -g root -m 0755 '" + file + "' " + sys + "\n",
				"NOPASSWD: sha256:" + sum + " " + sys + " serve --run-id * --work-dir HOME/.cache/rlab/runs/* --owner UID\\:GID\n",
			} {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			for _, line := range strings.Split(out, "\n") {
				if strings.Contains(line, "NOPASSWD") && strings.Contains(line, ".cache/rlab/agent") {
					t.Errorf("the sudoers line names the user's cache: %s", line)
				}
			}
			stdout, notes, code := rlab(t, "agent", "export", "--arch", arch, "-o", "-")
			if code != 0 || stdout != string(b) || !strings.Contains(notes, sys) {
				t.Errorf("-o -: exit %d, %d bytes on stdout (want the %d of the file), notes %q", code, len(stdout), len(b), notes)
			}
		})
	}
	for _, args := range [][]string{{"agent", "export", "--arch", "386", "-o", filepath.Join(t.TempDir(), "a")}, {"agent", "export"}} {
		if _, errOut, code := rlab(t, args...); code == 0 {
			t.Errorf("%q: exit 0, want a refusal (%s)", args, errOut)
		}
	}
}
