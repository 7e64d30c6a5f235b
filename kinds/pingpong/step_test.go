package pingpong

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

// TestArgvGolden pins the exact command lines rlab runs for the pingpong
// tools: device, GID index, MTU (none for UD), port, size, iterations and
// the server address.
func TestArgvGolden(t *testing.T) {
	srv := kinds.End{Device: "rxe_eth1", GID: "1"}
	cli := kinds.End{Device: "rxe0", GID: "3"}
	var b strings.Builder
	for _, tool := range []string{"ibv_rc_pingpong", "ibv_ud_pingpong"} {
		w := steps.Workload{Workload: kinds.Workload{Tool: tool, Options: kinds.Options{Iterations: 300}}}
		fmt.Fprintf(&b, "# %s\n", tool)
		s, c := Kind{}.Argv(kinds.ArgvIn{W: &w.Workload, Trial: kinds.Trial{Size: 4096}, Port: 20020, Server: srv, Client: cli, MTU: "4096", Addr: "10.99.0.1"})
		fmt.Fprintf(&b, "server: %q\n", s)
		fmt.Fprintf(&b, "client: %q\n", c)
	}
	golden(t, "argv.golden", b.String())
}
