package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/rlab-dev/rlab/engine/results"
)

const fixtureRuns = "../../testdata/runs"

func fixtureRun(id string) string { return filepath.Join(fixtureRuns, "nightly", id) }

var (
	runBase   = fixtureRun("2026-11-20T020000Z")
	runNoise  = fixtureRun("2026-11-21T020000Z")
	runDrop   = fixtureRun("2026-11-22T020000Z") // planted 20% bandwidth drop
	runFailed = fixtureRun("2026-11-23T020000Z")
)

// execute runs one command as main does and returns its exit code and output.
func execute(t *testing.T, cmd *cobra.Command, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.Execute()
	code := exitOK
	if err != nil {
		code = exitFail
		var ee *exitError
		if errors.As(err, &ee) {
			code = ee.code
		}
		errb.WriteString(err.Error())
	}
	return code, out.String(), errb.String()
}

func TestCompareCmd(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		code    int
		out     []string // substrings of stdout
		errText string   // substring of the error
	}{
		{name: "within noise passes", args: []string{runBase, runNoise}, code: exitOK, out: []string{"PASS: 0 regressed"}},
		{name: "planted 20% drop fails", args: []string{runBase, runDrop}, code: exitFail,
			out: []string{"REGRESSED (higher is better)", "-20.0%", "FAIL: 4 regressed", "not compared: bw_peak"}, errText: "4 measurement(s) regressed"},
		{name: "every metric", args: []string{"--all-metrics", runBase, runDrop}, code: exitFail,
			out: []string{"FAIL: 6 regressed"}, errText: "6 measurement(s) regressed"},
		{name: "looser limits pass", args: []string{"--threshold", "25%", "--metric-threshold", "bw_avg=21%", runBase, runDrop}, code: exitOK},
		{name: "per-metric limit", args: []string{"--metric-threshold", "bw_peak=30", "--metric-threshold", "msg_rate=30", "--metric-threshold", "bw_avg=30", runBase, runDrop}, code: exitOK},
		{name: "failed workload is missing", args: []string{runBase, runFailed}, code: exitFail, out: []string{"MISSING in B"}},
		{name: "markdown", args: []string{"--markdown", runBase, runDrop}, code: exitFail, out: []string{"## rlab compare: **FAIL**", "| write_bw | bw_avg | 64 KiB |"}},
		{name: "json and markdown", args: []string{"--markdown", "--json", runBase, runDrop}, code: exitFail, errText: "choose one"},
		{name: "bad threshold", args: []string{"--threshold", "lots", runBase, runNoise}, code: exitFail, errText: "--threshold"},
		{name: "unknown metric", args: []string{"--metric-threshold", "speed=5%", runBase, runNoise}, code: exitFail, errText: `unknown metric "speed"`},
		{name: "not a run", args: []string{t.TempDir(), runNoise}, code: exitFail, errText: "not a run directory"},
		{name: "one arg", args: []string{runBase}, code: exitFail, errText: "accepts 2 arg"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errText := execute(t, newCompareCmd(), tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nerr: %s", code, tc.code, out, errText)
			}
			for _, w := range tc.out {
				if !strings.Contains(out, w) {
					t.Errorf("stdout lacks %q:\n%s", w, out)
				}
			}
			if tc.errText != "" && !strings.Contains(errText, tc.errText) {
				t.Errorf("error %q lacks %q", errText, tc.errText)
			}
		})
	}
}

func TestCompareCmdJSONAndJUnit(t *testing.T) {
	junit := filepath.Join(t.TempDir(), "compare.xml")
	code, out, _ := execute(t, newCompareCmd(), "--json", "--junit", junit, runBase, runDrop)
	if code != exitFail {
		t.Errorf("exit %d, want %d", code, exitFail)
	}
	var c results.Comparison
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatalf("--json output does not decode: %v\n%s", err, out)
	}
	if c.Regressed != 4 || len(c.Deltas) == 0 || len(c.Headlines) != 4 {
		t.Errorf("JSON: regressed %d, %d deltas", c.Regressed, len(c.Deltas))
	}
	b, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	var x results.JUnitSuites
	if err := xml.Unmarshal(b, &x); err != nil {
		t.Fatalf("--junit file does not parse: %v", err)
	}
	// A test case per workload, not per measurement: write_bw failed.
	if x.Failures != 1 || x.Tests != 4 {
		t.Errorf("JUnit: %d tests %d failures, want 4 and 1", x.Tests, x.Failures)
	}
}

