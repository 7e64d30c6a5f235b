package results

import (
	"bytes"
	"encoding/xml"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files")

const runsDir = "../../testdata/runs"

// Fixture runs of one nightly lab (see testdata/runs/README.md).
const (
	runBase   = "nightly/2026-11-20T020000Z" // baseline
	runNoise  = "nightly/2026-11-21T020000Z" // everything within 3%
	runDrop   = "nightly/2026-11-22T020000Z" // planted 20% bandwidth drop
	runFailed = "nightly/2026-11-23T020000Z" // write_bw failed, its expect did not hold
)

func readFixture(t testing.TB, rel string) *Run {
	t.Helper()
	r, err := ReadRun(filepath.Join(runsDir, rel))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if d := cmp.Diff(string(want), string(got)); d != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", name, d)
	}
}

func TestWriteReadRun(t *testing.T) {
	dir := t.TempDir()
	rep := 1
	val := "bw_avg_gbps = 0.07"
	in := &Run{
		Lab: "quickstart", ID: "2026-11-25T120000Z", Status: RunFailed,
		Started:  time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC),
		Finished: time.Date(2026, 11, 25, 12, 1, 0, 0, time.UTC), Duration: 60,
		Workloads: []Workload{{Name: "write_bw", Tool: "ib_write_bw", Status: StatusOK, Hosts: []string{"s", "c"},
			Expects: []Expect{{Condition: "result.bw_avg_gbps > 1", Message: "too slow", Held: false, Repeat: &rep, Value: &val}}}},
		Samples: []Sample{{Metric: "bw_avg", Value: 0.07, Unit: "Gb/s", Meta: Meta{Workload: "write_bw", Tool: "ib_write_bw", Size: 65536, Repeat: 1}}},
	}
	if err := WriteRun(dir, in); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{ResultsFile, SummaryFile, JUnitFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("%s not written: %v", f, err)
		}
		if _, err := os.Stat(filepath.Join(dir, f+".tmp")); err == nil {
			t.Errorf("%s.tmp left behind", f)
		}
	}
	out, err := ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	in.Dir, in.Schema = dir, SchemaVersion
	if d := cmp.Diff(in, out); d != "" {
		t.Errorf("round trip (-want +got):\n%s", d)
	}
	// the file itself may be named, too
	if _, err := ReadRun(filepath.Join(dir, ResultsFile)); err != nil {
		t.Errorf("ReadRun(file): %v", err)
	}
}

func TestReadRunErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadRun(dir); err == nil || !strings.Contains(err.Error(), "not a run directory") {
		t.Errorf("empty dir: %v", err)
	}
	os.WriteFile(filepath.Join(dir, ResultsFile), []byte(`{"schema": 99}`), 0o644)
	if _, err := ReadRun(dir); err == nil || !strings.Contains(err.Error(), "upgrade rlab") {
		t.Errorf("newer schema: %v", err)
	}
	os.WriteFile(filepath.Join(dir, ResultsFile), []byte(`{"samples": 3}`), 0o644)
	if _, err := ReadRun(dir); err == nil || !strings.Contains(err.Error(), "decode results.json") {
		t.Errorf("bad json: %v", err)
	}
}

