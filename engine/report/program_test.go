package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/engine/results"
)

// TestProgramMetricsHeadReport: a program workload's own metric blocks,
// recorded in results.json in declaration order, are its result in the
// report, in the table `rlab show` prints from the same file, and in
// summary.md, not its exit code and time.
func TestProgramMetricsHeadReport(t *testing.T) {
	dir := t.TempDir()
	start := time.Date(2026, 11, 27, 4, 0, 0, 0, time.UTC)
	meta := results.Meta{Workload: "write_read", Tool: "program", Hosts: []string{"server", "client"}}
	r := &results.Run{Schema: results.SchemaVersion, Lab: "prog", ID: "2026-11-27T040000Z", Started: start, Finished: start.Add(time.Minute),
		Status: results.RunOK,
		Workloads: []results.Workload{{Name: "write_read", Tool: "program", Status: results.StatusOK, Hosts: []string{"server", "client"},
			Metrics: []string{"write_ok", "mibps"}}},
		Samples: []results.Sample{
			{Metric: "exit_code", Value: 0, Unit: "code", Meta: meta},
			{Metric: "duration", Value: 41.3, Unit: "s", Meta: meta},
			{Metric: "mibps", Value: 24.85, Unit: "MiB/s", Meta: meta},
			{Metric: "write_ok", Value: 1, Unit: "lines", Meta: meta},
		},
	}
	if err := results.WriteRun(dir, r); err != nil {
		t.Fatal(err)
	}
	read, err := results.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	const want = "write_ok 1; mibps 24.85 MiB/s"
	var head bytes.Buffer
	if err := results.WriteHeadline(&head, read); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(head.String(), want) {
		t.Errorf("rlab show's table lacks %q:\n%s", want, head.String())
	}
	if s := string(results.Summary(read, dir)); !strings.Contains(s, "| "+want+" |") {
		t.Errorf("summary.md lacks %q:\n%s", want, s)
	}
	d, err := Build(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Workloads) != 1 || d.Workloads[0].Result != want {
		t.Errorf("report result %q, want %q", d.Workloads[0].Result, want)
	}
}
