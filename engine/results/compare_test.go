package results

import (
	"bytes"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func statuses(c *Comparison) map[string]int {
	m := map[string]int{}
	for _, d := range c.Deltas {
		m[d.Workload+"/"+d.Metric+"/"+d.Status]++
	}
	return m
}

func TestCompareFixtures(t *testing.T) {
	tests := []struct {
		name   string
		a, b   string
		opts   CompareOptions
		failed bool
		want   map[string]int // workload/metric/status → count, checked when given
		regr   int
		miss   int
	}{
		{name: "within noise", a: runBase, b: runNoise, failed: false},
		{name: "same run", a: runBase, b: runBase, failed: false},
		// by default the headline figures only (bw_avg and msg_rate, not bw_peak)
		{name: "planted 20% drop", a: runBase, b: runDrop, failed: true, regr: 4,
			want: map[string]int{"write_bw/bw_avg/regressed": 2, "write_bw/bw_peak/regressed": 0, "write_bw/msg_rate/regressed": 2,
				"write_lat/lat_typical/ok": 1, "write_lat/lat_min/ok": 0, "tcp_1g/tcp_bw/ok": 1}},
		{name: "planted 20% drop, every metric", a: runBase, b: runDrop, failed: true, regr: 6, opts: CompareOptions{AllMetrics: true},
			want: map[string]int{"write_bw/bw_avg/regressed": 2, "write_bw/bw_peak/regressed": 2, "write_bw/msg_rate/regressed": 2,
				"write_lat/lat_typical/ok": 1, "write_lat/lat_min/ok": 1, "tcp_1g/tcp_bw/ok": 1}},
		// the lab's own bw_avg limit (15%) still applies under a looser default
		{name: "drop under a looser default", a: runBase, b: runDrop, failed: true, regr: 2,
			opts: CompareOptions{Threshold: 25, AllMetrics: true}, want: map[string]int{"write_bw/bw_avg/regressed": 2, "write_bw/bw_peak/ok": 2}},
		{name: "drop under looser limits", a: runBase, b: runDrop, failed: false,
			opts: CompareOptions{Threshold: 25, MetricThresholds: map[string]float64{"bw_avg": 21}}},
		{name: "per-metric limit beats the lab's", a: runBase, b: runDrop, failed: true, regr: 4,
			opts: CompareOptions{MetricThresholds: map[string]float64{"bw_avg": 25}, AllMetrics: true},
			want: map[string]int{"write_bw/bw_avg/ok": 2, "write_bw/bw_peak/regressed": 2}},
		{name: "recovery is better", a: runDrop, b: runBase, failed: false,
			want: map[string]int{"write_bw/bw_avg/better": 2}},
		{name: "failed workload is missing", a: runBase, b: runFailed, failed: true, miss: 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Compare(readFixture(t, tc.a), readFixture(t, tc.b), tc.opts)
			if c.Failed() != tc.failed {
				var buf bytes.Buffer
				c.WriteText(&buf)
				t.Errorf("Failed() = %v, want %v\n%s", c.Failed(), tc.failed, buf.String())
			}
			if tc.regr != 0 && c.Regressed != tc.regr {
				t.Errorf("regressed %d, want %d", c.Regressed, tc.regr)
			}
			if tc.miss != 0 && c.Missing != tc.miss {
				t.Errorf("missing %d, want %d", c.Missing, tc.miss)
			}
			got := statuses(c)
			for k, n := range tc.want {
				if got[k] != n {
					t.Errorf("%s: %d, want %d (all: %v)", k, got[k], n, got)
				}
			}
			for _, d := range c.Deltas {
				if d.Metric == "exit_code" || d.Metric == "duration" {
					t.Errorf("%s compared without an explicit threshold", d.Metric)
				}
			}
		})
	}
}

