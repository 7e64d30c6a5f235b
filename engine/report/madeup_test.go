package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rlab-dev/rlab/engine/results"
	"github.com/rlab-dev/rlab/kinds"
)

// A made-up RDMA tool family, told to rlab only through its descriptor
// entry and the View in it: every view (the run's headline, `rlab runs`,
// summary.md, the report's charts and RDMA vs TCP) must show it without a
// line of its own.
const (
	madeTool   = "made_stream"
	madeFamily = kinds.Family("made_stream")
)

// madeKind is the made-up family: the one value a family registers.
type madeKind struct{}

func (madeKind) Desc() kinds.Desc {
	return kinds.Desc{Name: "made",
		Metrics: []kinds.Metric{
			{Name: "made_gbps", Unit: "Gb/s", HigherIsBetter: true, Doc: "made-up throughput"},
			{Name: "made_rtt", Unit: "usec", Doc: "made-up round trip"},
		},
		Tools: []kinds.Tool{{Name: madeTool, Family: madeFamily, RDMA: true,
			TransportWhy: "made up", Sizes: true, Metrics: []string{"made_gbps", "made_rtt"}, Chart: "made",
			View: kinds.View{
				Headline: []kinds.Figure{{Metric: "made_gbps", Label: "made", ShowSize: true, At: kinds.Largest, With: []kinds.Figure{{Metric: "made_rtt"}}}},
				Glance:   kinds.Figure{Metric: "made_gbps", At: kinds.Largest, Word: "made"},
				Charts: []kinds.Chart{{ID: "made", Title: "Made-up throughput and round trip", Type: kinds.Bars,
					Series: []kinds.Series{{Metric: "made_gbps", Name: "throughput"}, {Metric: "made_rtt", Name: "rtt"}}}},
				Throughput: "made_gbps",
			}}},
	}
}

func init() { kinds.Register(madeKind{}) }

// TestMadeUpFamilyShown: a run of the made-up tool beside a tcp baseline
// shows the made-up figures in every view.
func TestMadeUpFamilyShown(t *testing.T) {
	dir := t.TempDir()
	start := time.Date(2026, 11, 27, 4, 0, 0, 0, time.UTC)
	meta := func(wl, tool string, size int64) results.Meta {
		return results.Meta{Workload: wl, Tool: tool, Size: size, Hosts: []string{"server", "client"}}
	}
	r := &results.Run{Schema: results.SchemaVersion, Lab: "made", ID: "2026-11-27T040000Z", Started: start, Finished: start.Add(time.Minute),
		Status: results.RunOK,
		Workloads: []results.Workload{
			{Name: "made", Tool: madeTool, Status: results.StatusOK, Hosts: []string{"server", "client"}, Devices: []string{"rxe0", "rxe0"}},
			{Name: "base", Tool: "tcp", Status: results.StatusOK, Hosts: []string{"server", "client"}},
		},
		Samples: []results.Sample{
			{Metric: "made_gbps", Value: 2, Unit: "Gb/s", Meta: meta("made", madeTool, 4096)},
			{Metric: "made_gbps", Value: 4, Unit: "Gb/s", Meta: meta("made", madeTool, 65536)},
			{Metric: "made_rtt", Value: 7, Unit: "usec", Meta: meta("made", madeTool, 4096)},
			{Metric: "made_rtt", Value: 9, Unit: "usec", Meta: meta("made", madeTool, 65536)},
			{Metric: "tcp_bw", Value: 1, Unit: "Gb/s", Meta: meta("base", "tcp", 0)},
		},
	}
	if err := results.WriteRun(dir, r); err != nil {
		t.Fatal(err)
	}
	read, err := results.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}

	var head bytes.Buffer
	if err := results.WriteHeadline(&head, read); err != nil {
		t.Fatal(err)
	}
	summary := string(results.Summary(read, dir))
	for _, tc := range []struct{ view, text, want string }{
		{"headline cell", head.String(), "made 4 Gb/s, 9 usec at 64 KiB"},
		{"headline's RDMA vs TCP", head.String(), "made 4 Gb/s at 64 KiB = 4.00× TCP"},
		{"rlab runs", strings.Join(results.Headline(read), "; "), "made 4 Gb/s made"},
		{"summary's RDMA vs TCP", summary, "| RDMA | made | " + madeTool + " | 64 KiB messages | 4 Gb/s | 4.00x |"},
	} {
		if !strings.Contains(tc.text, tc.want) {
			t.Errorf("%s: no %q in:\n%s", tc.view, tc.want, tc.text)
		}
	}

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
	if diff := cmp.Diff([]string{"made: Made-up throughput and round trip"}, charts); diff != "" {
		t.Errorf("report charts (-want +got):\n%s", diff)
	}
	if d.Compare == nil {
		t.Fatal("report: no RDMA vs TCP comparison")
	}
	var rows []string
	for _, row := range d.Compare.Table.Rows {
		rows = append(rows, row[0]+" "+row[2]+" "+row[4])
	}
	if diff := cmp.Diff([]string{"made RDMA 4 Gb/s", "base TCP 1 Gb/s"}, rows); diff != "" {
		t.Errorf("report RDMA vs TCP (-want +got):\n%s", diff)
	}
}