// noiseRun writes a run directory of one bw_avg measurement with these
// repeats.
func noiseRun(t *testing.T, vals ...float64) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "quickstart", "2026-11-26T100000Z")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	r := &results.Run{Lab: "quickstart", ID: filepath.Base(dir), Status: results.RunOK}
	for i, v := range vals {
		r.Samples = append(r.Samples, results.Sample{Metric: "bw_avg", Value: v, Unit: "Gb/s",
			Meta: results.Meta{Workload: "write_bw", Tool: "ib_write_bw", Size: 1 << 20, Repeat: i}})
	}
	if err := results.WriteRun(dir, r); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestCompareCmdNoise: issue 13's case — B's median 11.8% below A's while
// A's own repeats spanned 18.6-24.1 Gb/s — passes with "~" and a warning
// about too few repeats, in every output; a drop outside the spread fails.
func TestCompareCmdNoise(t *testing.T) {
	a := noiseRun(t, 18.6, 21.1, 24.1)
	noisy := noiseRun(t, 18.3, 18.61, 19.5)
	dropped := noiseRun(t, 16.0, 16.2, 16.5)
	junit := filepath.Join(t.TempDir(), "c.xml")
	code, out, errText := execute(t, newCompareCmd(), "--junit", junit, a, noisy)
	if code != exitOK || !strings.Contains(out, "~ within noise") || !strings.Contains(out, "warning: 1 measurement(s) have 2-3 repeats") ||
		!strings.Contains(out, "21.1 Gb/s ±14%") {
		t.Errorf("noise: exit %d\n%s%s", code, out, errText)
	}
	if b, err := os.ReadFile(junit); err != nil || !strings.Contains(string(b), `name="warning"`) || strings.Contains(string(b), "<failure") {
		t.Errorf("junit of a noisy comparison: %v\n%s", err, b)
	}
	code, out, _ = execute(t, newCompareCmd(), "--json", a, noisy)
	var c results.Comparison
	if err := json.Unmarshal([]byte(out), &c); err != nil || code != exitOK || c.Noise != 1 || c.Deltas[0].Status != results.DeltaNoise ||
		c.Deltas[0].Test != results.TestRange || len(c.Warnings) != 1 {
		t.Errorf("--json: exit %d, %v: %+v", code, err, c)
	}
	code, out, _ = execute(t, newCompareCmd(), a, dropped)
	if code != exitFail || !strings.Contains(out, "REGRESSED") || !strings.Contains(out, "ranges apart n=3") {
		t.Errorf("drop past the spread: exit %d\n%s", code, out)
	}
	// --threshold still decides first: a 25% limit lets the drop pass.
	if code, out, _ = execute(t, newCompareCmd(), "--threshold", "25%", a, dropped); code != exitOK {
		t.Errorf("--threshold 25%%: exit %d\n%s", code, out)
	}
	if code, out, _ = execute(t, newCompareCmd(), "--metric-threshold", "bw_avg=25%", a, dropped); code != exitOK {
		t.Errorf("--metric-threshold bw_avg=25%%: exit %d\n%s", code, out)
	}
}

