package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rlab-dev/rlab/engine/results"
	"github.com/rlab-dev/rlab/kinds/madeup"
)

// The made-up family (kinds/madeup, registered by one line in TestMain) is
// told to rlab only through its descriptor and the View in it: every view
// of a run (the run's headline, `rlab runs`, summary.md's RDMA vs TCP and
// alone vs together, the report's charts, RDMA vs TCP and loss sweep) must
// show it without a line of its own. Each view is a row below, so a view
// that drops the family fails by name.

// madeSample is a sample of workload wl as the run records it: the made-up
// tool's at size, or tcp's (size 0).
func madeSample(wl, tool, metric string, size int64, v float64, loss *float64) results.Sample {
	unit := "Gb/s"
	if metric == madeup.RTT {
		unit = "usec"
	}
	s := results.Sample{Metric: metric, Value: v, Unit: unit, Meta: results.Meta{Workload: wl, Tool: tool, Size: size, Hosts: []string{"server", "client"}}}
	if loss != nil {
		s.Meta.ImpairLoss = loss
		s.Meta.Extra = map[string]string{results.ImpairExtra: "loss " + results.FormatValue(*loss) + "%"}
	}
	return s
}

// madeRun writes a run of the made-up tool beside tcp baselines: "made"
// alone (loss 0), "made_lossy" under 5 % loss, "made_together" in group
// "incast" between the same hosts and devices, "base" (tcp, loss 0) and
// "base_lossy" (tcp, loss 5), and "pipe", the family's own baseline
// (made_pipe, 2 Gb/s at 64 KiB). The made-up figures are what its step
// would measure (madeup.Rate).
func madeRun(t *testing.T) (string, *results.Run) {
	t.Helper()
	dir := t.TempDir()
	start := time.Date(2026, 11, 27, 4, 0, 0, 0, time.UTC)
	zero, five := 0.0, 5.0
	wl := func(name, tool, group string) results.Workload {
		w := results.Workload{Name: name, Tool: tool, Status: results.StatusOK, Hosts: []string{"server", "client"}, Group: group}
		if tool == madeup.Tool {
			w.Devices = []string{"rxe0", "rxe0"}
		}
		return w
	}
	r := &results.Run{Schema: results.SchemaVersion, Lab: "made", ID: "2026-11-27T040000Z", Started: start, Finished: start.Add(time.Minute),
		Status: results.RunOK,
		Workloads: []results.Workload{
			wl("made", madeup.Tool, ""), wl("made_lossy", madeup.Tool, ""), wl("made_together", madeup.Tool, "incast"),
			wl("base", "tcp", ""), wl("base_lossy", "tcp", ""), wl("pipe", madeup.PipeTool, ""),
		},
	}
	for _, size := range []int64{4096, 65536} {
		gbps, rtt := madeup.Rate(size)
		r.Samples = append(r.Samples,
			madeSample("made", madeup.Tool, madeup.Gbps, size, gbps, &zero), madeSample("made", madeup.Tool, madeup.RTT, size, rtt, &zero),
			madeSample("made_lossy", madeup.Tool, madeup.Gbps, size, gbps/4, &five),
			madeSample("made_together", madeup.Tool, madeup.Gbps, size, gbps/2, nil))
	}
	r.Samples = append(r.Samples, madeSample("base", "tcp", "tcp_bw", 0, 1, &zero), madeSample("base_lossy", "tcp", "tcp_bw", 0, 0.5, &five),
		madeSample("pipe", madeup.PipeTool, madeup.PipeGbps, 65536, 2, nil))
	if err := results.WriteRun(dir, r); err != nil {
		t.Fatal(err)
	}
	read, err := results.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	return dir, read
}

// TestMadeUpFamilyShown: a run of the made-up tool beside tcp baselines
// shows the made-up figures in every view.
func TestMadeUpFamilyShown(t *testing.T) {
	dir, run := madeRun(t)
	var head bytes.Buffer
	if err := results.WriteHeadline(&head, run); err != nil {
		t.Fatal(err)
	}
	summary := string(results.Summary(run, dir))
	_, together, _ := strings.Cut(summary, "## Alone vs together\n")
	d, err := Build(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var charts []string
	for _, w := range d.Workloads {
		for _, c := range w.Charts {
			charts = append(charts, w.Name+": "+c.Title)
		}
	}
	rows := func(c *Compare, cols ...int) string {
		if c == nil {
			return "(none)"
		}
		var out []string
		for _, row := range c.Table.Rows {
			var cells []string
			for _, i := range cols {
				cells = append(cells, row[i])
			}
			out = append(out, strings.Join(cells, " "))
		}
		return strings.Join(out, "\n")
	}

	for _, tc := range []struct{ view, text, want string }{
		{"headline cell", head.String(), "made 4 Gb/s, 9 usec at 64 KiB"},
		{"headline's RDMA vs TCP", head.String(), "made 4 Gb/s at 64 KiB = 4.00× TCP"},
		{"rlab runs", strings.Join(results.Headline(run), "; "), "made 4 Gb/s made"},
		{"summary's RDMA vs TCP", summary, "| RDMA | made | " + madeup.Tool + " | 64 KiB messages | 4 Gb/s | 4.00x |"},
		{"summary's alone vs together", together, "| incast | made_together | client → server | 64 KiB | made | 4 Gb/s | 2 Gb/s | 0.50x |"},
		{"report charts", strings.Join(charts, "\n"), "made: " + madeup.ChartTitle},
		{"report RDMA vs TCP", rows(d.Compare, 0, 2, 4), "made RDMA 4 Gb/s"},
		{"report RDMA vs TCP, the made-up baseline", rows(d.Compare, 0, 2, 4), "pipe TCP 2 Gb/s"},
		{"headline cell of the made-up baseline", head.String(), "pipe 2 Gb/s at 64 KiB"},
		{"rlab runs of the made-up baseline", strings.Join(results.Headline(run), "; "), "2 Gb/s pipe"},
		{"report loss sweep", rows(d.LossSweep, 0, 1, 2, 3), "0 RDMA made 4\n5 RDMA made_lossy 1\n0 TCP base 1\n5 TCP base_lossy 0.5"},
	} {
		if !strings.Contains(tc.text, tc.want) {
			t.Errorf("%s: no %q in:\n%s", tc.view, tc.want, tc.text)
		}
	}
	// Each made-up workload gets its chart (the lossy one and the grouped
	// one too), and tcp none.
	want := []string{"made: " + madeup.ChartTitle, "made_lossy: " + madeup.ChartTitle, "made_together: " + madeup.ChartTitle}
	if diff := cmp.Diff(want, charts); diff != "" {
		t.Errorf("report charts (-want +got):\n%s", diff)
	}
}
