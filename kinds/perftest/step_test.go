package perftest

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rlab-dev/rlab/agent/proto"
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

// TestArgvGolden pins the exact command lines rlab runs for every perftest
// tool: device, GID index, MTU, port, sizes, iterations and the server
// address.
func TestArgvGolden(t *testing.T) {
	srv := steps.DeviceEnd{Device: "rxe_eth1", GIDIndex: 1}
	cli := steps.DeviceEnd{Device: "rxe0", GIDIndex: 3}
	cases := []struct {
		name string
		w    steps.Workload
		size int64
		json string
	}{
		{name: "write_bw", w: steps.Workload{Workload: kinds.Workload{Tool: "ib_write_bw", Options: kinds.Options{Iterations: 5000}}}, size: 65536},
		{name: "write_bw_json", w: steps.Workload{Workload: kinds.Workload{Tool: "ib_write_bw", Options: kinds.Options{Iterations: 1000}}}, size: 4096, json: "/home/u/.cache/rlab/runs/x/wl.bw.client.s4096.r0.json"},
		{name: "read_bw_duration_qps", w: steps.Workload{Workload: kinds.Workload{Tool: "ib_read_bw", Options: kinds.Options{Duration: 1500 * time.Millisecond, Iterations: 9, QPs: 4}}}, size: 1048576},
		{name: "send_lat_uc_args", w: steps.Workload{Workload: kinds.Workload{Tool: "ib_send_lat", Options: kinds.Options{Iterations: 300, Transport: "UC", Args: []string{"-F"}}}}, size: 2},
		{name: "atomic_bw", w: steps.Workload{Workload: kinds.Workload{Tool: "ib_atomic_bw", Options: kinds.Options{Iterations: 100}}}, size: 8},
		{name: "write_lat_default_size", w: steps.Workload{Workload: kinds.Workload{Tool: "ib_write_lat"}}},
	}
	var b strings.Builder
	for _, c := range cases {
		fmt.Fprintf(&b, "# %s\n", c.name)
		fmt.Fprintf(&b, "server: %q\n", Argv(&c.w, srv, 1024, 20010, c.size, "", ""))
		fmt.Fprintf(&b, "client: %q\n", Argv(&c.w, cli, 1024, 20010, c.size, "10.99.0.1", c.json))
	}
	golden(t, "argv.golden", b.String())
}
func TestPerftestReady(t *testing.T) {
	tests := []struct {
		args []string
		want proto.Ready
	}{
		{nil, proto.Ready{TCPListen: 20000}},
		{[]string{"-F"}, proto.Ready{TCPListen: 20000}},
		{[]string{"-R"}, proto.Ready{RDMACMListen: 20000}},
		{[]string{"--rdma_cm", "-F"}, proto.Ready{RDMACMListen: 20000}},
	}
	for _, tt := range tests {
		if got := Ready(&steps.Workload{Workload: kinds.Workload{Tool: "ib_write_bw", Options: kinds.Options{Args: tt.args}}}, 20000); *got != tt.want {
			t.Errorf("args %q: ready %+v, want %+v", tt.args, *got, tt.want)
		}
	}
}
