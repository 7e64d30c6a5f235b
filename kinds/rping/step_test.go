package rping

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rlab-dev/rlab/kinds"
	"github.com/rlab-dev/rlab/steps"
)

// TestMain registers this family alone: its step reads its own descriptor
// and needs no other family.
func TestMain(m *testing.M) {
	kinds.Register(Kind{})
	os.Exit(m.Run())
}

var update = flag.Bool("update", false, "rewrite golden files")

func golden(t *testing.T, name, got string) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(p, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("read golden (run with -update): %v", err)
	}
	if d := cmp.Diff(string(want), got); d != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", name, d)
	}
}

// TestArgvGolden pins the exact command lines rlab runs for rping.
func TestArgvGolden(t *testing.T) {
	var b strings.Builder
	for _, w := range []steps.Workload{{Workload: kinds.Workload{Tool: "rping"}}, {Workload: kinds.Workload{Tool: "rping", Options: kinds.Options{Iterations: 5, Args: []string{"-V"}}}}} {
		fmt.Fprintf(&b, "# rping iterations=%d\n", w.Iterations)
		in := kinds.ArgvIn{W: &w.Workload, Port: 20030, Addr: "10.99.0.1"}
		in.Trial.Size = 64
		srv, _ := Kind{}.Argv(in)
		in.Trial.Size = 0
		_, cli := Kind{}.Argv(in)
		fmt.Fprintf(&b, "server: %q\n", srv)
		fmt.Fprintf(&b, "client: %q\n", cli)
	}
	golden(t, "argv.golden", b.String())
}