func TestRunsCmd(t *testing.T) {
	code, out, errText := execute(t, newRunsCmd(), fixtureRuns)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errText)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 5 {
		t.Fatalf("%d lines, want header + 4 runs:\n%s", len(lines), out)
	}
	for i, w := range []string{"HEADLINE", "nightly/2026-11-20T020000Z", "2026-11-21", "2026-11-22", "nightly/2026-11-23T020000Z"} {
		if !strings.Contains(lines[i], w) {
			t.Errorf("line %d %q lacks %q", i, lines[i], w)
		}
	}
	if !strings.Contains(lines[1], "write_bw 0.0755 Gb/s; write_lat 658.4 usec typ; tcp_1g 0.42 Gb/s") || !strings.Contains(lines[1], "4/4") {
		t.Errorf("baseline line lacks its headline: %q", lines[1])
	}
	if !strings.Contains(lines[4], "failed") || !strings.Contains(lines[4], "3/4") {
		t.Errorf("failed run line: %q", lines[4])
	}

	// the last good run, as labs/ci/nightly.sh asks for it
	code, out, _ = execute(t, newRunsCmd(), "--lab", "nightly", "--status", "ok", "--json", fixtureRuns)
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	var list []runListing
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	if len(list) != 3 || list[2].ID != "2026-11-22T020000Z" {
		t.Errorf("ok runs: %+v", list)
	}
	if !strings.Contains(out, `"started": "2026-11-22T02:00:00Z"`) { // RFC 3339, as results.json
		t.Errorf("runs --json: started is not RFC 3339:\n%s", out)
	}

	code, out, _ = execute(t, newRunsCmd(), "--lab", "nightly", "--status", "ok", "--last", fixtureRuns)
	if code != exitOK || strings.TrimSpace(out) != runDrop {
		t.Errorf("--last: exit %d, %q, want %q", code, out, runDrop)
	}
	code, out, _ = execute(t, newRunsCmd(), "--status", "ok", "--last", "--before", runDrop, fixtureRuns)
	if code != exitOK || strings.TrimSpace(out) != runNoise {
		t.Errorf("--last --before: exit %d, %q, want %q", code, out, runNoise)
	}
	code, out, _ = execute(t, newRunsCmd(), "--lab", "other", "--last", fixtureRuns)
	if code != exitOK || out != "" {
		t.Errorf("--last with no match: exit %d, %q", code, out)
	}

	code, out, _ = execute(t, newRunsCmd(), t.TempDir())
	if code != exitOK || !strings.Contains(out, "no runs under") {
		t.Errorf("empty dir: exit %d, %q", code, out)
	}
	code, _, errText = execute(t, newRunsCmd(), filepath.Join(t.TempDir(), "missing"))
	if code != exitFail || !strings.Contains(errText, "missing") {
		t.Errorf("missing dir: exit %d, %q", code, errText)
	}
}

func TestShowCmd(t *testing.T) {
	// no summary.md in the fixture: rendered from results.json, laid out
	// for a terminal; --markdown keeps the Markdown
	code, out, errText := execute(t, newShowCmd(), runBase)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errText)
	}
	for _, w := range []string{"rlab run: nightly: ok\n====", "write_bw (ib_write_bw)\n-----", "RDMA vs TCP", runBase} {
		if !strings.Contains(out, w) {
			t.Errorf("show lacks %q:\n%s", w, out)
		}
	}
	if strings.Contains(out, "|---") || strings.Contains(out, "**") || strings.Contains(out, "`") {
		t.Errorf("show printed Markdown marks to a terminal:\n%s", out)
	}
	code, out, _ = execute(t, newShowCmd(), "--markdown", runBase)
	for _, w := range []string{"# rlab run: nightly: ok", "## write_bw (ib_write_bw)", "## RDMA vs TCP", "`" + runBase + "`"} {
		if code != exitOK || !strings.Contains(out, w) {
			t.Errorf("show --markdown lacks %q:\n%s", w, out)
		}
	}
	// a summary.md present is printed as it is
	dir := t.TempDir()
	r, err := results.ReadRun(runFailed)
	if err != nil {
		t.Fatal(err)
	}
	if err := results.WriteRun(dir, r); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, results.SummaryFile), []byte("# kept as written\n"), 0o644)
	if _, out, _ := execute(t, newShowCmd(), "--markdown", dir); out != "# kept as written\n" {
		t.Errorf("show --markdown printed %q, want summary.md as it is", out)
	}
	if _, out, _ := execute(t, newShowCmd(), dir); out != "kept as written\n===============\n" {
		t.Errorf("show printed %q, want summary.md laid out", out)
	}
	if _, out, _ := execute(t, newShowCmd(), "--render", "--markdown", dir); !strings.Contains(out, "**NOT HELD**") {
		t.Errorf("show --render:\n%s", out)
	}
	code, out, errText = execute(t, newShowCmd(), fixtureRuns)
	if code != exitOK || !strings.Contains(errText, "newest run") || !strings.Contains(out, runFailed) {
		t.Errorf("show of a runs folder: exit %d, stderr %q\n%s", code, errText, out)
	}
	if code, _, errText := execute(t, newShowCmd(), t.TempDir()); code != exitFail || !strings.Contains(errText, "not a run directory") {
		t.Errorf("show of a non-run: exit %d, %q", code, errText)
	}
}