// TestCompareDirection checks each direction of each kind of metric.
func TestCompareDirection(t *testing.T) {
	run := func(metric string, v float64) *Run {
		m, _ := MetricByName(metric)
		return &Run{Samples: []Sample{{Metric: metric, Value: v, Unit: m.Unit, Meta: Meta{Workload: "w", Size: 2}}}}
	}
	tests := []struct {
		metric string
		a, b   float64
		want   string
	}{
		{"bw_avg", 100, 80, DeltaRegressed},
		{"bw_avg", 100, 91, DeltaSame},
		{"bw_avg", 100, 120, DeltaBetter},
		{"lat_p99", 100, 120, DeltaRegressed},
		{"lat_p99", 100, 109, DeltaSame},
		{"lat_p99", 100, 80, DeltaBetter},
		{"msg_rate", 0, 1, DeltaNoBase},
		{"msg_rate", 0, 0, DeltaSame},
		{"pp_lat", 10, 12, DeltaRegressed},
		{"rping_count", 10, 5, DeltaRegressed},
	}
	for _, tc := range tests {
		c := Compare(run(tc.metric, tc.a), run(tc.metric, tc.b), CompareOptions{Threshold: 10})
		if len(c.Deltas) != 1 || c.Deltas[0].Status != tc.want {
			t.Errorf("%s %v → %v: %+v, want %s", tc.metric, tc.a, tc.b, c.Deltas, tc.want)
		}
	}
	// runs of different labs are compared, with a note
	var buf bytes.Buffer
	other := run("bw_avg", 1)
	other.Lab = "other"
	if err := Compare(run("bw_avg", 1), other, CompareOptions{}).WriteText(&buf); err != nil || !bytes.Contains(buf.Bytes(), []byte("different labs")) {
		t.Errorf("no note on different labs: %v\n%s", err, buf.String())
	}
	// a measurement only B has is reported, not failed
	c := Compare(&Run{}, run("bw_avg", 1), CompareOptions{})
	if c.Failed() || c.New != 1 {
		t.Errorf("new-only comparison: %+v", c)
	}
	// exit_code is compared when asked for
	c = Compare(run("exit_code", 1), run("exit_code", 2), CompareOptions{MetricThresholds: map[string]float64{"exit_code": 0}})
	if !c.Failed() {
		t.Errorf("exit_code 1 → 2 with limit 0 passed: %+v", c.Deltas)
	}
}

func TestCompareOutputs(t *testing.T) {
	c := Compare(readFixture(t, runBase), readFixture(t, runDrop), CompareOptions{})
	var buf bytes.Buffer
	if err := c.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "compare-drop.golden.txt", buf.Bytes())
	buf.Reset()
	if err := c.WriteMarkdown(&buf); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "compare-drop.golden.md", buf.Bytes())
	if !bytes.HasPrefix(buf.Bytes(), []byte("## rlab compare: **FAIL**")) || !bytes.Contains(buf.Bytes(), []byte("| write_bw | bw_avg | 4 KiB | 0.0403 Gb/s ±1% | 0.03224 Gb/s ±2% | -20.0% | 15% | ranges apart n=3 | **REGRESSED (higher is better)** |")) {
		t.Errorf("markdown:\n%s", buf.String())
	}
	b, err := c.JUnit()
	if err != nil {
		t.Fatal(err)
	}
	var got JUnitSuites
	if err := xml.Unmarshal(b, &got); err != nil {
		t.Fatalf("compare junit does not parse: %v", err)
	}
	// One test case per workload (not per measurement, nor per counter);
	// write_bw failed, naming its four regressed measurements.
	var names []string
	for _, tc := range got.Suites[0].Cases {
		names = append(names, tc.Name)
		if tc.Name == "write_bw" && (tc.Failure == nil || strings.Count(tc.Failure.Text, "regressed") != 4) {
			t.Errorf("junit: write_bw's failure %+v, want its 4 regressions", tc.Failure)
		}
	}
	if diff := cmp.Diff([]string{"write_bw", "write_lat", "tcp_1g", "probe"}, names); diff != "" {
		t.Errorf("junit test cases (-want +got):\n%s", diff)
	}
	if got.Failures != 1 || got.Tests != 4 {
		t.Errorf("junit: tests %d failures %d, want 4 and 1", got.Tests, got.Failures)
	}
}

// repeatsRun is a run of one bw_avg measurement with these repeats.
func repeatsRun(lab string, vals ...float64) *Run {
	r := &Run{Lab: lab}
	for i, v := range vals {
		r.Samples = append(r.Samples, Sample{Metric: "bw_avg", Value: v, Unit: "Gb/s", Meta: Meta{Workload: "write_bw", Size: 65536, Repeat: i}})
	}
	return r
}

