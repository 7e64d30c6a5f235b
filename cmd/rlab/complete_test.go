package main

import (
	"bytes"
	"strings"
	"testing"
)

// complete runs cobra's hidden __complete command as a shell's completion
// script does and returns the candidates (without descriptions).
func complete(t *testing.T, args ...string) []string {
	t.Helper()
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&bytes.Buffer{})
	root.SetArgs(append([]string{"__complete"}, args...))
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	var c []string
	for _, l := range strings.Split(out.String(), "\n") {
		if l == "" || strings.HasPrefix(l, ":") {
			continue
		}
		name, _, _ := strings.Cut(l, "\t")
		c = append(c, name)
	}
	return c
}

// TestCompletion: --only completes the workload names, student keys and
// instances of the lab on the line, for run, plan and check; facts --host
// its host names and block labels; a comma list completes its last element
// (run names: TestShowReportRunRefs).
func TestCompletion(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    []string // among the candidates
		notWant []string
	}{
		{"run --only workloads", []string{"run", "../../labs/quickstart.hcl", "--only", ""}, []string{"write_bw", "tcp_baseline"}, []string{"server"}},
		{"run --only students", []string{"run", "../../labs/class.hcl", "--only", ""}, []string{"write_bw", "ana", "bo", `write_bw["ana"]`}, nil},
		{"run --only=", []string{"run", "../../labs/quickstart.hcl", "--only=w"}, []string{"--only=write_bw"}, nil},
		{"comma list", []string{"run", "../../labs/class.hcl", "--only", "ana,"}, []string{"ana,bo", "ana,write_lat"}, nil},
		{"plan --only", []string{"plan", "../../labs/class.hcl", "--only", ""}, []string{"ana"}, nil},
		{"check --only", []string{"check", "--validate", "../../labs/class.hcl", "--only", ""}, []string{"ana"}, nil},
		{"run flags", []string{"run", "--k"}, []string{"--keep"}, nil},
		{"no lab yet", []string{"run", "--only", ""}, nil, []string{"write_bw"}},
		{"facts --host", []string{"facts", "../../labs/class.hcl", "--host", ""}, []string{"server", `server["ana"]`, "client", "bastion"}, []string{"write_bw", "ana"}},
		{"facts --host=", []string{"facts", "../../labs/walkthrough.hcl", "--host=s"}, []string{"--host=server"}, nil},
		{"facts --host comma list", []string{"facts", "../../labs/walkthrough.hcl", "--host", "server,"}, []string{"server,client"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := complete(t, tc.args...)
			has := map[string]bool{}
			for _, c := range got {
				has[c] = true
			}
			for _, w := range tc.want {
				if !has[w] {
					t.Errorf("candidates lack %q: %q", w, got)
				}
			}
			for _, w := range tc.notWant {
				if has[w] {
					t.Errorf("candidates have %q: %q", w, got)
				}
			}
		})
	}
	// the completion scripts exist
	for _, sh := range []string{"bash", "zsh", "fish"} {
		code, out, _ := execute(t, newRootCmd(), "completion", sh)
		if code != exitOK || !strings.Contains(out, "rlab") {
			t.Errorf("completion %s: exit %d", sh, code)
		}
	}
}

// TestFlagSuggestions: a mistyped flag gets a did-you-mean, on commands
// whose flags cobra parses and on those that parse their own.
func TestFlagSuggestions(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"run", "--kep", "x.hcl"}, "unknown flag: --kep; did you mean --keep?"},
		{[]string{"plan", "--jsn", "x.hcl"}, "did you mean --json?"},
		{[]string{"compare", "--treshold", "5", "a", "b"}, "unknown flag: --treshold; did you mean --threshold?"},
		{[]string{"runs", "--stauts", "ok"}, "did you mean --status?"},
		{[]string{"show", "--markdwon"}, "did you mean --markdown?"},
		{[]string{"compare", "--zzzzzz", "a", "b"}, "unknown flag: --zzzzzz (see rlab compare --help)"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, _, errText := execute(t, newRootCmd(), tc.args...)
			if code != exitFail || !strings.Contains(errText, tc.want) {
				t.Errorf("exit %d, error %q; want exit 1 with %q", code, errText, tc.want)
			}
		})
	}
}

func TestVersionFlag(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"version"}} {
		code, out, _ := execute(t, newRootCmd(), args...)
		if code != exitOK || !strings.HasPrefix(out, "rlab dev (go") || strings.Count(out, "\n") != 1 {
			t.Errorf("%v: exit %d, %q", args, code, out)
		}
	}
}