// TestShowReportRunRefs: show and report take the names rlab runs prints
// (LAB/ID), a run id, a lab name, and default to the newest run under runs/.
func TestShowReportRunRefs(t *testing.T) {
	abs, err := filepath.Abs(fixtureRuns)
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	for _, id := range []string{"2026-11-20T020000Z", "2026-11-21T020000Z"} {
		r, err := results.ReadRun(filepath.Join(abs, "nightly", id))
		if err != nil {
			t.Fatal(err)
		}
		d := filepath.Join(work, "runs", "nightly", id)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := results.WriteRun(d, r); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(work)
	// show, report, down and compare complete the runs by those names
	for _, args := range [][]string{{"show", ""}, {"report", ""}, {"down", ""}, {"compare", "nightly", ""}} {
		got := strings.Join(complete(t, args...), " ")
		if !strings.Contains(got, "nightly/2026-11-21T020000Z") || !strings.Contains(got, "nightly/2026-11-20T020000Z") || !strings.Contains(got, "nightly ") {
			t.Errorf("completion of %v: %q", args, got)
		}
	}
	if got := complete(t, "show", "nightly", ""); len(got) != 0 {
		t.Errorf("show completes a second run: %q", got)
	}
	// the ids as rlab runs prints them
	_, listing, _ := execute(t, newRunsCmd())
	if !strings.Contains(listing, "nightly/2026-11-20T020000Z") {
		t.Fatalf("rlab runs:\n%s", listing)
	}
	tests := []struct {
		args    []string
		code    int
		out     string // substring of stdout
		errText string // substring of stderr
	}{
		{[]string{"nightly/2026-11-20T020000Z"}, exitOK, "runs/nightly/2026-11-20T020000Z", ""},
		{[]string{"2026-11-20T020000Z"}, exitOK, "runs/nightly/2026-11-20T020000Z", ""},
		{[]string{}, exitOK, "runs/nightly/2026-11-21T020000Z", "the newest run under runs"},
		{[]string{"nightly"}, exitOK, "runs/nightly/2026-11-21T020000Z", "newest run"},
		{[]string{"nightly/nope"}, exitFail, "", `run "nightly/nope" not found`},
	}
	for _, tc := range tests {
		t.Run("show "+strings.Join(tc.args, " "), func(t *testing.T) {
			code, out, errText := execute(t, newShowCmd(), tc.args...)
			if code != tc.code || !strings.Contains(out, tc.out) || !strings.Contains(errText, tc.errText) {
				t.Errorf("exit %d (want %d), stderr %q (want %q)\n%s", code, tc.code, errText, tc.errText, out)
			}
		})
	}
	if code, out, errText := execute(t, newCompareCmd(), "nightly/2026-11-20T020000Z", "2026-11-21T020000Z"); code != exitOK || !strings.Contains(out, "A: runs/nightly/2026-11-20T020000Z") {
		t.Errorf("compare LAB/ID ID: exit %d %s\n%s", code, errText, out)
	}
	code, out, errText := execute(t, newReportCmd(), "nightly/2026-11-20T020000Z")
	if code != exitOK || !strings.Contains(out, filepath.Join("runs", "nightly", "2026-11-20T020000Z", "report.html")) {
		t.Errorf("report LAB/ID: exit %d %s\n%s", code, errText, out)
	}
	code, out, errText = execute(t, newReportCmd())
	if code != exitOK || !strings.Contains(out, filepath.Join("runs", "nightly", "2026-11-21T020000Z", "report.html")) || !strings.Contains(errText, "newest run") {
		t.Errorf("report without RUN: exit %d %s\n%s", code, errText, out)
	}
}

// TestExitCodes goes through main's run, as a CI job sees rlab.
func TestExitCodes(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"compare", runBase, runNoise}, exitOK},
		{[]string{"compare", runBase, runDrop}, exitFail},
		{[]string{"runs", "--last", fixtureRuns}, exitOK},
		{[]string{"show", "--render", runBase}, exitOK},
		{[]string{"show", filepath.Join(fixtureRuns, "nightly")}, exitOK}, // the newest run
		{[]string{"show", filepath.Join(fixtureRuns, "missing")}, exitFail},
	} {
		if got := run(tc.args); got != tc.code {
			t.Errorf("rlab %s: exit %d, want %d", strings.Join(tc.args, " "), got, tc.code)
		}
	}
}

