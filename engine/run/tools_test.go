package run

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/engine/toolout"
	"github.com/rlab-dev/rlab/kinds"
	"github.com/rlab-dev/rlab/kinds/builtin"
	"github.com/rlab-dev/rlab/kinds/kindstest"
	"github.com/rlab-dev/rlab/steps"
)

// The test binary doubles as a stand-in for perftest and pingpong (this
// machine has no RDMA): symlinked under a tool's name it behaves like the
// tool on the wire that matters here — the server listens on -p and waits
// for one client, the client connects to the address given last — and
// prints that tool's real output recorded on rxe (testdata/toolout).
func TestMain(m *testing.M) {
	switch filepath.Base(os.Args[0]) {
	case "ib_write_bw", "ib_write_lat", "ibv_rc_pingpong":
		os.Exit(fakeTool(filepath.Base(os.Args[0]), os.Args[1:]))
	}
	builtin.Register()
	// Its own block of ports: another test binary may run workloads on
	// this machine's loopback at the same time.
	if err := kindstest.UseFreePorts(); err != nil {
		panic(err)
	}
	kinds.Register(fakeKind{}) // madeup_test.go
	// The key that signs state.json's paths (engine/runstate paths.go) goes
	// to a config folder of the tests', not the user's.
	cfg, err := os.MkdirTemp("", "rlab-config-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_CONFIG_HOME", cfg)
	code := m.Run()
	os.RemoveAll(cfg)
	os.Exit(code)
}

