package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFmtPrintsNoTerminalEscapes: rlab fmt prints the names of the files it
// changed and, with -diff, their lines; both come from a course
// repository's folder and reached the terminal raw (found in attack round
// 12: a comment holding OSC 0 set the window title and CSI 2J cleared the
// screen, as did a file name). Both are escaped now.
func TestFmtPrintsNoTerminalEscapes(t *testing.T) {
	src := "lab \"x\" {}\n# \x1b]0;PWNED\x07 \x1b[2J\u009b31m\n   host \"a\"   {\naddress=\"192.0.2.1\"\n}\n"
	for _, args := range [][]string{{"fmt", "-check", "-diff"}, {"fmt", "-check"}, {"fmt", "-diff"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			dir := t.TempDir()
			for _, n := range []string{"lab.hcl", "e\x1b[31mvil\x1b]0;T\x07.hcl"} {
				if err := os.WriteFile(filepath.Join(dir, n), []byte(src), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			out, errText, _ := rlab(t, append(args, dir)...)
			for _, c := range []string{"\x1b", "\x07", "\u009b"} {
				if strings.Contains(out+errText, c) {
					t.Errorf("output holds %q raw:\n%q", c, out+errText)
				}
			}
			if !strings.Contains(out, "vil") || !strings.Contains(out, "lab.hcl") {
				t.Errorf("the changed files are not named:\n%q", out)
			}
		})
	}
}
