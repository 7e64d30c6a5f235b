package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestLabExamplesRun: every example in the --help of the commands that
// read only a lab file (validate, plan, graph) runs and exits 0 against the
// labs/ folder of this repository, as a user copying it from the help
// would (`rlab graph --help` once named a variable labs/class.hcl lacks).
// Only the rlab part of a line runs (before a pipe or a redirect).
func TestLabExamplesRun(t *testing.T) {
	root := newRootCmd()
	n := 0
	for _, name := range []string{"validate", "plan", "graph"} {
		cmd, _, err := root.Find([]string{name})
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range exampleLines(cmd) {
			n++
			t.Run(line, func(t *testing.T) {
				args := strings.Fields(line)[1:]
				for i, a := range args {
					a = strings.Trim(a, `'"`)
					if strings.HasPrefix(a, "labs/") {
						a = "../../" + a
					}
					args[i] = a
				}
				if _, stderr, code := rlab(t, args...); code != exitOK {
					t.Errorf("rlab %s: exit %d\n%s", strings.Join(args, " "), code, stderr)
				}
			})
		}
	}
	if n < 6 {
		t.Fatalf("%d examples, want the 8 of validate, plan and graph", n)
	}
}

// exampleLines are the rlab commands of cmd's Example, each cut before a
// pipe, a redirect, && or a comment.
func exampleLines(cmd *cobra.Command) []string {
	var out []string
	for _, l := range strings.Split(cmd.Example, "\n") {
		l = strings.TrimSpace(l)
		if i := strings.IndexAny(l, "|>#&"); i >= 0 {
			l = strings.TrimSpace(l[:i])
		}
		if strings.HasPrefix(l, "rlab ") && !strings.Contains(l, "runs/") {
			out = append(out, l)
		}
	}
	return out
}
