package toolout

import (
	"encoding/json"
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/rlab-dev/rlab/engine/results"
	"github.com/rlab-dev/rlab/engine/toolout/tooltest"
)

var update = flag.Bool("update", false, "rewrite the golden files")

const fixtures = "../../testdata/toolout"

// fixtureCase derives how to parse a fixture from its name, so a new
// recorded output needs no Go code: the tool is the longest known tool name
// the base name starts with (after an optional "mtu9000-"-style prefix), .json
// files are --out_json content (in Gb/s unless the name says pre2024 or mibs,
// which were recorded without --report_gbits), and NAME.err next to NAME.txt is the
// same process's stderr.
func fixtureCase(t testing.TB, name string) (tool string, opts Options) {
	base := filepath.Base(name)
	if i := strings.Index(base, "-"); i >= 0 && !strings.HasPrefix(base, "ib") && !strings.HasPrefix(base, "rping") {
		base = base[i+1:]
	}
	for _, k := range []string{
		"ib_write_bw", "ib_read_bw", "ib_send_bw", "ib_atomic_bw",
		"ib_write_lat", "ib_read_lat", "ib_send_lat", "ib_atomic_lat",
		"ibv_rc_pingpong", "ibv_uc_pingpong", "ibv_ud_pingpong", "ibv_srq_pingpong", "rping",
	} {
		if strings.HasPrefix(base, k) && len(k) > len(tool) {
			tool = k
		}
	}
	if tool == "" {
		tool = "ib_write_bw" // garbage given to the most common parser
	}
	opts = Options{Workload: "w", Hosts: []string{"server", "client"}}
	if strings.HasSuffix(name, ".json") {
		opts.JSON = true
		// pre2024 files and "mibs" ones were written without --report_gbits:
		// their bandwidth is in MiB/s.
		opts.ReportGbits = !strings.Contains(name, "pre2024") && !strings.Contains(name, "mibs")
	}
	if strings.HasSuffix(name, ".txt") {
		if b, err := os.ReadFile(filepath.Join(fixtures, strings.TrimSuffix(name, ".txt")+".err")); err == nil {
			opts.Stderr = b
		}
	}
	return tool, opts
}

// fixtureNames lists the fixtures: testdata/toolout/* and the outputs the VM
// test bed records into testdata/toolout/recorded/ (engine/vm's E2E test with
// RLAB_VM_RECORD), as paths relative to testdata/toolout.
func fixtureNames(t testing.TB) []string {
	var names []string
	for _, sub := range []string{"", "recorded", "world"} {
		ents, err := os.ReadDir(filepath.Join(fixtures, sub))
		if err != nil {
			if sub != "" && os.IsNotExist(err) {
				continue
			}
			t.Fatal(err)
		}
		for _, e := range ents {
			n := e.Name()
			if !e.IsDir() && (strings.HasSuffix(n, ".txt") || strings.HasSuffix(n, ".json")) && n != "versions.txt" {
				names = append(names, filepath.Join(sub, n))
			}
		}
	}
	sort.Strings(names)
	if len(names) < 20 {
		t.Fatalf("only %d fixtures in %s", len(names), fixtures)
	}
	return names
}

type golden struct {
	Tool    string           `json:"tool"`
	Error   string           `json:"error,omitempty"`
	Info    Info             `json:"info"`
	Samples []results.Sample `json:"samples"`
}

