package report

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestCaptureConnectionsByWorkload: the report of a run names the
// workload of every connection of its capture (RoCEv2 flows, iWARP
// directions) and marks each workload's window on the IO graph; the
// composed run (four recorded captures, testdata/attrib/mixed) names them
// by time window and RDMA-CM.
func TestCaptureConnectionsByWorkload(t *testing.T) {
	dir := copyDir(t, "../../testdata/attrib/mixed")
	d, err := Build(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Captures) != 1 {
		t.Fatalf("%d captures", len(d.Captures))
	}
	c := d.Captures[0]
	col := func(tb *Table, name string) int {
		for i, c := range tb.Columns {
			if c == name {
				return i
			}
		}
		t.Fatalf("no column %q in %v", name, tb.Columns)
		return -1
	}
	var got []string
	w := col(&c.Connections, "workload")
	for _, r := range c.Connections.Rows {
		got = append(got, r[0]+" "+r[2]+" "+r[w])
	}
	want := []string{
		"10.99.0.2 0x000011 write_bw", "10.99.0.1 0x000011 write_bw",
		"10.99.0.2 0x000015 pingpong", "10.99.0.1 0x000015 pingpong",
		"10.99.0.2 0x000001 rping", "10.99.0.1 0x000001 rping",
		"10.99.0.2 0x000018 rping", "10.99.0.1 0x000018 rping",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("RoCEv2 connections (-want +got):\n%s", d)
	}
	if c.IWARP == nil {
		t.Fatal("no iWARP table")
	}
	w = col(c.IWARP, "workload")
	for _, r := range c.IWARP.Rows {
		if r[w] != "siw_rping" {
			t.Errorf("iWARP %s -> %s named %q, want siw_rping", r[0], r[1], r[w])
		}
	}
	if c.IOGraph == nil {
		t.Fatal("no IO graph")
	}
	var marks []string
	for _, m := range c.IOGraph.Marks {
		marks = append(marks, m.Label.Text)
		if m.X < c.IOGraph.Plot.X || m.X+m.W > c.IOGraph.Plot.X+c.IOGraph.Plot.W+0.2 {
			t.Errorf("mark %s at %v..%v outside the plot %+v", m.Label.Text, m.X, m.X+m.W, c.IOGraph.Plot)
		}
	}
	if d := cmp.Diff([]string{"write_bw", "pingpong", "rping", "siw_rping"}, marks); d != "" {
		t.Errorf("IO graph marks (-want +got):\n%s", d)
	}
	for _, n := range c.Notes {
		if strings.Contains(n, "no workload's window") {
			t.Errorf("note %q on a capture the windows cover", n)
		}
	}
}
