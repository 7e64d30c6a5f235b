package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// event is the part of a line of events.jsonl (written by the run engine)
// the timeline reads.
type event struct {
	Time     time.Time `json:"time"`
	Type     string    `json:"type"`
	Step     string    `json:"step"`
	Host     string    `json:"host"`
	Workload string    `json:"workload"`
	Status   string    `json:"status"`
	Error    string    `json:"error"`
}

const (
	maxTimelineRows = 150
	maxEventLine    = 1 << 20
	ganttLabelW     = 300.0
	ganttPlotW      = 600.0
	ganttRowH       = 18.0
)

type ganttRow struct {
	Label      string
	Start, End float64 // seconds since the run started
	Status     string
	Detail     string
}

// parseEvents reads events.jsonl into timeline rows: one per step, from its
// start to its end (or to the last event, for a step that never ended).
// Lines that do not parse are skipped: the log may end mid-line when rlab
// was killed.
func parseEvents(b []byte) (rows []ganttRow, total float64) {
	rows, total, _ = parseEventsBounded(b)
	return rows, total
}

// maxParsedRows is how many steps parseEventsBounded keeps: the chart draws
// maxTimelineRows of them, and a received events.jsonl of millions of steps
// (139 MB: 22 s and 1 GB before, attack round 7) must not be held whole.
const maxParsedRows = 10 * maxTimelineRows

// parseEventsBounded is parseEvents keeping the first maxParsedRows steps
// by when they appear in the file (the run writes it in time order), and
// counting every step in steps.
func parseEventsBounded(b []byte) (rows []ganttRow, total float64, steps int) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), maxEventLine)
	type key struct{ step, host, workload string }
	open := map[key][]int{}
	var t0, last time.Time
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Time.IsZero() {
			continue
		}
		if t0.IsZero() || e.Type == "run.start" {
			t0 = e.Time
		}
		if e.Time.After(last) {
			last = e.Time
		}
		k := key{e.Step, e.Host, e.Workload}
		at := e.Time.Sub(t0).Seconds()
		switch e.Type {
		case "step.start":
			steps++
			if len(rows) >= maxParsedRows {
				continue
			}
			rows = append(rows, ganttRow{Label: rowLabel(e), Start: at, End: math.NaN(), Status: "running"})
			open[k] = append(open[k], len(rows)-1)
		case "step.end":
			if idx := open[k]; len(idx) > 0 {
				i := idx[0]
				open[k] = idx[1:]
				if len(open[k]) == 0 {
					delete(open, k)
				}
				rows[i].End, rows[i].Status, rows[i].Detail = at, e.Status, e.Error
			} else if len(rows) < maxParsedRows { // a skipped workload ends without having started
				steps++
				rows = append(rows, ganttRow{Label: rowLabel(e), Start: at, End: at, Status: e.Status, Detail: e.Error})
			}
		}
	}
	if t0.IsZero() {
		return nil, 0, 0
	}
	total = last.Sub(t0).Seconds()
	for i := range rows {
		if math.IsNaN(rows[i].End) {
			rows[i].End = total
			rows[i].Detail = "no end recorded: the run was stopped (or is still going) before this step ended"
		}
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].Start < rows[j].Start })
	return rows, total, steps
}

func rowLabel(e event) string {
	switch {
	case e.Workload != "":
		return "workload " + e.Workload
	case e.Host != "" && e.Step == "connect":
		return "connect " + e.Host
	case e.Host != "":
		return e.Step
	}
	return "phase " + e.Step
}

// ganttLabelMax is how many characters the label column holds.
const ganttLabelMax = 44

// shortLabel fits a row's label to the label column. A host step such as
// "rxe server: create rxe0 on eth1 of host server" that does not fit is
// drawn by its description alone (which names the host) when that fits;
// otherwise the whole is cut with an ellipsis. The bar's hover title keeps the whole label.
func shortLabel(label string) string {
	if i := strings.Index(label, ` filter "`); i > 0 && len([]rune(label)) > ganttLabelMax {
		// A capture's filter is the hover's: the column names the capture
		// and its host ("stop capture roce: tcpdump on eth1 of host
		// server filter "udp port 4791"" was cut mid-host).
		label = label[:i]
	}
	if len([]rune(label)) > ganttLabelMax {
		if _, what, ok := strings.Cut(label, ": "); ok && what != "" && len([]rune(what)) <= ganttLabelMax {
			label = what
		}
	}
	if len([]rune(label)) > ganttLabelMax {
		label = string([]rune(label)[:ganttLabelMax-1]) + "…"
	}
	return label
}

// statusColor colours a step by how it ended.
func statusColor(s string) string {
	switch statusClass(s) {
	case "ok":
		return "#2ca02c"
	case "bad":
		return "#d62728"
	}
	if s == "skipped" {
		return "#afb8c1"
	}
	return "#1f77b4"
}

// ganttChart lays out one bar per row against seconds since the start.
func ganttChart(id, title string, rows []ganttRow, total float64) *Chart {
	c := &Chart{ID: id, Title: title, XLabel: "seconds since the run started", Width: ganttLabelW + ganttPlotW + 20}
	c.Plot = Box{ganttLabelW, padTop, ganttPlotW, math.Max(float64(len(rows)), 1) * ganttRowH}
	c.Height = c.Plot.Y + c.Plot.H + padBottom
	if len(rows) == 0 {
		c.Empty = "no events"
		return c
	}
	top, ticks := niceScale(total)
	tx := func(s float64) float64 { return c.Plot.X + s/top*c.Plot.W }
	for _, t := range ticks {
		x := r1(tx(t))
		c.Grid = append(c.Grid, Line{x, c.Plot.Y, x, c.Plot.Y + c.Plot.H})
		c.XTicks = append(c.XTicks, Text{x, r1(c.Plot.Y + c.Plot.H + 16), fmtNum(t), "middle"})
	}
	for i, r := range rows {
		y := c.Plot.Y + float64(i)*ganttRowH
		label := shortLabel(r.Label)
		c.YTicks = append(c.YTicks, Text{c.Plot.X - 6, r1(y + ganttRowH - 5), label, "end"})
		x0, x1 := tx(math.Max(r.Start, 0)), tx(math.Max(r.End, 0))
		title := fmt.Sprintf("%s: %s, %s s from %s s", r.Label, r.Status, fmtNum(r.End-r.Start), fmtNum(r.Start))
		if r.Detail != "" {
			title += ": " + r.Detail
		}
		c.Bars = append(c.Bars, Bar{Box: Box{r1(x0), r1(y + 3), r1(math.Max(x1-x0, 1.5)), ganttRowH - 6}, Color: statusColor(r.Status), Title: title})
	}
	return c
}

// timeline draws events.jsonl, when the run left one.
func (b *builder) timeline() {
	data, ok := b.read("events.jsonl")
	if !ok {
		return
	}
	rows, total, steps := parseEventsBounded(data)
	if len(rows) == 0 {
		return
	}
	if steps > maxTimelineRows {
		b.d.TimelineNote = fmt.Sprintf("The first %d of %d steps are drawn; events.jsonl has them all.", maxTimelineRows, steps)
		rows = rows[:min(len(rows), maxTimelineRows)]
	}
	b.d.Timeline = ganttChart("timeline", "Timeline: every step of the run", rows, total)
}