// TestNightlyScript runs labs/ci/nightly.sh with the real rlab binary on
// copies of the fixture runs: a night within noise passes and moves the
// baseline; a 20% drop fails and keeps it; a failed run fails.
func TestNightlyScript(t *testing.T) {
	bin := os.Getenv("RLAB_BIN")
	if bin == "" {
		t.Skip("RLAB_BIN not set (make test sets it to the built rlab)")
	}
	runs := t.TempDir()
	for _, id := range []string{"2026-11-20T020000Z", "2026-11-21T020000Z", "2026-11-22T020000Z", "2026-11-23T020000Z"} {
		b, err := os.ReadFile(filepath.Join(fixtureRun(id), "results.json"))
		if err != nil {
			t.Fatal(err)
		}
		d := filepath.Join(runs, "nightly", id)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "results.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	lastGood := filepath.Join(runs, "nightly", "last-good")
	script, err := filepath.Abs("../../labs/ci/nightly.sh")
	if err != nil {
		t.Fatal(err)
	}
	night := func(id string) (int, string) {
		out := filepath.Join(t.TempDir(), "ci-out")
		cmd := exec.Command(script)
		cmd.Env = append(os.Environ(), "RLAB="+bin, "RUNS="+runs, "OUT="+out, "LAB_NAME=nightly",
			"RUN_DIR="+filepath.Join(runs, "nightly", id))
		b, err := cmd.CombinedOutput()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"compare-junit.xml", "compare.md", "compare.txt", "run-dir"} {
			if _, err := os.Stat(filepath.Join(out, f)); err != nil {
				t.Errorf("night %s: no %s: %v\n%s", id, f, err, b)
			}
		}
		return code, string(b)
	}
	baseline := func() string {
		b, _ := os.ReadFile(lastGood)
		return filepath.Base(strings.TrimSpace(string(b)))
	}
	// no last-good yet: the newest ok run before this one (the 20th) is the baseline
	if code, out := night("2026-11-21T020000Z"); code != 0 || baseline() != "2026-11-21T020000Z" || !strings.Contains(out, "2026-11-20T020000Z") {
		t.Errorf("night within noise: exit %d, baseline %s\n%s", code, baseline(), out)
	}
	if code, out := night("2026-11-22T020000Z"); code != 1 || baseline() != "2026-11-21T020000Z" || !strings.Contains(out, "REGRESSED") {
		t.Errorf("night with a 20%% drop: exit %d, baseline %s\n%s", code, baseline(), out)
	}
	if code, out := night("2026-11-23T020000Z"); code != 1 || baseline() != "2026-11-21T020000Z" || !strings.Contains(out, "MISSING") {
		t.Errorf("night with a failed workload: exit %d, baseline %s\n%s", code, baseline(), out)
	}
}

