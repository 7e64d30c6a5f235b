package report

import (
	"fmt"
	"github.com/rlab-dev/rlab/engine/results"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Chart is the geometry of one SVG chart, laid out in Go and drawn by the
// template. Keeping the geometry as data (not as SVG text built here) means
// every label still goes through html/template's escaping, and the golden
// test sees exactly what is drawn.
type Chart struct {
	ID     string   `json:"id"`
	Title  string   `json:"title"`
	XLabel string   `json:"x_label,omitempty"`
	YLabel string   `json:"y_label,omitempty"`
	Width  float64  `json:"width"`
	Height float64  `json:"height"`
	Plot   Box      `json:"plot"` // the plotting area inside the axes
	Grid   []Line   `json:"grid,omitempty"`
	XTicks []Text   `json:"x_ticks,omitempty"`
	YTicks []Text   `json:"y_ticks,omitempty"`
	Series []Series `json:"series,omitempty"`
	Bars   []Bar    `json:"bars,omitempty"`
	Legend []Legend `json:"legend,omitempty"`
	// Marks are bands behind the data: the workloads' windows on an IO
	// graph.
	Marks []Mark `json:"marks,omitempty"`
	Empty string `json:"empty,omitempty"` // shown instead of data when there is none
}

// Mark is a labelled band across the plot's height.
type Mark struct {
	Box
	Color string `json:"color"`
	Title string `json:"title"`
	Label Text   `json:"label"`
}

// Box is a rectangle.
type Box struct {
	X float64 `json:"x"`
	Y float64 `json:"y"`
	W float64 `json:"w"`
	H float64 `json:"h"`
}

// Line is a straight segment.
type Line struct {
	X1 float64 `json:"x1"`
	Y1 float64 `json:"y1"`
	X2 float64 `json:"x2"`
	Y2 float64 `json:"y2"`
}

// Text is a positioned label. Anchor is an SVG text-anchor value.
type Text struct {
	X      float64 `json:"x"`
	Y      float64 `json:"y"`
	Text   string  `json:"text"`
	Anchor string  `json:"anchor"`
}

// Series is one polyline with its points.
type Series struct {
	Name   string  `json:"name"`
	Color  string  `json:"color"`
	Points string  `json:"points"` // SVG polyline points attribute
	Width  float64 `json:"width"`
	Alpha  float64 `json:"alpha"`
	Dots   []Point `json:"dots"`
}

// Point is a data point; Title is its tooltip. A point folded from
// repeats has a whisker from YLo to YHi (pixels) showing their spread.
type Point struct {
	X      float64 `json:"x"`
	Y      float64 `json:"y"`
	Title  string  `json:"title"`
	Spread bool    `json:"spread,omitempty"`
	YLo    float64 `json:"ylo,omitempty"`
	YHi    float64 `json:"yhi,omitempty"`
}

// Bar is one bar with its tooltip and value label.
type Bar struct {
	Box
	Color string `json:"color"`
	Title string `json:"title"`
	Label Text   `json:"label"`
}

// Legend is one legend entry.
type Legend struct {
	X     float64 `json:"x"`
	Y     float64 `json:"y"`
	Color string  `json:"color"`
	Name  string  `json:"name"`
}

// palette holds colours readable on white and told apart by most readers.
var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#17becf", "#7f7f7f"}

func color(i int) string { return palette[i%len(palette)] }

const (
	chartW    = 470.0
	chartH    = 300.0
	padLeft   = 64.0
	padRight  = 16.0
	padTop    = 30.0
	padBottom = 48.0
	legendW   = 100.0
)

// xy is one input point; Lo..Hi is the spread of its repeats.
type xy struct {
	X, Y   float64
	Title  string
	Lo, Hi float64
	Spread bool
}

type seriesIn struct {
	Name string
	Pts  []xy
	Wide bool // a total drawn under its parts: wide and pale
}

// r1 rounds a coordinate to 0.1 px: enough for the eye, stable for goldens.
func r1(v float64) float64 { return math.Round(v*10) / 10 }

// lineChart lays out series over a log2 (logX) or linear x axis, y from 0.
func lineChart(id, title, xlabel, ylabel string, logX bool, in []seriesIn) *Chart {
	c := newChart(id, title, xlabel, ylabel, len(in) > 1)
	var xs []float64
	ymax := 0.0
	for _, s := range in {
		for _, p := range s.Pts {
			if math.IsNaN(p.Y) || math.IsInf(p.Y, 0) || (logX && p.X <= 0) {
				continue
			}
			xs = append(xs, p.X)
			ymax = math.Max(ymax, p.Y)
			if p.Spread && !math.IsNaN(p.Hi) && !math.IsInf(p.Hi, 0) {
				ymax = math.Max(ymax, p.Hi)
			}
		}
	}
	if len(xs) == 0 {
		c.Empty = "no data"
		return c
	}
	sort.Float64s(xs)
	xmin, xmax := xs[0], xs[len(xs)-1]
	tx := func(x float64) float64 {
		if logX {
			x, xmin, xmax := math.Log2(x), math.Log2(xs[0]), math.Log2(xs[len(xs)-1])
			if xmax == xmin {
				return c.Plot.X + c.Plot.W/2
			}
			return c.Plot.X + (x-xmin)/(xmax-xmin)*c.Plot.W
		}
		if xmax == xmin {
			return c.Plot.X + c.Plot.W/2
		}
		return c.Plot.X + (x-xmin)/(xmax-xmin)*c.Plot.W
	}
	top, ticks := niceScale(ymax)
	ty := func(y float64) float64 { return c.Plot.Y + c.Plot.H - y/top*c.Plot.H }
	c.yAxis(ticks, top, ty)
	// x ticks: every distinct size on a log axis (they are what was run),
	// five even steps on a linear one.
	if logX {
		seen := map[float64]bool{}
		for _, x := range xs {
			if !seen[x] {
				seen[x] = true
				c.XTicks = append(c.XTicks, Text{r1(tx(x)), r1(c.Plot.Y + c.Plot.H + 16), humanSize(int64(x)), "middle"})
			}
		}
		c.XTicks = thinTicks(c.XTicks, 44)
	} else {
		for i := 0; i <= 5; i++ {
			x := xmin + (xmax-xmin)*float64(i)/5
			c.XTicks = append(c.XTicks, Text{r1(tx(x)), r1(c.Plot.Y + c.Plot.H + 16), fmtNum(x), "middle"})
			if xmax == xmin {
				break
			}
		}
	}
	for i, s := range in {
		se := Series{Name: s.Name, Color: color(i), Width: 2, Alpha: 1}
		if s.Wide {
			se.Width, se.Alpha = 6, 0.35
		}
		var pts []string
		for _, p := range s.Pts {
			if math.IsNaN(p.Y) || math.IsInf(p.Y, 0) || (logX && p.X <= 0) {
				continue
			}
			x, y := r1(tx(p.X)), r1(ty(p.Y))
			pts = append(pts, fmtNum(x)+","+fmtNum(y))
			pt := Point{X: x, Y: y, Title: p.Title}
			if p.Spread && !math.IsNaN(p.Lo+p.Hi) && !math.IsInf(p.Lo+p.Hi, 0) {
				pt.Spread, pt.YLo, pt.YHi = true, r1(ty(p.Lo)), r1(ty(p.Hi))
			}
			se.Dots = append(se.Dots, pt)
		}
		se.Points = strings.Join(pts, " ")
		c.Series = append(c.Series, se)
		if len(in) > 1 {
			c.Legend = append(c.Legend, Legend{r1(c.Plot.X + c.Plot.W + 16), r1(c.Plot.Y + 8 + float64(i)*18), se.Color, s.Name})
		}
	}
	return c
}

// barGroup is a cluster of bars sharing an x label.
type barGroup struct {
	Label string
	Bars  []barIn
}

type barIn struct {
	Name  string // legend name; bars of the same name share a colour
	Value float64
	Unit  string
}

// valueLabelWidth is how wide a bar's value label is drawn at most, in px:
// 11 px digits (svg .val) are at most 7 px wide in the sans-serif fonts a
// browser picks (DejaVu Sans, Arial, Helvetica: 0.64 em or less).
func valueLabelWidth(s string) float64 { return 7 * float64(len([]rune(s))) }

// barChart lays out grouped vertical bars from 0.
func barChart(id, title, ylabel string, groups []barGroup) *Chart {
	var names []string
	idx := map[string]int{}
	ymax := 0.0
	n := 0
	for _, g := range groups {
		for _, b := range g.Bars {
			if _, ok := idx[b.Name]; !ok {
				idx[b.Name] = len(names)
				names = append(names, b.Name)
			}
			if !math.IsNaN(b.Value) && !math.IsInf(b.Value, 0) {
				ymax = math.Max(ymax, b.Value)
			}
			n++
		}
	}
	c := newChart(id, title, "", ylabel, len(names) > 1)
	if n == 0 {
		c.Empty = "no data"
		return c
	}
	top, ticks := niceScale(ymax)
	ty := func(y float64) float64 { return c.Plot.Y + c.Plot.H - y/top*c.Plot.H }
	c.yAxis(ticks, top, ty)
	gw := c.Plot.W / float64(len(groups))
	for gi, g := range groups {
		gx := c.Plot.X + float64(gi)*gw
		bw := (gw * 0.8) / float64(max(len(g.Bars), 1))
		c.XTicks = append(c.XTicks, Text{r1(gx + gw/2), r1(c.Plot.Y + c.Plot.H + 16), g.Label, "middle"})
		for bi, b := range g.Bars {
			v := b.Value
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				v = 0
			}
			x := gx + gw*0.1 + float64(bi)*bw
			y := ty(v)
			bar := Bar{
				Box:   Box{r1(x), r1(y), r1(math.Max(bw-2, 1)), r1(c.Plot.Y + c.Plot.H - y)},
				Color: color(idx[b.Name]),
				// A measured value: printed as every table prints it.
				Title: fmt.Sprintf("%s %s: %s %s", g.Label, b.Name, results.FormatValue(b.Value), b.Unit),
			}
			if label := results.FormatValue(b.Value); valueLabelWidth(label) <= bw-2 {
				// A value label only where it fits over its own bar: a
				// wider one would run into its neighbour's (the latency
				// bars' "658.4" and "965.4" did at two sizes).
				bar.Label = Text{r1(x + (bw-2)/2), r1(y - 3), label, "middle"}
			}
			c.Bars = append(c.Bars, bar)
		}
	}
	c.XTicks = thinTicks(c.XTicks, 40)
	if len(names) > 1 {
		for i, nm := range names {
			c.Legend = append(c.Legend, Legend{r1(c.Plot.X + c.Plot.W + 16), r1(c.Plot.Y + 8 + float64(i)*18), color(i), nm})
		}
	}
	return c
}

