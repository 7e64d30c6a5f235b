package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hostileLabText hides what a string does: a CR that returns to the line's
// start, a window title and a clipboard write (OSC 0, OSC 52), a screen
// clear (CSI 2J, and the one-byte C1 CSI), a no-break space and a bidi
// override.
const hostileLabText = "\r\x1b]0;pwned\x07\x1b]52;c;cm0gLXJmIH4=\x07\x1b[2J\u009b2J\u00a0\u202e"

// hostileHCL is hostileLabText as an HCL string's escapes (a raw CR would
// end the string).
const hostileHCL = `\r\u001b]0;pwned\u0007\u001b]52;c;cm0gLXJmIH4=\u0007\u001b[2J\u009b2J\u00a0\u202e`

// TestOutputsEscapeHostileText: issue 24 #8. A lab from a course repository
// (plan, validate) and a run directory received from someone else (graph
// of its host facts, runs, compare) reach stdout and stderr with every
// control character escaped, and plan shows an argv element with one
// quoted, so "exec [echo hello]" cannot stand for another command.
func TestOutputsEscapeHostileText(t *testing.T) {
	dir := t.TempDir()
	labFile := filepath.Join(dir, "evil.hcl")
	must(t, os.WriteFile(labFile, []byte(`lab "evil" {
  description = "a lab`+hostileHCL+`"
}
host "a" {
  address = "192.0.2.1"
}
workload "hello" {
  tool    = "exec"
  host    = host.a
  command = ["echo", "hello`+hostileHCL+`"]
}
`), 0o644))
	badLab := filepath.Join(dir, "bad.hcl")
	must(t, os.WriteFile(badLab, []byte(`lab "bad" {}
host "a" {
  address = "192.0.2.1`+hostileHCL+`" # `+strings.TrimPrefix(hostileLabText, "\r")+`
}
`), 0o644))

	// Two received runs whose directory names, status, workload names and
	// host facts carry the same text.
	runsRoot := filepath.Join(dir, "runs")
	var runDirs []string
	for _, id := range []string{"20261125T210211Z", "20261126T210211Z"} {
		rd := filepath.Join(runsRoot, "quickstart", id+hostileLabText)
		copyTree(t, "../../testdata/report/run", rd)
		var doc map[string]any
		b, err := os.ReadFile(filepath.Join(rd, "results.json"))
		must(t, err)
		must(t, json.Unmarshal(b, &doc))
		doc["status"] = "failed" + hostileLabText
		doc["description"] = hostileLabText
		doc["id"] = id + hostileLabText
		for _, w := range doc["workloads"].([]any) {
			w.(map[string]any)["name"] = w.(map[string]any)["name"].(string) + hostileLabText
		}
		b, _ = json.Marshal(doc)
		must(t, os.WriteFile(filepath.Join(rd, "results.json"), b, 0o644))
		for _, h := range []string{"server", "client"} {
			p := filepath.Join(rd, "hosts", h, "facts.json")
			b, err := os.ReadFile(p)
			must(t, err)
			var f map[string]any
			must(t, json.Unmarshal(b, &f))
			f["hostname"], f["kernel"], f["os"] = hostileLabText, hostileLabText, hostileLabText
			b, _ = json.Marshal(f)
			must(t, os.WriteFile(p, b, 0o644))
		}
		runDirs = append(runDirs, rd)
	}

	tests := []struct {
		name string
		args []string
		want string // in the output, escaped
	}{
		{"plan", []string{"plan", labFile}, `"hello\r\x1b]0;pwned\a`},
		{"plan json", []string{"plan", "-json", labFile}, `\u009b2J`},
		{"validate", []string{"validate", labFile, badLab}, `pwned`},
		{"validate json", []string{"validate", "-json", badLab}, `pwned`},
		{"graph of a run", []string{"graph", runDirs[0]}, `pwned`},
		{"graph svg of a run", []string{"graph", "--format", "svg", runDirs[0]}, `pwned`},
		{"runs", []string{"runs", "--kind", "all", runsRoot}, `pwned`},
		{"runs json", []string{"runs", "--json", "--kind", "all", runsRoot}, `pwned`},
		{"runs last", []string{"runs", "--last", "--kind", "all", runsRoot}, `pwned`},
		{"compare", []string{"compare", runDirs[0], runDirs[1]}, `pwned`},
		{"compare markdown", []string{"compare", "--markdown", runDirs[0], runDirs[1]}, `pwned`},
		{"compare json", []string{"compare", "--json", runDirs[0], runDirs[1]}, `pwned`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := newRootCmd()
			var out, errOut bytes.Buffer
			root.SetOut(&out)
			root.SetErr(&errOut)
			root.SetArgs(tc.args)
			err := root.Execute()
			var errText string
			if err != nil {
				errText = strings.Join(errorLines(err), "\n")
			}
			for name, s := range map[string]string{"stdout": out.String(), "stderr": errOut.String(), "error": errText} {
				if i := strings.IndexFunc(s, func(r rune) bool {
					return (r < 0x20 && r != '\n' && r != '\t') || (r >= 0x7f && r <= 0x9f) || r == 0x202e
				}); i >= 0 {
					t.Errorf("%s carries a raw control character at %d: %q", name, i, s[max(0, i-30):min(len(s), i+30)])
				}
				if strings.ContainsRune(s, '\u00a0') && tc.name == "plan" {
					t.Errorf("%s shows a no-break space unquoted", name)
				}
			}
			if all := out.String() + errOut.String() + errText; !strings.Contains(all, tc.want) {
				t.Errorf("output lacks %q (the text, escaped):\n%s", tc.want, all)
			}
		})
	}
}

func copyTree(t *testing.T, from, to string) {
	t.Helper()
	must(t, filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	}))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