// TestCompareNoise: a change past the threshold counts only when it stands
// out of the runs' own variation (issue 13: -11.8% flagged REGRESSED while
// A's own repeats spanned 18.6-24.1 Gb/s).
func TestCompareNoise(t *testing.T) {
	tests := []struct {
		name   string
		a, b   []float64
		status string
		test   string
		change string // the CHANGE cell
		warn   string // a substring of one warning, "" for none
	}{
		{name: "issue 13: -11.8% within A's own spread", a: []float64{18.6, 21.1, 24.1}, b: []float64{18.3, 18.61, 19.5},
			status: DeltaNoise, test: TestRange, change: "~", warn: "2-3 repeats"},
		{name: "3 repeats, ranges apart", a: []float64{20.6, 21.1, 21.4}, b: []float64{18.3, 18.61, 19.5},
			status: DeltaRegressed, test: TestRange, change: "-11.8%", warn: "2-3 repeats"},
		{name: "5 repeats, significant drop", a: []float64{20, 20.5, 21, 21.5, 22}, b: []float64{17, 17.5, 18, 18.2, 18.4},
			status: DeltaRegressed, test: TestUTest, change: "-14.3%"},
		{name: "5 repeats, not significant", a: []float64{15, 20, 21, 25, 30}, b: []float64{14, 16, 18, 19, 28},
			status: DeltaNoise, test: TestUTest, change: "~"},
		{name: "5 repeats, significant gain", a: []float64{17, 17.5, 18, 18.2, 18.4}, b: []float64{20, 20.5, 21, 21.5, 22},
			status: DeltaBetter, test: TestUTest, change: "+16.7%"},
		{name: "5 repeats, within threshold", a: []float64{20, 20.5, 21, 21.5, 22}, b: []float64{19, 19.5, 20, 20.5, 21},
			status: DeltaSame, test: TestUTest, change: "~"},
		{name: "one repeat: threshold alone", a: []float64{21.1}, b: []float64{18.61},
			status: DeltaRegressed, test: TestNone, change: "-11.8%", warn: "one repeat per run"},
		{name: "one against three: ranges", a: []float64{21.1}, b: []float64{18.3, 21.5, 18.6},
			status: DeltaNoise, test: TestRange, change: "~", warn: "2-3 repeats"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Compare(repeatsRun("l", tc.a...), repeatsRun("l", tc.b...), CompareOptions{Threshold: 10})
			if len(c.Deltas) != 1 {
				t.Fatalf("deltas: %+v", c.Deltas)
			}
			d := c.Deltas[0]
			if d.Status != tc.status || d.Test != tc.test || d.changeCell() != tc.change {
				t.Errorf("status %s test %s change %s, want %s %s %s (%+v)", d.Status, d.Test, d.changeCell(), tc.status, tc.test, tc.change, d)
			}
			if want := tc.status == DeltaRegressed; c.Failed() != want {
				t.Errorf("Failed() = %v, want %v", c.Failed(), want)
			}
			joined := strings.Join(c.Warnings, "\n")
			if (tc.warn == "") != (joined == "") || !strings.Contains(joined, tc.warn) {
				t.Errorf("warnings %q, want one with %q", c.Warnings, tc.warn)
			}
		})
	}
}

// TestCompareNoiseGolden renders the case (text and Markdown).
func TestCompareNoiseGolden(t *testing.T) {
	a := repeatsRun("quickstart", 18.6, 21.1, 24.1)
	b := repeatsRun("quickstart", 18.3, 18.61, 19.5)
	a.ID, b.ID = "2026-11-25T100000Z", "2026-11-26T100000Z"
	c := Compare(a, b, CompareOptions{})
	var buf bytes.Buffer
	if err := c.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "compare-noise.golden.txt", buf.Bytes())
	buf.Reset()
	if err := c.WriteMarkdown(&buf); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "compare-noise.golden.md", buf.Bytes())
}

// writeFactsRun writes a run directory with results.json and one host's
// facts.json.
func writeFactsRun(t *testing.T, lab, kernel, perftest string, hosts ...string) *Run {
	t.Helper()
	return writePlatformRun(t, lab, kernel, perftest, "c5.large", "44.0", hosts...)
}

