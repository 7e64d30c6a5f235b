package results

import (
	"bytes"
	"encoding/xml"
	"testing"
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
		{name: "planted 20% drop", a: runBase, b: runDrop, failed: true, regr: 6,
			want: map[string]int{"write_bw/bw_avg/regressed": 2, "write_bw/bw_peak/regressed": 2, "write_bw/msg_rate/regressed": 2,
				"write_lat/lat_typical/ok": 1, "tcp_1g/tcp_bw/ok": 1}},
		// the lab's own bw_avg limit (15%) still applies under a looser default
		{name: "drop under a looser default", a: runBase, b: runDrop, failed: true, regr: 2,
			opts: CompareOptions{Threshold: 25}, want: map[string]int{"write_bw/bw_avg/regressed": 2, "write_bw/bw_peak/ok": 2}},
		{name: "drop under looser limits", a: runBase, b: runDrop, failed: false,
			opts: CompareOptions{Threshold: 25, MetricThresholds: map[string]float64{"bw_avg": 21}}},
		{name: "per-metric limit beats the lab's", a: runBase, b: runDrop, failed: true, regr: 4,
			opts: CompareOptions{MetricThresholds: map[string]float64{"bw_avg": 25}},
			want: map[string]int{"write_bw/bw_avg/ok": 2, "write_bw/bw_peak/regressed": 2}},
		{name: "recovery is better", a: runDrop, b: runBase, failed: false,
			want: map[string]int{"write_bw/bw_avg/better": 2}},
		{name: "failed workload is missing", a: runBase, b: runFailed, failed: true, miss: 6},
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
	if !bytes.HasPrefix(buf.Bytes(), []byte("## rlab compare: **FAIL**")) || !bytes.Contains(buf.Bytes(), []byte("| write_bw | bw_peak | 4 KiB | 0.0501 Gb/s | 0.04008 Gb/s | -20.0% | 10% | **REGRESSED (higher is better)** |")) {
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
	if got.Failures != 6 || got.Tests != len(c.Deltas) || got.Suites[0].Failures != 6 {
		t.Errorf("junit: tests %d failures %d, want %d and 6", got.Tests, got.Failures, len(c.Deltas))
	}
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
