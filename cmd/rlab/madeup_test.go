package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/agent/dist"
	"github.com/rlab-dev/rlab/engine/results"
	"github.com/rlab-dev/rlab/kinds/madeup"
)

// The made-up family (kinds/madeup), known to this test build only by the
// one line of TestMain (main_test.go) that registers it: the CLI's
// validate and plan take its tool, and `rlab compare`, `rlab runs` and
// `rlab report` show its measurements (kinds/madeup's run_test.go runs it
// on in-process agents; engine/report's madeup_test.go shows it in every
// view of a run).

const madeLab = `lab "fake" {}
host "a" { address = "192.0.2.1" }
host "b" { address = "192.0.2.2" }
rxe "a" {
  host   = host.a
  netdev = "eth1"
}
rxe "b" {
  host   = host.b
  netdev = "eth1"
}
workload "f" {
  tool   = "made_stream"
  server = rxe.a
  client = rxe.b
  sizes  = [64]
}
`

// madeRunDir writes a finished run of lab "made" under root whose made_stream
// workload "f" measured made_gbps at 64 KiB, with three repeats around
// gbps.
func madeRunDir(t *testing.T, root, id string, gbps float64) string {
	t.Helper()
	dir := filepath.Join(root, "made", id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 11, 27, 4, 0, 0, 0, time.UTC)
	r := &results.Run{Schema: results.SchemaVersion, Lab: "made", ID: id, Status: results.RunOK, Started: start, Finished: start.Add(time.Minute),
		Workloads: []results.Workload{{Name: "f", Tool: madeup.Tool, Status: results.StatusOK, Hosts: []string{"a", "b"}, Devices: []string{"rxe_a", "rxe_b"}}}}
	_, rtt := madeup.Rate(65536)
	for rep, v := range []float64{gbps * 0.99, gbps, gbps * 1.01} {
		meta := results.Meta{Workload: "f", Tool: madeup.Tool, Size: 65536, Repeat: rep, Hosts: []string{"a", "b"}}
		r.Samples = append(r.Samples,
			results.Sample{Metric: madeup.Gbps, Value: v, Unit: "Gb/s", Meta: meta},
			results.Sample{Metric: madeup.RTT, Value: rtt, Unit: "usec", Meta: meta})
	}
	if err := results.WriteRun(dir, r); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestMadeUpToolCLI(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.hcl")
	bad := filepath.Join(dir, "bad.hcl")
	for p, src := range map[string]string{good: madeLab, bad: strings.Replace(madeLab, "sizes  = [64]", "sizes  = [64]\n  qps    = 2", 1)} {
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	if code, out, errText := execute(t, newValidateCmd(), good); code != exitOK {
		t.Errorf("validate: exit %d\n%s\n%s", code, out, errText)
	}
	code, out, errText := execute(t, newValidateCmd(), bad)
	if code == exitOK || !strings.Contains(out+errText, "Argument not valid for "+madeup.Tool) {
		t.Errorf("validate of qps on %s: exit %d\n%s\n%s", madeup.Tool, code, out, errText)
	}
	code, out, errText = execute(t, newPlanCmd(), good)
	if code != exitOK || !strings.Contains(out, madeup.Tool) {
		t.Errorf("plan: exit %d, want the workload's steps\n%s\n%s", code, out, errText)
	}

	// compare: made_gbps is the made-up tool's headline figure, so it is
	// compared by default; a 50 % drop regresses.
	runs := t.TempDir()
	a := madeRunDir(t, runs, "2026-11-27T040000Z", 4)
	b := madeRunDir(t, runs, "2026-11-27T050000Z", 2)
	code, out, errText = execute(t, newCompareCmd(), a, b)
	if code != exitFail || !strings.Contains(out, madeup.Gbps) || !strings.Contains(out, "REGRESSED (higher is better)") {
		t.Errorf("compare of a halved %s: exit %d, want %d and the regression\n%s\n%s", madeup.Gbps, code, exitFail, out, errText)
	}
	code, out, errText = execute(t, newCompareCmd(), "--markdown", a, b)
	if code != exitFail || !strings.Contains(out, "| f | "+madeup.Gbps+" | 64 KiB |") {
		t.Errorf("compare --markdown: exit %d, no row of %s\n%s\n%s", code, madeup.Gbps, out, errText)
	}

	// runs: the glance of each run is the made-up figure.
	code, out, errText = execute(t, newRunsCmd(), runs)
	if code != exitOK || !strings.Contains(out, "2 Gb/s made") || !strings.Contains(out, "4 Gb/s made") {
		t.Errorf("runs: exit %d, want each run's made-up glance\n%s\n%s", code, out, errText)
	}

	// report: the made-up chart.
	code, out, errText = execute(t, newReportCmd(), a)
	if code != exitOK {
		t.Fatalf("report: exit %d\n%s\n%s", code, out, errText)
	}
	html, err := os.ReadFile(filepath.Join(a, "report.html"))
	if err != nil || !strings.Contains(string(html), madeup.ChartTitle) {
		t.Errorf("report.html: %v, no chart %q", err, madeup.ChartTitle)
	}
}

// TestMadeUpToolRun: `rlab run` runs the made-up baseline (made_pipe:
// no RDMA device needed) beside tcp on hosts reached over SSH with the
// real agent, and each view of the run shows it: the run's end table,
// summary.md, `rlab runs`, `rlab report` and `rlab compare` of two such
// runs.
func TestMadeUpToolRun(t *testing.T) {
	if _, err := dist.Binary("linux", "amd64"); err != nil {
		t.Skipf("agent not embedded (make agent): %v", err)
	}
	p := writeLab(t, sshLab(t, 2)+`
workload "pipe" {
  tool   = "made_pipe"
  server = host.h0
  client = host.h1
  sizes  = [4096, 65536]
}
workload "bulk" {
  tool   = "tcp"
  server = host.h0
  client = host.h1
  bytes  = "1MiB"
}
`)
	root := t.TempDir()
	var dirs []string
	for _, id := range []string{"a", "b"} {
		out := filepath.Join(root, "cli", id)
		stdout, stderr, code := rlab(t, "run", "--out", out, p)
		if code != exitOK || !hasOutput(stdout, "row:pipe "+madeup.PipeTool+" h1 → h0 ok pipe 4 Gb/s at 64 KiB") {
			t.Fatalf("run: exit %d, want the made-up headline in the end table\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		dirs = append(dirs, out)
	}
	summary, err := os.ReadFile(filepath.Join(dirs[0], "summary.md"))
	if err != nil || !strings.Contains(string(summary), madeup.PipeGbps) {
		t.Errorf("summary.md: %v, no %s in:\n%s", err, madeup.PipeGbps, summary)
	}
	if out, errText, code := rlab(t, "runs", root); code != exitOK || !strings.Contains(out, "4 Gb/s pipe") {
		t.Errorf("runs: exit %d, want the made-up glance\n%s\n%s", code, out, errText)
	}
	if out, errText, code := rlab(t, "report", dirs[0]); code != exitOK {
		t.Errorf("report: exit %d\n%s\n%s", code, out, errText)
	} else if html, err := os.ReadFile(filepath.Join(dirs[0], "report.html")); err != nil || !strings.Contains(string(html), madeup.PipeGbps) {
		t.Errorf("report.html: %v, no %s", err, madeup.PipeGbps)
	}
	// The made-up tool measures the same each time: compared by default
	// (its headline figure), within its threshold (tcp's real throughput
	// varies between runs: not what is tested here).
	if out, errText, code := rlab(t, "compare", "--markdown", "--metric-threshold", "tcp_bw=99%", dirs[0], dirs[1]); code != exitOK ||
		!strings.Contains(out, "| pipe | "+madeup.PipeGbps+" | 64 KiB | 4 Gb/s | 4 Gb/s | +0.0% |") {
		t.Errorf("compare: exit %d, want %s at 64 KiB compared\n%s\n%s", code, madeup.PipeGbps, out, errText)
	}
}
