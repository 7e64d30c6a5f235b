package steps

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
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestArgvGolden pins the exact command lines rlab runs for every RDMA tool:
// device, GID index, MTU, port, sizes, iterations and the server address.
func TestArgvGolden(t *testing.T) {
	srv := PerftestEnd{Device: "rxe_eth1", GIDIndex: 1}
	cli := PerftestEnd{Device: "rxe0", GIDIndex: 3}
	cases := []struct {
		name string
		w    Workload
		size int64
		json string
	}{
		{name: "write_bw", w: Workload{Workload: kinds.Workload{Tool: "ib_write_bw", Options: kinds.Options{Iterations: 5000}}}, size: 65536},
		{name: "write_bw_json", w: Workload{Workload: kinds.Workload{Tool: "ib_write_bw", Options: kinds.Options{Iterations: 1000}}}, size: 4096, json: "/home/u/.cache/rlab/runs/x/wl.bw.client.s4096.r0.json"},
		{name: "read_bw_duration_qps", w: Workload{Workload: kinds.Workload{Tool: "ib_read_bw", Options: kinds.Options{Duration: 1500 * time.Millisecond, Iterations: 9, QPs: 4}}}, size: 1048576},
		{name: "send_lat_uc_args", w: Workload{Workload: kinds.Workload{Tool: "ib_send_lat", Options: kinds.Options{Iterations: 300, Transport: "UC", Args: []string{"-F"}}}}, size: 2},
		{name: "atomic_bw", w: Workload{Workload: kinds.Workload{Tool: "ib_atomic_bw", Options: kinds.Options{Iterations: 100}}}, size: 8},
		{name: "write_lat_default_size", w: Workload{Workload: kinds.Workload{Tool: "ib_write_lat"}}},
	}
	var b strings.Builder
	for _, c := range cases {
		fmt.Fprintf(&b, "# %s\n", c.name)
		fmt.Fprintf(&b, "server: %q\n", PerftestArgv(&c.w, srv, 1024, 20010, c.size, "", ""))
		fmt.Fprintf(&b, "client: %q\n", PerftestArgv(&c.w, cli, 1024, 20010, c.size, "10.99.0.1", c.json))
	}
	for _, tool := range []string{"ibv_rc_pingpong", "ibv_ud_pingpong"} {
		w := Workload{Workload: kinds.Workload{Tool: tool, Options: kinds.Options{Iterations: 300}}}
		fmt.Fprintf(&b, "# %s\n", tool)
		fmt.Fprintf(&b, "server: %q\n", PingpongArgv(&w, srv, 4096, 20020, 4096, ""))
		fmt.Fprintf(&b, "client: %q\n", PingpongArgv(&w, cli, 4096, 20020, 4096, "10.99.0.1"))
	}
	for _, w := range []Workload{{Workload: kinds.Workload{Tool: "rping"}}, {Workload: kinds.Workload{Tool: "rping", Options: kinds.Options{Iterations: 5, Args: []string{"-V"}}}}} {
		fmt.Fprintf(&b, "# rping iterations=%d\n", w.Iterations)
		fmt.Fprintf(&b, "server: %q\n", RpingArgv(&w, "-s", "10.99.0.1", 20030, 64))
		fmt.Fprintf(&b, "client: %q\n", RpingArgv(&w, "-c", "10.99.0.1", 20030, 0))
	}
	golden(t, "argv.golden", b.String())
}

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

func TestNewWorkloadKinds(t *testing.T) {
	for _, tool := range KindNames() {
		w := &Workload{Workload: kinds.Workload{Name: "w", Slug: "w", Tool: tool, Options: kinds.Options{Command: []string{"true"}}}, Host: "a", ServerHost: "a", ClientHost: "b"}
		s, err := NewWorkload(w)
		if err != nil {
			t.Errorf("%s: %v", tool, err)
			continue
		}
		if _, ok := s.(Outcomer); !ok {
			t.Errorf("%s: step has no outcome", tool)
		}
		if s.Describe() == "" {
			t.Errorf("%s: empty description", tool)
		}
	}
	_, err := NewWorkload(&Workload{Workload: kinds.Workload{Name: "x", Tool: "ib_write_bandwidth"}})
	if err == nil || !strings.Contains(err.Error(), "valid: exec, ib_atomic_bw") {
		t.Errorf("unknown tool error = %v, want the list of valid tools", err)
	}
	if _, err := NewWorkload(&Workload{Workload: kinds.Workload{Name: "x", Tool: "exec"}, Host: "a"}); err == nil {
		t.Error("exec without command: no error")
	}
}

func TestPortFor(t *testing.T) {
	tests := []struct {
		w    Workload
		n    int
		want int
	}{
		{Workload{Workload: kinds.Workload{Index: 0}}, 0, 20000},
		{Workload{Workload: kinds.Workload{Index: 3}}, 1, 20031},
		{Workload{Workload: kinds.Workload{Index: 3}}, 12, 20032},
		{Workload{Workload: kinds.Workload{Index: 3}, Port: 5201}, 0, 5201},
	}
	for _, tt := range tests {
		if got := PortFor(&tt.w, tt.n); got != tt.want {
			t.Errorf("PortFor(index %d, port %d, run %d) = %d, want %d", tt.w.Index, tt.w.Port, tt.n, got, tt.want)
		}
	}
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
		if got := PerftestReady(&Workload{Workload: kinds.Workload{Tool: "ib_write_bw", Options: kinds.Options{Args: tt.args}}}, 20000); *got != tt.want {
			t.Errorf("args %q: ready %+v, want %+v", tt.args, *got, tt.want)
		}
	}
}
