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
	srv := kinds.End{Device: "rxe_eth1", GID: "1"}
	cli := kinds.End{Device: "rxe0", GID: "3"}
	cases := []struct {
		name string
		w    steps.Workload
		size int64
		json string
		emu  bool // an end is emulated: the QP timeout is raised
	}{
		{name: "write_bw", w: steps.Workload{Workload: kinds.Workload{Tool: "ib_write_bw", Options: kinds.Options{Iterations: 5000}}}, size: 65536},
		{name: "write_bw_json", w: steps.Workload{Workload: kinds.Workload{Tool: "ib_write_bw", Options: kinds.Options{Iterations: 1000}}}, size: 4096, json: "/home/u/.cache/rlab/runs/x/wl.bw.client.s4096.r0.json"},
		{name: "read_bw_duration_qps", w: steps.Workload{Workload: kinds.Workload{Tool: "ib_read_bw", Options: kinds.Options{Duration: 1500 * time.Millisecond, Iterations: 9, QPs: 4}}}, size: 1048576},
		{name: "send_lat_uc_args", w: steps.Workload{Workload: kinds.Workload{Tool: "ib_send_lat", Options: kinds.Options{Iterations: 300, Transport: "UC", Args: []string{"-F"}}}}, size: 2},
		{name: "atomic_bw", w: steps.Workload{Workload: kinds.Workload{Tool: "ib_atomic_bw", Options: kinds.Options{Iterations: 100}}}, size: 8},
		{name: "write_lat_default_size", w: steps.Workload{Workload: kinds.Workload{Tool: "ib_write_lat"}}},
		{name: "write_bw_emulated", w: steps.Workload{Workload: kinds.Workload{Tool: "ib_write_bw", Options: kinds.Options{Iterations: 5000, Args: []string{"-F"}}}}, size: 65536, emu: true},
		{name: "read_lat_emulated", w: steps.Workload{Workload: kinds.Workload{Tool: "ib_read_lat"}}, emu: true},
	}
	var b strings.Builder
	for _, c := range cases {
		s, cl := Kind{}.Argv(kinds.ArgvIn{W: &c.w.Workload, Trial: kinds.Trial{Size: c.size}, Port: 20010, Server: srv, Client: cli,
			MTU: "1024", Addr: "10.99.0.1", Emulated: c.emu})
		if c.json != "" { // what the op adds when the client's perftest has --out_json
			cl = beforeAddr(cl, "--out_json", "--out_json_file="+c.json)
		}
		fmt.Fprintf(&b, "# %s\n", c.name)
		fmt.Fprintf(&b, "server: %q\n", s)
		fmt.Fprintf(&b, "client: %q\n", cl)
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

// TestQPTimeoutRaised: perftest gets -u 18 when an end of its workload is an
// emulated guest, known from the booted VM's accelerator or from the host's
// facts (a QEMU guest without KVM), on RC only (UC and UD have no ACKs),
// and never over the lab's own -u.
func TestQPTimeoutRaised(t *testing.T) {
	env := &steps.Env{
		Emulation: map[string]string{"vm": "host vm is a local VM under TCG"},
		Facts: map[string]*proto.Facts{
			"tcg":   {Platform: proto.Platform{Virtualization: "qemu"}},
			"kvm":   {Platform: proto.Platform{Virtualization: "kvm"}},
			"metal": {Platform: proto.Platform{Virtualization: "none"}},
		},
	}
	wl := func(tool, srv, cli, transport string, args ...string) *steps.Workload {
		return &steps.Workload{Workload: kinds.Workload{Tool: tool, Options: kinds.Options{Transport: transport, Args: args}}, ServerHost: srv, ClientHost: cli}
	}
	tests := []struct {
		name    string
		w       *steps.Workload
		want    int
		whyHas  string
		wantArg string // in the client's argv: "-u 18" or ""
	}{
		{"booted under TCG", wl("ib_write_bw", "vm", "metal", ""), 18, "local VM under TCG", "-u 18"},
		{"facts say TCG, client end", wl("ib_send_lat", "metal", "tcg", ""), 18, `virtualization "qemu"`, "-u 18"},
		{"KVM guest", wl("ib_write_bw", "kvm", "kvm", ""), 0, "", ""},
		{"bare metal", wl("ib_read_bw", "metal", "metal", ""), 0, "", ""},
		{"UC has no ACKs", wl("ib_write_bw", "vm", "tcg", "UC"), 0, "", ""},
		{"UD in the lab's args", wl("ib_send_bw", "vm", "tcg", "", "-c", "UD"), 0, "", ""},
		{"RC asked in args over UC", wl("ib_send_bw", "vm", "tcg", "UC", "-c", "RC"), 18, "local VM", "-u 18"},
		{"UC in args, joined", wl("ib_send_bw", "vm", "tcg", "", "-cUC"), 0, "", ""},
		{"UD in args, long", wl("ib_send_bw", "vm", "tcg", "", "--connection=UD"), 0, "", ""},
		{"the lab's own -u", wl("ib_write_bw", "vm", "tcg", "", "-u", "20"), 0, "", ""},
		{"the lab's own --qp-timeout", wl("ib_write_bw", "vm", "tcg", "", "--qp-timeout=16"), 0, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, why := qpTimeout(env, tt.w)
			if got != tt.want || !strings.Contains(why, tt.whyHas) {
				t.Errorf("qpTimeout = %d, %q; want %d and a reason with %q", got, why, tt.want, tt.whyHas)
			}
			_, cli := Kind{}.Argv(kinds.ArgvIn{W: &tt.w.Workload, Port: 20000, Server: kinds.End{Device: "rxe0"}, Client: kinds.End{Device: "rxe0"},
				Addr: "10.0.0.1", Emulated: steps.EmulatedEnd(env, tt.w) != ""})
			argv := strings.Join(cli, " ")
			if has := strings.Contains(argv, " -u 18"); has != (tt.wantArg != "") {
				t.Errorf("argv %q: -u 18 present %v, want %v", argv, has, tt.wantArg != "")
			}
		})
	}
}