// writePlatformRun is writeFactsRun with the platform's machine type (DMI
// product) and rdma-core version.
func writePlatformRun(t *testing.T, lab, kernel, perftest, product, rdmaCore string, hosts ...string) *Run {
	t.Helper()
	dir := t.TempDir()
	r := repeatsRun(lab, 20, 21, 22)
	r.ID = "x"
	if err := WriteRun(dir, r); err != nil {
		t.Fatal(err)
	}
	for _, h := range hosts {
		if err := os.MkdirAll(filepath.Join(dir, "hosts", h), 0o755); err != nil {
			t.Fatal(err)
		}
		facts := `{"hostname":"vm-` + h + `","kernel":"` + kernel + `","os":"Debian GNU/Linux 12 (bookworm)","tools":{"ib_write_bw":{"path":"/usr/bin/ib_write_bw","version":"` + perftest + `"},"tcpdump":{"path":"/usr/bin/tcpdump"}},` +
			`"platform":{"virtualization":"amazon","vendor":"Amazon EC2","product":"` + product + `","rdma_core":"` + rdmaCore + `"}}`
		if err := os.WriteFile(filepath.Join(dir, "hosts", h, "facts.json"), []byte(facts), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestCompareWarnsOnDifferentRuns: runs that differ in lab, hosts, kernel
// or tool versions are compared with a warning naming the difference.
func TestCompareWarnsOnDifferentRuns(t *testing.T) {
	base := writeFactsRun(t, "quickstart", "6.1.0-18-amd64", "6.10", "client", "server")
	tests := []struct {
		name string
		b    *Run
		want []string
	}{
		{"same", writeFactsRun(t, "quickstart", "6.1.0-18-amd64", "6.10", "client", "server"), nil},
		{"other lab", writeFactsRun(t, "nightly", "6.1.0-18-amd64", "6.10", "client", "server"),
			[]string{`the runs are of different labs ("quickstart" and "nightly"); only same-named workloads match`}},
		{"kernel and perftest", writeFactsRun(t, "quickstart", "6.1.0-25-amd64", "6.15", "client", "server"),
			[]string{`host "client": kernel 6.1.0-18-amd64 in A, 6.1.0-25-amd64 in B`, `host "client": ib_write_bw 6.10 in A, 6.15 in B`,
				`host "server": kernel 6.1.0-18-amd64 in A, 6.1.0-25-amd64 in B`, `host "server": ib_write_bw 6.10 in A, 6.15 in B`}},
		{"machine type and rdma-core", writePlatformRun(t, "quickstart", "6.1.0-18-amd64", "6.10", "c5.xlarge", "50.0", "client", "server"),
			[]string{`host "client": machine type c5.large in A, c5.xlarge in B`, `host "client": rdma-core 44.0 in A, 50.0 in B`,
				`host "server": machine type c5.large in A, c5.xlarge in B`, `host "server": rdma-core 44.0 in A, 50.0 in B`}},
		{"platform unknown in B", writePlatformRun(t, "quickstart", "6.1.0-18-amd64", "6.10", "", "", "client", "server"), nil},
		{"other hosts", writeFactsRun(t, "quickstart", "6.1.0-18-amd64", "6.10", "client", "server2"),
			[]string{"the runs have different hosts: A client, server, B client, server2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Compare(base, tc.b, CompareOptions{})
			var got []string
			for _, w := range c.Warnings {
				if !strings.Contains(w, "repeats") {
					got = append(got, w)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
			var buf bytes.Buffer
			if err := c.WriteText(&buf); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(buf.String(), "warning: "+w+"\n") {
					t.Errorf("text lacks warning %q:\n%s", w, buf.String())
				}
			}
		})
	}
}

// TestComparePlatformGolden: the text of a comparison between runs on
// different machine types, kernels and rdma-core releases.
func TestComparePlatformGolden(t *testing.T) {
	a := writePlatformRun(t, "quickstart", "6.1.0-18-amd64", "6.10", "c5.large", "44.0", "server")
	b := writePlatformRun(t, "quickstart", "6.8.0-1015-aws", "6.10", "c6i.large", "50.0", "server")
	var buf bytes.Buffer
	if err := Compare(a, b, CompareOptions{}).WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	out := strings.NewReplacer(a.Dir, "runs/quickstart/A", b.Dir, "runs/quickstart/B").Replace(buf.String())
	checkGolden(t, "compare-platform.golden.txt", []byte(out))
}

func TestParsePercent(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float64
		bad  bool
	}{{"10%", 10, false}, {"10", 10, false}, {" 2.5% ", 2.5, false}, {"0", 0, false}, {"-1%", 0, true}, {"ten", 0, true}, {"NaN", 0, true}, {"", 0, true}} {
		got, err := ParsePercent(tc.in)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("ParsePercent(%q) = %v, %v", tc.in, got, err)
		}
	}
}

func FuzzParsePercent(f *testing.F) {
	for _, s := range []string{"10%", "5", "2.5 %", "-3", "1e400"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParsePercent(s)
		if err == nil && (v < 0 || v != v) {
			t.Fatalf("ParsePercent(%q) = %v", s, v)
		}
	})
}

// TestCompareCounters: a trouble counter (retransmissions, sequence errors)
// that goes from none to some is a regression, whatever the ratio; a
// traffic counter (packets) follows the workload's amount and is compared
// only with a threshold of its own; counters of two hosts stay apart.
func TestCompareCounters(t *testing.T) {
	ctr := func(metric, host string, v float64) Sample {
		return Sample{Metric: metric, Value: v, Unit: CounterUnit(metric), Meta: Meta{Workload: "write_bw", Tool: "ib_write_bw",
			Hosts: []string{host}, Devices: []string{"rxe_eth1"}, Extra: map[string]string{CounterExtra: "hw_counters"}}}
	}
	a := &Run{Samples: []Sample{ctr("rcvd_seq_err", "client", 0), ctr("rcvd_seq_err", "server", 0), ctr("sent_pkts", "client", 1000), ctr("duplicate_request", "server", 4)}}
	b := &Run{Samples: []Sample{ctr("rcvd_seq_err", "client", 3), ctr("rcvd_seq_err", "server", 0), ctr("sent_pkts", "client", 5000), ctr("duplicate_request", "server", 4)}}
	if c := Compare(a, b, CompareOptions{}); len(c.Deltas) != 0 || c.Failed() {
		t.Errorf("counters compared without --counters: %+v", c.Deltas)
	}
	c := Compare(a, b, CompareOptions{Counters: true})
	got := map[string]string{}
	for _, d := range c.Deltas {
		got[d.Metric+"@"+d.Hosts] = d.Status
	}
	want := map[string]string{"rcvd_seq_err@client": DeltaRegressed, "rcvd_seq_err@server": DeltaSame, "duplicate_request@server": DeltaSame}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
	if !c.Failed() {
		t.Error("sequence errors appeared and the comparison passed")
	}
	var out strings.Builder
	if err := c.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "from 0") {
		t.Errorf("the table does not say the counter went from 0:\n%s", out.String())
	}
	c = Compare(a, b, CompareOptions{Counters: true, MetricThresholds: map[string]float64{"sent_pkts": 50}})
	for _, d := range c.Deltas {
		if d.Metric == "sent_pkts" && d.Status != DeltaRegressed {
			t.Errorf("sent_pkts with a threshold: %s, want regressed (5x the packets)", d.Status)
		}
	}
}