func newChart(id, title, xlabel, ylabel string, legend bool) *Chart {
	w := chartW
	if legend {
		w += legendW
	}
	return &Chart{
		ID: id, Title: title, XLabel: xlabel, YLabel: ylabel,
		Width: w, Height: chartH,
		Plot: Box{padLeft, padTop, chartW - padLeft - padRight, chartH - padTop - padBottom},
	}
}

func (c *Chart) yAxis(ticks []float64, top float64, ty func(float64) float64) {
	for _, t := range ticks {
		y := r1(ty(t))
		c.Grid = append(c.Grid, Line{c.Plot.X, y, c.Plot.X + c.Plot.W, y})
		c.YTicks = append(c.YTicks, Text{c.Plot.X - 6, r1(y + 4), fmtNum(t), "end"})
	}
}

// thinTicks drops labels closer than minGap px to the previous kept one.
func thinTicks(ts []Text, minGap float64) []Text {
	var out []Text
	for _, t := range ts {
		if len(out) > 0 && t.X-out[len(out)-1].X < minGap {
			continue
		}
		out = append(out, t)
	}
	return out
}

// niceScale returns an axis top >= max and ticks 0..top at a 1/2/5 step.
func niceScale(max float64) (float64, []float64) {
	if max <= 0 || math.IsNaN(max) || math.IsInf(max, 0) {
		max = 1
	}
	raw := max / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	top := math.Ceil(max/step-1e-9) * step
	if math.IsInf(top, 0) || math.IsNaN(top) || !(step > 0) {
		// Near the largest float64 the rounded top overflows to +Inf,
		// and counting ticks up to it never ended (SECURITY 124: a
		// received results.json's 1.7e308 hung rlab report): the axis
		// then ends at max itself.
		return max, []float64{0, max}
	}
	var ticks []float64
	for i, n := 0, int(top/step+1e-6); i <= n; i++ {
		ticks = append(ticks, float64(i)*step)
	}
	return top, ticks
}

// fmtNum prints a number short: up to 4 significant digits, no exponent for
// the ranges rlab sees.
func fmtNum(v float64) string {
	if v == 0 {
		return "0"
	}
	a := math.Abs(v)
	switch {
	case a >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 1:
		return strings.TrimSuffix(strings.TrimRight(strconv.FormatFloat(v, 'f', 3, 64), "0"), ".")
	default:
		s := strconv.FormatFloat(v, 'g', 4, 64)
		if strings.Contains(s, "e") {
			s = strconv.FormatFloat(v, 'f', 8, 64)
			s = strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
		}
		return s
	}
}

// humanSize prints a byte count the way message sizes are spoken: 64, 4K, 1M.
func humanSize(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return strconv.FormatInt(n>>30, 10) + "G"
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + "M"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + "K"
	}
	return strconv.FormatInt(n, 10)
}

// humanBytes prints a size with a binary unit (1.5 MiB): results'
// formatter, the one summary.md and the terminal use.
func humanBytes(n int64) string { return results.HumanBytes(n) }