// The fixture runs with kernel counters (a loss sweep of the quickstart's
// tools, 254 of its 268 samples counters) and of the demo's lab
// (labs/quickstart.hcl on two VMs).
const (
	lossyRun = "../../testdata/report/lossy"
	demoRun  = "../../testdata/report/run"
)

// TestCompareCmdCounters: compare of two runs shows each workload's result
// and compares its headline figures only, in under 30 lines (issue 25: 244
// rows, mostly 0 → 0 counters); --counters adds the trouble counters (never
// the traffic ones), --all-metrics the tools' other metrics.
func TestCompareCmdCounters(t *testing.T) {
	// The lossy fixture has no complete.json (recorded before it existed).
	for _, run := range []string{demoRun, lossyRun} {
		code, out, errText := execute(t, newCompareCmd(), "--allow-incomplete", run, run)
		if code != exitOK {
			t.Errorf("%s against itself: exit %d: %s\n%s", run, code, errText, out)
		}
		if n := strings.Count(out, "\n"); n >= 30 {
			t.Errorf("%s against itself: %d lines, want under 30:\n%s", run, n, out)
		}
		for _, no := range []string{"duplicate_request", "rx_packets", "bw_peak  "} {
			if strings.Contains(out, no) {
				t.Errorf("%s: compared %q by default:\n%s", run, no, out)
			}
		}
		if !strings.Contains(out, "RESULT IN A") || !strings.Contains(out, "not compared: ") {
			t.Errorf("%s: no results first, or no word of what was left out:\n%s", run, out)
		}
	}
	_, out, _ := execute(t, newCompareCmd(), "--allow-incomplete", lossyRun, lossyRun)
	if !strings.Contains(out, "kernel counters (--counters)") {
		t.Errorf("compare does not say the counters were left out:\n%s", out)
	}
	_, out, _ = execute(t, newCompareCmd(), "--allow-incomplete", "--counters", lossyRun, lossyRun)
	for w, want := range map[string]bool{"duplicate_request": true, "tcpi_total_retrans": true, "rx_packets": false, "tx_bytes": false} {
		if strings.Contains(out, w) != want {
			t.Errorf("--counters: shows %s = %v, want %v:\n%s", w, !want, want, out)
		}
	}
	_, out, _ = execute(t, newCompareCmd(), "--all-metrics", runBase, runDrop)
	if !strings.Contains(out, "bw_peak") || !strings.Contains(out, "lat_p999") || strings.Contains(out, "not compared") {
		t.Errorf("--all-metrics:\n%s", out)
	}
}

// TestShowCounters: show puts each workload's result and trouble counters
// first and folds the full counter tables to a line each; --counters
// prints them, trouble apart from traffic.
func TestShowCounters(t *testing.T) {
	// The fixture lacks complete.json (it predates it): show prints it all
	// and exits 2, as for any run whose files were not all written.
	code, out, errText := execute(t, newShowCmd(), lossyRun)
	if code != exitInfra || !strings.Contains(errText, "no complete.json") {
		t.Fatalf("exit %d: %s", code, errText)
	}
	for w, want := range map[string]bool{"(rlab show --counters)": true, "Trouble counters that moved: ": true,
		"rx_packets": false, "Traffic:": false, "result": true} {
		if strings.Contains(out, w) != want {
			t.Errorf("show: contains %q = %v, want %v:\n%s", w, !want, want, out)
		}
	}
	_, full, _ := execute(t, newShowCmd(), "--counters", lossyRun)
	for _, w := range []string{"Trouble:", "Traffic:", "rx_packets", "duplicate_request"} {
		if !strings.Contains(full, w) {
			t.Errorf("show --counters lacks %q:\n%s", w, full)
		}
	}
	if n, m := strings.Count(out, "\n"), strings.Count(full, "\n"); n >= m {
		t.Errorf("show is %d lines, show --counters %d: the counters were not folded", n, m)
	}
}