// TestCompareOwnMetrics: a lab's own metric (a metric block) is compared by
// default in the direction its block gives (better = "higher" or
// "lower", carried in the samples' metadata); one without a direction is
// folded like the other non-headline metrics.
func TestCompareOwnMetrics(t *testing.T) {
	run := func(metric, better string, v float64) *Run {
		s := Sample{Metric: metric, Value: v, Unit: "MiB/s", Meta: Meta{Workload: "w", Tool: "program"}}
		if better != "" {
			s.Meta.Extra = map[string]string{BetterExtra: better}
		}
		return &Run{Samples: []Sample{s}}
	}
	for _, tc := range []struct {
		better string
		a, b   float64
		want   string
	}{
		{"higher", 100, 80, DeltaRegressed},
		{"higher", 100, 120, DeltaBetter},
		{"lower", 100, 80, DeltaBetter},
		{"lower", 100, 120, DeltaRegressed},
	} {
		c := Compare(run("mibps", tc.better, tc.a), run("mibps", tc.better, tc.b), CompareOptions{Threshold: 10})
		if len(c.Deltas) != 1 || c.Deltas[0].Status != tc.want {
			t.Errorf("better %s %v → %v: %+v, want %s", tc.better, tc.a, tc.b, c.Deltas, tc.want)
		}
	}
	if c := Compare(run("pongs", "", 1), run("pongs", "", 2), CompareOptions{Threshold: 10}); len(c.Deltas) != 0 || len(c.Folded) != 1 {
		t.Errorf("no direction: deltas %+v folded %v", c.Deltas, c.Folded)
	}
}

// TestCompareToolVersionTerminalSafe: a tool's version is what a host's
// facts answer said, copied into every sample (Meta.ToolVersion), and
// `rlab compare` of two runs without their hosts' facts (results.json
// files copied apart) printed it in a warning as it came: a host's escape
// sequences reached the terminal (SECURITY 154). It is quoted now, and
// every warning line is made terminal-safe.
func TestCompareToolVersionTerminalSafe(t *testing.T) {
	run := func(version string) *Run {
		return &Run{Lab: "l", Status: "ok", Dir: t.TempDir(), Samples: []Sample{
			{Metric: "bw_avg", Value: 1, Unit: "Gb/s", Meta: Meta{Workload: "w", Tool: "ib_write_bw", ToolVersion: version}},
		}}
	}
	c := Compare(run("6.10\x1b]0;owned\x07\x1b[2J"), run("6.15"), CompareOptions{})
	var buf bytes.Buffer
	if err := c.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "tool version") {
		t.Fatalf("no tool version warning:\n%s", buf.String())
	}
	if strings.ContainsAny(buf.String(), "\x1b\x07") {
		t.Errorf("the host's escape sequences were printed raw:\n%q", buf.String())
	}
}
