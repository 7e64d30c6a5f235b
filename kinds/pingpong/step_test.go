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
	srv := steps.DeviceEnd{Device: "rxe_eth1", GIDIndex: 1}
	cli := steps.DeviceEnd{Device: "rxe0", GIDIndex: 3}
	var b strings.Builder
	for _, tool := range []string{"ibv_rc_pingpong", "ibv_ud_pingpong"} {
		w := steps.Workload{Workload: kinds.Workload{Tool: tool, Options: kinds.Options{Iterations: 300}}}
		fmt.Fprintf(&b, "# %s\n", tool)
		fmt.Fprintf(&b, "server: %q\n", Argv(&w, srv, 4096, 20020, 4096, ""))
		fmt.Fprintf(&b, "client: %q\n", Argv(&w, cli, 4096, 20020, 4096, "10.99.0.1"))
	}
	golden(t, "argv.golden", b.String())
}