func TestAggregate(t *testing.T) {
	s := func(wl, metric string, size int64, rep int, v float64) Sample {
		return Sample{Metric: metric, Value: v, Unit: "u", Meta: Meta{Workload: wl, Tool: "t", Size: size, Repeat: rep, Hosts: []string{"a", "b"}}}
	}
	got := Aggregate([]Sample{
		s("w2", "lat_typical", 2, 0, 5),
		s("w1", "bw_avg", 65536, 2, 3),
		s("w1", "bw_avg", 65536, 0, 1),
		s("w1", "bw_avg", 65536, 1, 2),
		s("w1", "bw_peak", 4096, 0, 7),
		s("w1", "bw_avg", 4096, 1, 4),
		s("w1", "bw_avg", 4096, 0, 6),
	})
	type brief struct {
		W, M   string
		Size   int64
		N      int
		Median float64
		Min    float64
		Max    float64
		Values []float64
	}
	var b []brief
	for _, a := range got {
		b = append(b, brief{a.Workload, a.Metric, a.Size, a.N, a.Median, a.Min, a.Max, a.Values})
	}
	want := []brief{
		{"w2", "lat_typical", 2, 1, 5, 5, 5, []float64{5}},
		{"w1", "bw_peak", 4096, 1, 7, 7, 7, []float64{7}},
		{"w1", "bw_avg", 4096, 2, 5, 4, 6, []float64{6, 4}},
		{"w1", "bw_avg", 65536, 3, 2, 1, 3, []float64{1, 2, 3}},
	}
	if d := cmp.Diff(want, b); d != "" {
		t.Errorf("Aggregate (-want +got):\n%s", d)
	}
	for _, tc := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{3, 1}, 2}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := Median(tc.in); got != tc.want {
			t.Errorf("Median(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestSummaryGolden(t *testing.T) {
	for _, rel := range []string{runBase, runDrop, runFailed} {
		r := readFixture(t, rel)
		got := Summary(r, "runs/"+rel)
		checkGolden(t, "summary-"+filepath.Base(rel)+".golden.md", got)
		// what a reader looks for
		wants := []string{"# rlab run: nightly", "## write_lat (ib_write_lat)", "lat_p99 (usec)", "`runs/" + rel + "`"}
		if rel != runFailed {
			wants = append(wants, "## RDMA vs TCP")
		}
		if rel == runBase {
			wants = append(wants, "| 64 KiB | 0.076 (0.07486–0.07691) | 0.0755 (")
		}
		for _, want := range wants {
			if !bytes.Contains(got, []byte(want)) {
				t.Errorf("%s: summary lacks %q", rel, want)
			}
		}
	}
	failed := Summary(readFixture(t, runFailed), "")
	for _, want := range []string{"**FAILED**", "**NOT HELD**", "Completion with error", "**0/1 held**"} {
		if !bytes.Contains(failed, []byte(want)) {
			t.Errorf("failed run summary lacks %q", want)
		}
	}
}

// TestSummaryClass checks the compact form of a large lab: one row per
// workload, problems listed once.
func TestSummaryClass(t *testing.T) {
	r := classRun(1)
	r.Workloads = r.Workloads[:20] // 10 pairs
	r.Workloads[4].Status, r.Workloads[4].Error = StatusFailed, "connect to host \"s002\": connection refused"
	r.Workloads[2].Expects[0].Held = false
	r.Workloads[2].Expects[0].Message = "too slow"
	got := Summary(r, "runs/class/bench")
	checkGolden(t, "summary-class.golden.md", got)
	for _, want := range []string{"20 workloads: 19 ok, 1 failed.", "## ib_write_bw (10 workloads)", "| bw_002 | c002 → s002 | **FAILED** |",
		"| bw_001 | c001 → s001 | ok | **0/1 held** | 1 MiB | 1.048 Gb/s | 1.048 Gb/s | 1.048 Mpps |", "## Problems", "connection refused", "too slow"} {
		if !bytes.Contains(got, []byte(want)) {
			t.Errorf("class summary lacks %q", want)
		}
	}
	if bytes.Contains(got, []byte("## bw_000")) {
		t.Error("class summary has per-workload sections")
	}
}

func TestSummaryEscapes(t *testing.T) {
	r := &Run{Lab: "l|ab", Status: RunError, Error: "host `x` <b>unreachable</b>\nsecond line",
		Workloads: []Workload{{Name: "w|1", Tool: "exec", Status: StatusFailed, Error: "exit 1: a|b"}}}
	s := string(Summary(r, "runs/x"))
	if strings.Contains(s, "<b>") || strings.Contains(s, "w|1") || strings.Contains(s, "second line") {
		t.Errorf("summary does not escape user text:\n%s", s)
	}
}

func TestJUnit(t *testing.T) {
	tests := []struct {
		rel                            string
		tests, failures, errors, skips int
	}{
		{runBase, 6, 0, 0, 0}, // 4 workloads + 2 expects
		{runDrop, 6, 0, 0, 0},
		{runFailed, 6, 2, 0, 0}, // write_bw and its expect
	}
	for _, tc := range tests {
		t.Run(tc.rel, func(t *testing.T) {
			b, err := JUnit(readFixture(t, tc.rel))
			if err != nil {
				t.Fatal(err)
			}
			var got JUnitSuites
			if err := xml.Unmarshal(b, &got); err != nil {
				t.Fatalf("junit.xml does not parse: %v\n%s", err, b)
			}
			if len(got.Suites) != 1 {
				t.Fatalf("%d suites", len(got.Suites))
			}
			s := got.Suites[0]
			if s.Tests != tc.tests || s.Failures != tc.failures || s.Errors != tc.errors || s.Skipped != tc.skips ||
				len(s.Cases) != tc.tests || got.Tests != tc.tests || got.Failures != tc.failures {
				t.Errorf("tests/failures/errors/skipped = %d/%d/%d/%d (%d cases), want %d/%d/%d/%d",
					s.Tests, s.Failures, s.Errors, s.Skipped, len(s.Cases), tc.tests, tc.failures, tc.errors, tc.skips)
			}
			n := 0
			for _, c := range s.Cases {
				if c.Failure != nil {
					n++
					if c.Failure.Message == "" {
						t.Errorf("case %q: failure without message", c.Name)
					}
				}
			}
			if n != tc.failures {
				t.Errorf("%d failure elements, want %d", n, tc.failures)
			}
		})
	}
	// an infrastructure error is an <error> case; control characters stay valid XML
	b, err := JUnit(&Run{Lab: "x", Status: RunError, Error: "host \"a\" unreachable\x00 & <gone>",
		Workloads: []Workload{{Name: "w", Status: StatusSkipped}, {Name: "v", Status: StatusTimedOut, Error: "killed after 30s"}}})
	if err != nil {
		t.Fatal(err)
	}
	var got JUnitSuites
	if err := xml.Unmarshal(b, &got); err != nil {
		t.Fatalf("junit.xml does not parse: %v\n%s", err, b)
	}
	if s := got.Suites[0]; s.Errors != 1 || s.Skipped != 1 || s.Failures != 1 || s.Tests != 3 {
		t.Errorf("got %+v", s)
	}
}

func TestListRunsAndHeadline(t *testing.T) {
	runs, errs := ListRuns(runsDir)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	var ids []string
	for _, r := range runs {
		ids = append(ids, r.ID)
	}
	want := []string{"2026-11-20T020000Z", "2026-11-21T020000Z", "2026-11-22T020000Z", "2026-11-23T020000Z"}
	if d := cmp.Diff(want, ids); d != "" {
		t.Errorf("ListRuns (-want +got):\n%s", d)
	}
	full, err := ReadRun(runs[0].Dir)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(Headline(full), runs[0].Glance); d != "" {
		t.Errorf("the listing's headline is not the run's (-run +listed):\n%s", d)
	}
	h := runs[0].Glance
	wantH := []string{"write_bw 0.0755 Gb/s", "write_lat 658.4 usec typ", "tcp_1g 0.42 Gb/s"}
	if d := cmp.Diff(wantH, h); d != "" {
		t.Errorf("Headline (-want +got):\n%s", d)
	}
	if _, errs := ListRuns(filepath.Join(t.TempDir(), "none")); len(errs) == 0 {
		t.Error("ListRuns of a missing dir: no error")
	}
}

func TestFormat(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string
	}{{0, "0"}, {0.075529, "0.07552"}, {658.41, "658.4"}, {14.27, "14.27"}, {22284.16, "22284"}, {22284.96, "22284"}, {0.000144, "0.000144"},
		{0.00001, "0.00001"}, {0.0000761234, "0.00007612"}, {5, "5"}, {0.3, "0.3"}, {24.95, "24.95"}, {24.999, "24.99"}, {-1.23456, "-1.234"}, {100.0001, "100"}} {
		if got := FormatValue(tc.v); got != tc.want {
			t.Errorf("FormatValue(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
	for _, tc := range []struct {
		n    int64
		want string
	}{{2, "2 B"}, {4096, "4 KiB"}, {65536, "64 KiB"}, {1 << 20, "1 MiB"}, {1000, "1000 B"}, {3 << 30, "3 GiB"}} {
		if got := HumanSize(tc.n); got != tc.want {
			t.Errorf("HumanSize(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}