func fakeTool(tool string, args []string) int {
	if len(args) > 0 && (args[0] == "--version" || args[0] == "--help") {
		fmt.Println("Version: 4.5") // the facts' version probe: no server to wait for
		return 0
	}
	port, jsonFile := "", ""
	for i, a := range args {
		if a == "-p" && i+1 < len(args) {
			port = args[i+1]
		}
		if v, ok := strings.CutPrefix(a, "--out_json_file="); ok {
			jsonFile = v
		}
	}
	client := len(args) > 0 && net.ParseIP(args[len(args)-1]) != nil
	mode := "server"
	if client {
		mode = "client"
	}
	if d := os.Getenv("RLAB_FAKE_ARGV_DIR"); d != "" {
		os.WriteFile(filepath.Join(d, tool+"."+mode+"."+port), []byte(strings.Join(args, " ")), 0o644)
	}
	if client {
		c, err := net.Dial("tcp", net.JoinHostPort(args[len(args)-1], port))
		if err != nil {
			fmt.Fprintln(os.Stderr, "Couldn't connect to server:", err)
			return 1
		}
		c.Write([]byte("hi"))
		c.Close()
	} else {
		l, err := net.Listen("tcp", ":"+port)
		if err != nil {
			fmt.Fprintln(os.Stderr, "Couldn't listen:", err)
			return 1
		}
		c, err := l.Accept()
		if err != nil {
			return 1
		}
		io.Copy(io.Discard, c)
	}
	out, err := os.ReadFile(filepath.Join(os.Getenv("RLAB_FAKE_OUTPUTS"), tool+"."+mode+".txt"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	os.Stdout.Write(out)
	if jsonFile != "" {
		j, err := os.ReadFile(filepath.Join(os.Getenv("RLAB_FAKE_OUTPUTS"), tool+".client.composed.json"))
		if err != nil || os.WriteFile(jsonFile, j, 0o644) != nil {
			return 1
		}
	}
	return 0
}

// fakeTools puts the stand-ins first in PATH for the agents this test starts.
func fakeTools(t *testing.T) (argvDir string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	for _, tool := range []string{"ib_write_bw", "ib_write_lat", "ibv_rc_pingpong"} {
		if err := os.Symlink(self, filepath.Join(bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	outputs, err := filepath.Abs("../../testdata/toolout")
	if err != nil {
		t.Fatal(err)
	}
	argvDir = t.TempDir()
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("RLAB_FAKE_OUTPUTS", outputs)
	t.Setenv("RLAB_FAKE_ARGV_DIR", argvDir)
	return argvDir
}

// TestRDMAWorkloadFlow drives the perftest and pingpong kinds through real
// agents: the server is started and waited for by TCP-listen readiness, the
// client gets the server rxe's address, the right device, GID index, smaller
// MTU and a unique port per run, and the real recorded output is parsed into
// samples with units (text report, and --out_json read back over files.read).
func TestRDMAWorkloadFlow(t *testing.T) {
	argvDir := fakeTools(t)
	root := t.TempDir()
	srv := startPipeHost(t, "server", filepath.Join(root, "server"))
	cli := startPipeHost(t, "client", filepath.Join(root, "client"))
	defer srv.Close()
	defer cli.Close()
	tests := []struct {
		name     string
		w        steps.Workload
		json     bool
		metrics  []string
		runs     int
		argvHas  []string
		wantUnit string
	}{
		{name: "ib_write_bw text", w: steps.Workload{Workload: kinds.Workload{Tool: "ib_write_bw", Options: kinds.Options{Sizes: []int64{65536, 4096}, Iterations: 1000, Repeat: 2}}},
			metrics: []string{"bw_peak", "bw_avg", "msg_rate"}, runs: 4, argvHas: []string{"-d rxe0 -x 3", "-m 1024", "--report_gbits", "-n 1000"}, wantUnit: "Gb/s"},
		{name: "ib_write_bw json", w: steps.Workload{Workload: kinds.Workload{Tool: "ib_write_bw", Options: kinds.Options{Sizes: []int64{65536}, Iterations: 1000}}}, json: true,
			metrics: []string{"bw_avg"}, runs: 1, argvHas: []string{"--out_json --out_json_file="}, wantUnit: "Gb/s"},
		{name: "ib_write_lat", w: steps.Workload{Workload: kinds.Workload{Tool: "ib_write_lat", Options: kinds.Options{Sizes: []int64{2}, Iterations: 1000}}},
			metrics: []string{"lat_typical", "lat_p99"}, runs: 1, argvHas: []string{"-s 2"}, wantUnit: "usec"},
		// No sizes: the tool picks its default (2 B) and reports it; every
		// sample of the run, exit code and duration included, carries that
		// size, so an expect is evaluated once, on the measured size.
		{name: "ib_write_lat tool default size", w: steps.Workload{Workload: kinds.Workload{Tool: "ib_write_lat", Options: kinds.Options{Iterations: 1000}}},
			metrics: []string{"lat_typical", "exit_code", "duration"}, runs: 1, wantUnit: "usec"},
		{name: "ibv_rc_pingpong", w: steps.Workload{Workload: kinds.Workload{Tool: "ibv_rc_pingpong", Options: kinds.Options{Sizes: []int64{4096}, Iterations: 300}}},
			metrics: []string{"pp_bw", "pp_lat"}, runs: 1, argvHas: []string{"-g 3", "-m 1024"}, wantUnit: "Mbit/s"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := &steps.Env{
				Hosts: map[string]steps.Host{"server": srv, "client": cli},
				Facts: map[string]*proto.Facts{"client": {PerftestJSON: tt.json, WorkDir: cli.hello.WorkDir}},
				Parse: toolout.ParseOutput,
			}
			env.SetDevice("rxe.s", &proto.DeviceInfo{Name: "rxe_eth1", GIDIndex: 1, IPv4: "127.0.0.1", ActiveMTU: 4096})
			env.SetDevice("rxe.c", &proto.DeviceInfo{Name: "rxe0", GIDIndex: 3, IPv4: "127.0.0.1", ActiveMTU: 1024})
			w := tt.w
			w.Name, w.Slug, w.Index = "w"+fmt.Sprint(i), "w"+fmt.Sprint(i), i
			w.ServerHost, w.ClientHost, w.ServerDevice, w.ClientDevice = "server", "client", "rxe.s", "rxe.c"
			planRDMA(&w, "rxe_eth1", "rxe0")
			st, err := steps.NewWorkload(&w)
			if err != nil {
				t.Fatal(err)
			}
			if err := st.Apply(context.Background(), env); err != nil {
				t.Fatalf("apply: %v", err)
			}
			o := st.(steps.Outcomer).Outcome()
			if o.Status != steps.StatusOK || len(o.Runs) != tt.runs {
				t.Fatalf("status %q, %d runs, want ok and %d", o.Status, len(o.Runs), tt.runs)
			}
			got := map[string]int{}
			for _, s := range o.Samples {
				got[s.Metric]++
				if s.Unit == "" || s.Meta.Workload != w.Name || s.Meta.MTU != 1024 || s.Meta.GIDIndex == nil || *s.Meta.GIDIndex != 3 ||
					!slices.Equal(s.Meta.Devices, []string{"rxe_eth1", "rxe0"}) || !slices.Equal(s.Meta.Hosts, []string{"server", "client"}) {
					t.Errorf("sample %+v: metadata incomplete", s)
				}
				if m := tt.metrics[0]; s.Metric == m && s.Unit != tt.wantUnit {
					t.Errorf("%s unit %q, want %q", m, s.Unit, tt.wantUnit)
				}
			}
			sizes := map[int64]bool{}
			for _, s := range o.Samples {
				sizes[s.Meta.Size] = true
			}
			if len(tt.w.Sizes) == 0 && (len(sizes) != 1 || sizes[0]) {
				t.Errorf("tool default size: samples carry sizes %v, want the one size the tool reported", sizes)
			}
			for _, m := range tt.metrics {
				if got[m] != tt.runs {
					t.Errorf("metric %s: %d samples, want one per run (%d); have %v", m, got[m], tt.runs, got)
				}
			}
			if src := o.Runs[0].Source; (src == "json") != tt.json {
				t.Errorf("parsed from %q", src)
			}
			// One port per run, the same on both sides.
			ports := map[string]bool{}
			for n := range tt.runs {
				port := fmt.Sprint(kinds.PortFor(w.Index, 0, n))
				ports[port] = true
				sa, err1 := os.ReadFile(filepath.Join(argvDir, w.Tool+".server."+port))
				ca, err2 := os.ReadFile(filepath.Join(argvDir, w.Tool+".client."+port))
				if err1 != nil || err2 != nil {
					t.Fatalf("run %d: no server/client on port %s: %v %v", n, port, err1, err2)
				}
				if strings.Contains(string(sa), "127.0.0.1") || !strings.HasSuffix(string(ca), " 127.0.0.1") {
					t.Errorf("server argv %q / client argv %q: only the client names the server address, last", sa, ca)
				}
				for _, want := range tt.argvHas {
					if !strings.Contains(string(ca), want) {
						t.Errorf("client argv %q lacks %q", ca, want)
					}
				}
			}
			if len(ports) != tt.runs {
				t.Errorf("ports reused between runs: %v", ports)
			}
		})
	}
}

// planRDMA gives w the trials engine/plan resolves for an RDMA workload
// between devices srv and cli: the devices by name, the rest placeholders
// the op fills.
func planRDMA(w *steps.Workload, srv, cli string) {
	in := kinds.ArgvIn{W: &w.Workload, Server: kinds.End{Device: srv, GID: kinds.ServerGID}, Client: kinds.End{Device: cli, GID: kinds.ClientGID},
		MTU: kinds.PathMTU, Addr: kinds.ServerAddr}
	w.Trials, _ = kinds.PlanTrials(in, 0, w.Sizes)
}

// TestRDMAWorkloadClientFails checks a failing client is reported with its
// host, command, exit code and stderr, and the waiting server is stopped.
func TestRDMAWorkloadClientFails(t *testing.T) {
	fakeTools(t)
	root := t.TempDir()
	srv := startPipeHost(t, "server", filepath.Join(root, "server"))
	cli := startPipeHost(t, "client", filepath.Join(root, "client"))
	defer srv.Close()
	defer cli.Close()
	env := &steps.Env{Hosts: map[string]steps.Host{"server": srv, "client": cli}, Parse: toolout.ParseOutput}
	env.SetDevice("s", &proto.DeviceInfo{Name: "rxe0", IPv4: "127.0.0.1", ActiveMTU: 1024})
	env.SetDevice("c", &proto.DeviceInfo{Name: "rxe0", IPv4: "127.0.0.1", ActiveMTU: 1024})
	w := &steps.Workload{Workload: kinds.Workload{Name: "bad", Slug: "bad", Index: 40, Tool: "ib_write_bw"}, ServerHost: "server", ClientHost: "client", ServerDevice: "s", ClientDevice: "c"}
	// No recorded outputs: both sides connect, then exit 1 naming the
	// missing file on stderr.
	t.Setenv("RLAB_FAKE_OUTPUTS", t.TempDir())
	planRDMA(w, "rxe0", "rxe0")
	st, _ := steps.NewWorkload(w)
	err := st.Apply(context.Background(), env)
	if err == nil || !strings.Contains(err.Error(), `ib_write_bw server on host "server"`) && !strings.Contains(err.Error(), `ib_write_bw client on host "client"`) {
		t.Fatalf("err = %v, want the failing side named", err)
	}
	if !strings.Contains(err.Error(), "exit 1") || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("err = %v, want exit code and stderr", err)
	}
	if o := st.(steps.Outcomer).Outcome(); o.Status != steps.StatusFailed {
		t.Errorf("status %q", o.Status)
	}
}
