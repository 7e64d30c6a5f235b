package report

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseEvents(t *testing.T) {
	const start = `{"time":"2026-11-25T21:00:00Z","type":"run.start"}` + "\n"
	for _, tc := range []struct {
		name  string
		in    string
		want  []string // label status start end
		total float64
	}{
		{"nothing", "", nil, 0},
		{"garbage and a cut line", "not json\n{\"time\":\"2026-", nil, 0},
		{"a step", start + `{"time":"2026-11-25T21:00:01Z","type":"step.start","step":"boot"}
{"time":"2026-11-25T21:00:03.5Z","type":"step.end","step":"boot","status":"ok"}`, []string{"phase boot ok 1 3.5"}, 3.5},
		{"same step on two hosts, ends out of order", start + `{"time":"2026-11-25T21:00:01Z","type":"step.start","step":"connect","host":"a"}
{"time":"2026-11-25T21:00:02Z","type":"step.start","step":"connect","host":"b"}
{"time":"2026-11-25T21:00:04Z","type":"step.end","step":"connect","host":"b","status":"failed","error":"refused"}
{"time":"2026-11-25T21:00:05Z","type":"step.end","step":"connect","host":"a","status":"ok"}`,
			[]string{"connect a ok 1 5", "connect b failed 2 4"}, 5},
		{"skipped without a start, and one never ended", start + `{"time":"2026-11-25T21:00:01Z","type":"step.start","step":"x","workload":"w1"}
{"time":"2026-11-25T21:00:02Z","type":"step.end","step":"y","workload":"w2","status":"skipped"}`,
			[]string{"workload w1 running 1 2", "workload w2 skipped 2 2"}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows, total := parseEvents([]byte(tc.in))
			var got []string
			for _, r := range rows {
				got = append(got, strings.Join([]string{r.Label, r.Status, fmtNum(r.Start), fmtNum(r.End)}, " "))
			}
			if d := cmp.Diff(tc.want, got); d != "" || total != tc.total {
				t.Errorf("rows (-want +got):\n%s\ntotal %v, want %v", d, total, tc.total)
			}
		})
	}
}

// FuzzEvents reads any events.jsonl into a drawable timeline.
func FuzzEvents(f *testing.F) {
	seed, err := os.ReadFile(filepath.Join(fixture, "events.jsonl"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte(`{"time":"0001-01-01T00:00:01Z","type":"step.end","step":"s"}` + "\n" + `{"time":"9999-12-31T23:59:59Z","type":"step.start","step":"s"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		rows, total := parseEvents(b)
		c := ganttChart("t", "t", rows, total)
		// Every bar is drawn inside the plot, whatever order and times
		// the events came in (a clock stepped back, a hand edit).
		for _, bar := range c.Bars {
			for _, v := range []float64{bar.X, bar.Y, bar.W, bar.H} {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					t.Fatalf("bar %+v of %+v", bar.Box, rows)
				}
			}
			if bar.X < c.Plot.X-0.1 || bar.X+bar.W > c.Plot.X+c.Plot.W+1.6 || bar.W <= 0 {
				t.Fatalf("bar %+v outside the plot %+v", bar.Box, c.Plot)
			}
		}
	})
}

func TestShortLabel(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"workload write_bw", "workload write_bw"},
		{"capture roce: tcpdump on eth1 of host server", "capture roce: tcpdump on eth1 of host server"}, // 44: fits
		{"rxe server: create rxe0 on eth1 of host server", "create rxe0 on eth1 of host server"},
		// The demo's captures, whose filter made the label too long.
		{`capture roce: tcpdump on eth1 of host server filter "udp port 4791"`, "capture roce: tcpdump on eth1 of host server"},
		{`stop capture roce: tcpdump on eth1 of host server filter "udp port 4791"`, "tcpdump on eth1 of host server"},
		{`capture c: tcpdump on eth1 of host a-very-long-host-name-of-a-class filter "x"`, "capture c: tcpdump on eth1 of host a-very-l…"},
		{"rxe a-very-long-host-name-of-a-class-student: create rxe0 on eth1 of host a-very-long-host-name-of-a-class-student", "rxe a-very-long-host-name-of-a-class-studen…"},
		{"workload " + strings.Repeat("x", 60), "workload " + strings.Repeat("x", 34) + "…"},
	} {
		got := shortLabel(tc.in)
		if got != tc.want {
			t.Errorf("shortLabel(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if n := len([]rune(got)); n > ganttLabelMax {
			t.Errorf("shortLabel(%q) has %d characters, more than the column's %d", tc.in, n, ganttLabelMax)
		}
	}
}

// TestTimelineEventsBounded: a received events.jsonl of many steps keeps
// only the steps the chart can use, and the note still counts them all
// (attack round 7, medium: 2 M step.start lines, 139 MB, took the report
// 22 s and 1 GB, every step held as a row).
func TestTimelineEventsBounded(t *testing.T) {
	const n = 200_000
	var b bytes.Buffer
	t0 := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	for i := range n {
		fmt.Fprintf(&b, `{"time":%q,"type":"step.start","step":"s","workload":"w%d"}`+"\n", t0.Add(time.Duration(i)*time.Millisecond).Format(time.RFC3339Nano), i)
	}
	rows, total, steps := parseEventsBounded(b.Bytes())
	if steps != n || len(rows) > maxParsedRows || len(rows) < maxTimelineRows {
		t.Errorf("%d steps: kept %d rows, counted %d; want at most %d kept and all counted", n, len(rows), steps, maxParsedRows)
	}
	if want := float64(n-1) / 1000; math.Abs(total-want) > 1e-6 {
		t.Errorf("total %v s, want %v (the last event's time)", total, want)
	}
	if rows[0].Label != "workload w0" {
		t.Errorf("first row %q, want the file's first step", rows[0].Label)
	}
}