// TestGolden parses every fixture (the real outputs recorded on rxe and the
// composed ones) and compares with testdata/toolout/golden; -update rewrites.
func TestGolden(t *testing.T) {
	for _, name := range fixtureNames(t) {
		t.Run(name, func(t *testing.T) {
			in, err := os.ReadFile(filepath.Join(fixtures, name))
			if err != nil {
				t.Fatal(err)
			}
			tool, opts := fixtureCase(t, name)
			samples, info, err := Parse(tool, in, opts)
			got := golden{Tool: tool, Info: info, Samples: samples}
			if err != nil {
				got.Error = err.Error()
			}
			tooltest.CheckSamples(t, samples)
			b, _ := json.MarshalIndent(got, "", "  ")
			b = append(b, '\n')
			gp := filepath.Join(fixtures, "golden", name+".golden.json")
			if *update {
				if err := os.MkdirAll(filepath.Dir(gp), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(gp, b, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(gp)
			if err != nil {
				t.Fatalf("%v (run go test -update)", err)
			}
			if d := cmp.Diff(string(want), string(b)); d != "" {
				t.Errorf("golden mismatch (-want +got):\n%s", d)
			}
		})
	}
}

func value(ss []results.Sample, metric string, size int64) (float64, bool) {
	for _, s := range ss {
		if s.Metric == metric && s.Meta.Size == size {
			return s.Value, true
		}
	}
	return 0, false
}

// TestFigures pins the numbers a user reads off the real outputs, so a
// golden file regenerated from a broken parser cannot go unnoticed.
func TestFigures(t *testing.T) {
	type fig struct {
		metric string
		size   int64
		want   float64
	}
	tests := []struct {
		file    string
		figs    []fig
		n       int // samples
		mtu     int
		gid     int
		rdmacm  bool
		unit    string
		warning string
	}{
		{file: "ib_write_bw.client.txt", n: 3, mtu: 1024, gid: 1, unit: "Gb/sec",
			figs: []fig{{"bw_avg", 65536, 0.075529}, {"bw_peak", 65536, 0.076004}, {"msg_rate", 65536, 0.000144}}},
		{file: "ib_read_bw.client.txt", n: 3, mtu: 1024, gid: 1, unit: "Gb/sec", warning: "Device not recognized",
			figs: []fig{{"bw_avg", 65536, 0.11}, {"bw_peak", 65536, 0.12}, {"msg_rate", 65536, 0.000207}}},
		{file: "ib_atomic_bw.client.txt", n: 3, mtu: 1024, gid: 1, unit: "Gb/sec",
			figs: []fig{{"bw_avg", 8, 0.000589}, {"msg_rate", 8, 0.009203}}},
		// MB/sec (MiB/s) converted to Gb/s: 4.80 * 2^20 * 8 / 1e9
		{file: "ib_write_bw_small.client.txt", n: 3, mtu: 1024, gid: 1, unit: "MB/sec",
			figs: []fig{{"bw_avg", 4096, 4.80 * 1048576 * 8 / 1e9}, {"bw_peak", 4096, 5.97 * 1048576 * 8 / 1e9}}},
		// the passive side of send: perftest prints a peak of 0, not measured
		{file: "ib_send_bw.server.txt", n: 2, mtu: 1024, gid: 1, unit: "Gb/sec", warning: "BW peak reported as 0",
			figs: []fig{{"bw_avg", 65536, 0.057398}, {"msg_rate", 65536, 0.000109}}},
		{file: "ib_write_bw_rdma_cm.server.txt", n: 3, mtu: 1024, gid: 1, rdmacm: true, unit: "Gb/sec",
			figs: []fig{{"bw_avg", 65536, 0.058014}}},
		{file: "mtu9000-ib_write_bw.client.txt", n: 3, mtu: 4096, gid: 1, unit: "Gb/sec",
			figs: []fig{{"bw_avg", 65536, 0.19}}},
		{file: "ib_write_lat.client.txt", n: 7, mtu: 1024, gid: 1,
			figs: []fig{{"lat_min", 2, 387.21}, {"lat_max", 2, 6638.19}, {"lat_typical", 2, 658.41}, {"lat_avg", 2, 965.48},
				{"lat_stdev", 2, 744.28}, {"lat_p99", 2, 3817.43}, {"lat_p999", 2, 6638.19}}},
		{file: "ib_write_lat.udp-lossy.client.txt", n: 7, mtu: 1024, gid: 1, warning: "Correlation coefficient r^2: 0.894008 < 0.9",
			figs: []fig{{"lat_typical", 2, 12611.51}, {"lat_p999", 2, 88080.47}}},
		{file: "ib_write_bw_sweep.composed.txt", n: 69, mtu: 1024, gid: 1, unit: "Gb/sec",
			figs: []fig{{"bw_avg", 2, 0.000144}, {"bw_avg", 8388608, 0.19}}},
		{file: "ib_write_bw.client.composed.json", n: 3, mtu: 1024, gid: 1, unit: "Gb/sec",
			figs: []fig{{"bw_avg", 65536, 0.075529}}},
		{file: "ib_write_bw.client.pre2024.composed.json", n: 3, mtu: 1024, gid: 1, unit: "MB/sec", warning: "not valid JSON",
			figs: []fig{{"bw_avg", 4096, 4.80 * 1048576 * 8 / 1e9}}},
		{file: "ib_write_lat.client.composed.json", n: 7, mtu: 1024, gid: 1,
			figs: []fig{{"lat_p99", 2, 3817.43}, {"lat_p999", 2, 6638.19}}},
		{file: "ibv_rc_pingpong.client.txt", n: 2,
			figs: []fig{{"pp_bw", 4096, 14.27}, {"pp_lat", 4096, 4593.58}}},
		{file: "rping.client.txt", n: 1, figs: []fig{{"rping_count", 0, 5}}},
		// recorded by the VM test bed (testdata/toolout/recorded)
		{file: "recorded/ib_read_lat.client.txt", n: 7, mtu: 1024, gid: 1,
			figs: []fig{{"lat_typical", 2, 412.53}, {"lat_p99", 2, 4456.34}}},
		{file: "recorded/ib_atomic_lat.client.txt", n: 7, mtu: 1024, gid: 1,
			figs: []fig{{"lat_typical", 8, 342.20}, {"lat_p999", 8, 236714.57}}},
		{file: "recorded/ibv_uc_pingpong.client.txt", n: 2, figs: []fig{{"pp_bw", 4096, 11.62}, {"pp_lat", 4096, 5639.52}}},
		{file: "recorded/ibv_ud_pingpong.client.txt", n: 2, figs: []fig{{"pp_bw", 1024, 10.96}, {"pp_lat", 1024, 1494.93}}},
		{file: "recorded/ibv_srq_pingpong.client.txt", n: 2, figs: []fig{{"pp_bw", 4096, 41.96}, {"pp_lat", 4096, 1562.00}}},
		{file: "rping.server.txt", n: 1, figs: []fig{{"rping_count", 0, 5}}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			in, err := os.ReadFile(filepath.Join(fixtures, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			tool, opts := fixtureCase(t, tc.file)
			ss, info, err := Parse(tool, in, opts)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if len(ss) != tc.n {
				t.Errorf("%d samples, want %d", len(ss), tc.n)
			}
			for _, f := range tc.figs {
				got, ok := value(ss, f.metric, f.size)
				if !ok {
					t.Errorf("no %s sample at size %d", f.metric, f.size)
					continue
				}
				if math.Abs(got-f.want) > 1e-9*math.Max(1, f.want) {
					t.Errorf("%s at %d = %v, want %v", f.metric, f.size, got, f.want)
				}
			}
			if info.MTU != tc.mtu {
				t.Errorf("MTU %d, want %d", info.MTU, tc.mtu)
			}
			if tc.gid != 0 && (info.GIDIndex == nil || *info.GIDIndex != tc.gid) {
				t.Errorf("GID index %v, want %d", info.GIDIndex, tc.gid)
			}
			if info.RDMACM != tc.rdmacm {
				t.Errorf("rdma_cm %v, want %v", info.RDMACM, tc.rdmacm)
			}
			if info.BWUnit != tc.unit {
				t.Errorf("BW unit %q, want %q", info.BWUnit, tc.unit)
			}
			if tc.warning != "" && !strings.Contains(strings.Join(info.Warnings, "\n"), tc.warning) {
				t.Errorf("warnings %q lack %q", info.Warnings, tc.warning)
			}
			for _, s := range ss {
				if s.Meta.Workload != "w" || s.Meta.Tool != tool || len(s.Meta.Hosts) != 2 {
					t.Errorf("metadata not filled: %+v", s.Meta)
				}
			}
		})
	}
}

func TestGIDs(t *testing.T) {
	for _, tc := range []struct{ file, local, remote string }{
		{"ib_write_bw.client.txt", "00:00:00:00:00:00:00:00:00:00:255:255:10:99:00:02", "00:00:00:00:00:00:00:00:00:00:255:255:10:99:00:01"},
		{"ib_write_bw_rdma_cm.server.txt", "00:00:00:00:00:00:00:00:00:00:255:255:10:99:00:01", "00:00:00:00:00:00:00:00:00:00:255:255:10:99:00:02"},
		{"ibv_rc_pingpong.client.txt", "::ffff:10.99.0.2", "::ffff:10.99.0.1"},
	} {
		in, err := os.ReadFile(filepath.Join(fixtures, tc.file))
		if err != nil {
			t.Fatal(err)
		}
		tool, opts := fixtureCase(t, tc.file)
		_, info, err := Parse(tool, in, opts)
		if err != nil {
			t.Fatal(err)
		}
		if info.LocalGID != tc.local || info.RemoteGID != tc.remote {
			t.Errorf("%s: GIDs %q, %q; want %q, %q", tc.file, info.LocalGID, info.RemoteGID, tc.local, tc.remote)
		}
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		tool string
		in   string
		opts Options
		want string // in the error text
		is   error
	}{
		{tool: "ib_write_bw", in: "bash: ib_write_bw: command not found\n", want: "command not found"},
		{tool: "ib_write_bw", in: "", want: "no result table"},
		{tool: "ib_write_lat", in: " #bytes #iterations    t_min[usec]\n", want: "has no rows"},
		{tool: "ib_write_lat", in: " #bytes #iterations    t_min[cycles]    t_max[cycles]\n 2 1000 1 2\n", want: "not usec"},
		{tool: "ib_write_bw", in: " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n 65536 1000 0.1\n", want: "has 3 columns"},
		{tool: "ib_write_bw", in: " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n 65536 1000 x 0.1 0.2\n", want: "not a number"},
		{tool: "ib_write_bw", in: " #bytes     #iterations    BW peak[kB/sec]    BW average[kB/sec]   MsgRate[Mpps]\n", want: "bandwidth unit"},
		{tool: "ib_write_bw", in: `{"test_info": {`, opts: Options{JSON: true}, is: ErrUnusableJSON},
		{tool: "ib_write_bw", in: `{"test_info": {}}`, opts: Options{JSON: true}, is: ErrUnusableJSON},
		{tool: "ib_write_bw", in: `{"results": {"MsgSize": 1, "BW_average": "fast"}}`, opts: Options{JSON: true}, is: ErrUnusableJSON},
		{tool: "ib_write_bw", in: `[1, 2]`, opts: Options{JSON: true}, is: ErrUnusableJSON},
		{tool: "ibv_rc_pingpong", in: "Failed to modify QP to RTR\n", want: "Failed to modify QP to RTR"},
		{tool: "rping", in: "", opts: Options{Stderr: []byte("rdma_resolve_addr: No such device\n")}, want: "No such device"},
		{tool: "rping", in: "", want: "run with -v"},
		{tool: "tcp", in: "x", is: ErrNoParser},
		// the passive side of read/atomic latency prints no table (recorded)
		{tool: "ib_read_lat", in: mustRead("recorded/ib_read_lat.server.txt"), want: "no result table"},
		{tool: "exec", in: "x", opts: Options{Workload: "probe"}, want: `exec (workload "probe")`},
	}
	for _, tc := range tests {
		t.Run(tc.tool+"/"+tc.want, func(t *testing.T) {
			ss, _, err := Parse(tc.tool, []byte(tc.in), tc.opts)
			if err == nil {
				t.Fatalf("no error; samples %+v", ss)
			}
			if ss != nil {
				t.Errorf("samples with an error: %+v", ss)
			}
			if tc.want != "" && !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q lacks %q", err, tc.want)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %q is not %v", err, tc.is)
			}
			if !strings.Contains(err.Error(), tc.tool) {
				t.Errorf("error %q does not name the tool", err)
			}
		})
	}
}

func mustRead(name string) string {
	b, err := os.ReadFile(filepath.Join(fixtures, name))
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestSupported(t *testing.T) {
	for _, m := range []string{"ib_write_bw", "ib_atomic_lat", "ibv_ud_pingpong", "rping"} {
		if !Supported(m) {
			t.Errorf("Supported(%q) = false", m)
		}
	}
	for _, m := range []string{"tcp", "exec", "", "ib_write"} {
		if Supported(m) {
			t.Errorf("Supported(%q) = true", m)
		}
	}
}

func TestParseOutput(t *testing.T) {
	in, err := os.ReadFile(filepath.Join(fixtures, "ib_write_bw.client.composed.json"))
	if err != nil {
		t.Fatal(err)
	}
	ss, note, err := ParseOutput("ib_write_bw", in, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	if !note.Empty() {
		t.Errorf("parse note of a clean JSON report: %+v, want empty", note)
	}
	if v, ok := value(ss, "bw_avg", 65536); !ok || v != 0.075529 {
		t.Errorf("bw_avg = %v, %v; want 0.075529 Gb/s as written (--report_gbits)", v, ok)
	}
	if _, _, err := ParseOutput("ib_write_bw", []byte("{"), nil, true); !errors.Is(err, ErrUnusableJSON) {
		t.Errorf("broken JSON: %v, want ErrUnusableJSON", err)
	}

	// The warnings are split: lines the tool printed (stdout or stderr)
	// are unread, what the parser says itself is a note.
	out, err := os.ReadFile(filepath.Join(fixtures, "ib_send_bw.server.txt"))
	if err != nil {
		t.Fatal(err)
	}
	out = append([]byte(" Device not recognized to implement inline feature. Disabling it\n"), out...)
	_, note, err = ParseOutput("ib_send_bw", out, []byte("a warning on stderr\n\n"), false)
	if err != nil {
		t.Fatal(err)
	}
	want := results.ParseNote{
		Unread: []string{"Device not recognized to implement inline feature. Disabling it", "a warning on stderr"},
		Notes:  []string{"BW peak reported as 0 (not measured on this side or in this mode): no bw_peak sample"},
	}
	if d := cmp.Diff(want, note); d != "" {
		t.Errorf("note (-want +got):\n%s", d)
	}
	bidir, err := os.ReadFile(filepath.Join(fixtures, "world", "ib_send_bw.mlx5-bidir-q8-sweep.client.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if _, note, _ := ParseOutput("ib_send_bw", bidir, nil, false); !note.Bidirectional {
		t.Errorf("note of a -b report: %+v, want bidirectional", note)
	}
}

// TestTableVariants covers table shapes perftest prints with other flags:
// -D on a latency test (average and transactions per second only), raw QoS
// (an #sl column), --cpu_util (an extra column), per-port columns.
func TestTableVariants(t *testing.T) {
	tests := []struct {
		name, tool, table string
		want              map[string]float64
	}{
		{"latency with -D", "ib_send_lat",
			" #bytes        #iterations       t_avg[usec]    tps average\n 2             1234              3.21           311526.73\n",
			map[string]float64{"lat_avg": 3.21}},
		{"raw QoS", "ib_write_bw",
			" #bytes    #sl      #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n 65536    3           1000           0.08            0.07                  0.000134\n",
			map[string]float64{"bw_peak": 0.08, "bw_avg": 0.07, "msg_rate": 0.000134}},
		{"cpu util", "ib_write_bw",
			" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]    CPU_Util[%]\n 65536      1000           0.076004            0.075529            0.000144\t    12.50\n",
			map[string]float64{"bw_peak": 0.076004, "bw_avg": 0.075529, "msg_rate": 0.000144}},
		{"per port", "ib_write_bw",
			" #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]   BW Port1[MB/sec]   MsgRate Port1[Mpps]   BW Port2[MB/sec]   MsgRate Port2[Mpps]\n 65536      1000           10.00              8.00\t\t   0.000122        4.00            0.000061              4.00            0.000061\n",
			map[string]float64{"bw_peak": 10 * mibToGbit, "bw_avg": 8 * mibToGbit, "msg_rate": 0.000122}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ss, _, err := Parse(tc.tool, []byte(tc.table), Options{})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]float64{}
			for _, s := range ss {
				got[s.Metric] = s.Value
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

// TestToolMetrics checks that every parser emits only metrics that
// results.ToolMetrics announces for its tool (what expect conditions are
// checked against at load time).
func TestToolMetrics(t *testing.T) {
	for _, name := range fixtureNames(t) {
		in, err := os.ReadFile(filepath.Join(fixtures, name))
		if err != nil {
			t.Fatal(err)
		}
		tool, opts := fixtureCase(t, name)
		ss, _, err := Parse(tool, in, opts)
		if err != nil {
			continue
		}
		allowed := map[string]bool{}
		for _, m := range results.ToolMetrics(tool) {
			allowed[m] = true
		}
		for _, s := range ss {
			if !allowed[s.Metric] {
				t.Errorf("%s: %s emits %s, not in results.ToolMetrics(%q)", name, tool, s.Metric, tool)
			}
		}
	}
}

func BenchmarkParsePerftestSweep(b *testing.B) {
	in, err := os.ReadFile(filepath.Join(fixtures, "ib_write_bw_sweep.composed.txt"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		if _, _, err := Parse("ib_write_bw", in, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParsePerftestJSONPre2024(b *testing.B) {
	in, err := os.ReadFile(filepath.Join(fixtures, "ib_write_bw.client.pre2024.composed.json"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		if _, _, err := Parse("ib_write_bw", in, Options{JSON: true}); err != nil {
			b.Fatal(err)
		}
	}
}

// mibToGbit converts perftest's MB/sec (2^20 bytes per second) to Gb/s, as
// kinds/perftest does: written out here so the expected figures do not come
// from the parser under test.
const mibToGbit = 1048576 * 8 / 1e9

// TestManyRowsRefused: a host's output of rows up to the agent protocol's
// line (8 MiB) is refused at MaxRows (SECURITY 127: 215,000 samples and
// 508 MiB allocated for one trial before), within a bounded allocation,
// and a real sweep still parses.
func TestManyRowsRefused(t *testing.T) {
	b, err := os.ReadFile("../../testdata/toolout/world/ib_write_bw.perftest25-header.client.txt")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, " 65536      403504")
	if i < 0 {
		t.Fatal("fixture changed: its row is gone")
	}
	head, row := s[:i], " 65536      403504           0.00               42.31                0.080701\n"
	for _, tc := range []struct {
		name string
		out  string
		ok   bool
	}{
		{"8 MiB of rows", head + strings.Repeat(row, (8<<20-len(head))/len(row)), false},
		{"one past the bound", head + strings.Repeat(row, MaxRows+1), false},
		{"a sweep", head + strings.Repeat(row, 23), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m0, m1 runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&m0)
			ss, _, err := ParseOutput("ib_write_bw", []byte(tc.out), nil, false)
			runtime.ReadMemStats(&m1)
			if tc.ok {
				if err != nil || len(ss) == 0 {
					t.Fatalf("a real sweep: %d samples, %v", len(ss), err)
				}
				return
			}
			if !errors.Is(err, ErrTooManyRows) || len(ss) != 0 {
				t.Errorf("%d samples, err %v: want none and ErrTooManyRows", len(ss), err)
			}
			if a := m1.TotalAlloc - m0.TotalAlloc; a > 64<<20 {
				t.Errorf("allocated %d MiB parsing it, want it stopped at the bound", a>>20)
			}
		})
	}
}

// TestInfoValuesBounded: what a tool states about its run in its header
// (its connection type, device) is copied into every sample of the trial,
// so a header value of megabytes made each sample that large in
// results.json (SECURITY 137: 23 rows, 69 samples, 8 MiB each). Each is
// cut to MaxInfoValue bytes; an honest header is kept as printed.
func TestInfoValuesBounded(t *testing.T) {
	b, err := os.ReadFile("../../testdata/toolout/world/ib_write_bw.perftest25-header.client.txt")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, " 65536      403504")
	if i < 0 || !strings.Contains(s, "Connection type : RC") {
		t.Fatal("fixture changed: its row or connection type is gone")
	}
	head, row := s[:i], " 65536      403504           0.00               42.31                0.080701\n"
	sweep := strings.Repeat(row, 23)
	for _, tc := range []struct {
		name, out, want string
	}{
		{"honest", head + sweep, "RC"},
		{"connection type of 4 MiB", strings.Replace(head, "Connection type : RC", "Connection type : "+strings.Repeat("é", 2<<20), 1) + sweep, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ss, info, err := Parse("ib_write_bw", []byte(tc.out), Options{ReportGbits: true})
			if err != nil || len(ss) == 0 {
				t.Fatalf("%d samples, %v", len(ss), err)
			}
			if tc.want != "" && info.Connection != tc.want {
				t.Errorf("connection %q, want %q", info.Connection, tc.want)
			}
			if len(info.Connection) > MaxInfoValue+len("…") || !utf8.ValidString(info.Connection) {
				t.Errorf("connection of %d bytes (valid UTF-8 %v), want at most %d", len(info.Connection), utf8.ValidString(info.Connection), MaxInfoValue)
			}
			j, _ := json.Marshal(ss)
			if len(j) > 256<<10 {
				t.Errorf("%d samples are %d bytes of JSON: the header was copied into each", len(ss), len(j))
			}
		})
	}
}

// TestParseErrorBounded: a tool's output is the host's (up to a reply line,
// 8 MiB), and a parser that fails quotes the lines that say why; the error
// is the trial's, kept for the run (its event, results.json, junit.xml,
// summary.md, report.html, the terminal's line) like an agent's error
// (SECURITY 136). Lines of megabytes made each failed trial's error
// megabytes. Whatever the parser, Parse's error is at most MaxErrorText
// bytes, and still says what failed and wraps what it wrapped.
func TestParseErrorBounded(t *testing.T) {
	b, err := os.ReadFile("../../testdata/toolout/world/ib_write_bw.perftest25-header.client.txt")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, " 65536      403504")
	if i < 0 {
		t.Fatal("fixture changed: its row is gone")
	}
	head, row := s[:i], " 65536      403504           0.00               42.31                0.080701\n"
	mib := strings.Repeat("x", 1<<20)
	for _, tc := range []struct {
		name, tool, out, stderr string
		want                    string // in the error
		partial                 bool
	}{
		{"perftest: error lines of a megabyte", "ib_write_bw", strings.Repeat("error "+mib+"\n", 3), "", "no result table", false},
		{"perftest: unread lines of a megabyte", "ib_write_bw", strings.Repeat("unread "+mib+"\n", 4), "", "no result table", false},
		{"perftest: a failure of megabytes after rows", "ib_write_bw", head + row + strings.Repeat("Completion with error "+mib+"\n", 3), "", "the tool failed after 1 result rows", true},
		{"pingpong: error lines of a megabyte", "ibv_rc_pingpong", strings.Repeat("failed "+mib+"\n", 3), "", "summary lines", false},
		{"rping: error lines of a megabyte", "rping", "", strings.Repeat("rdma_connect error "+mib+"\n", 3), "rping failed", false},
		{"perftest: an honest failure", "ib_write_bw", "Couldn't connect to 10.0.0.2:18515\n", "", "Couldn't connect to 10.0.0.2:18515", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Parse(tc.tool, []byte(tc.out), Options{ReportGbits: true, Stderr: []byte(tc.stderr)})
			if err == nil {
				t.Fatal("parsed, want an error")
			}
			msg := err.Error()
			if len(msg) > MaxErrorText+200 || !utf8.ValidString(msg) {
				t.Errorf("an error of %d bytes (valid UTF-8 %v), want at most %d", len(msg), utf8.ValidString(msg), MaxErrorText)
			}
			if !strings.Contains(msg, tc.want) || !strings.Contains(msg, tc.tool) {
				t.Errorf("error %.300q does not say %q of %s", msg, tc.want, tc.tool)
			}
			var p *PartialError
			if errors.As(err, &p) != tc.partial {
				t.Errorf("errors.As PartialError %v, want %v", !tc.partial, tc.partial)
			}
		})
	}
}
