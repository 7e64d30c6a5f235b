package iograph

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"math"
	"strconv"
	"strings"
)

// Chart geometry, in SVG user units.
const (
	svgW, svgH                   = 800, 360
	padL, padR, padT, padB       = 72, 20, 36, 44
	plotW, plotH                 = svgW - padL - padR, svgH - padT - padB
	legendRowH                   = 16
	maxPoints                    = 2000 // more intervals are merged so the SVG stays small
	colorRoCE, colorTCP, colorBg = "#1f4e9c", "#7a7a7a", "#ffffff"
)

var seriesColor = map[string]string{
	SeriesRoCE: colorRoCE, SeriesWrite: "#d9480f", SeriesRead: "#2b8a3e", SeriesSend: "#ae3ec9",
	SeriesAtomic: "#e8590c", SeriesAck: "#0c8599", SeriesTCP: colorTCP, SeriesIWARP: "#1098ad",
}

// WriteSVG draws g as a standalone SVG document (no scripts, no external
// references), with axes, ticks, units and a legend.
func WriteSVG(w io.Writer, g *Graph) error {
	bw := bufio.NewWriter(w)
	n := 0
	for _, s := range g.Series {
		n = max(n, len(s.BPS))
	}
	// Merge intervals so at most maxPoints points are drawn per series.
	merge := 1
	if n > maxPoints {
		merge = (n + maxPoints - 1) / maxPoints
	}
	points := (n + merge - 1) / merge
	step := g.Interval.Seconds() * float64(merge)
	dur := float64(points) * step
	series := make([][]float64, len(g.Series))
	ymax := 0.0
	for i, s := range g.Series {
		v := make([]float64, points)
		for j, x := range s.BPS {
			v[j/merge] += x / float64(merge)
		}
		for _, x := range v {
			ymax = math.Max(ymax, x)
		}
		series[i] = v
	}
	yStep, yTop := niceScale(ymax)
	xStep, xTop := niceScale(dur)
	unit, div := bpsUnit(yTop)

	fmt.Fprintf(bw, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" width="%d" height="%d" font-family="sans-serif" font-size="11" role="img">`+"\n", svgW, svgH, svgW, svgH)
	fmt.Fprintf(bw, `<title>IO graph: throughput per %s</title>`+"\n", html.EscapeString(g.Interval.String()))
	fmt.Fprintf(bw, `<rect width="%d" height="%d" fill="%s"/>`+"\n", svgW, svgH, colorBg)
	fmt.Fprintf(bw, `<text x="%d" y="20" font-size="13" font-weight="bold">Throughput (%s per %s)</text>`+"\n", padL, unit, html.EscapeString(g.Interval.String()))
	// Grid and Y ticks.
	for v := 0.0; v <= yTop*1.0000001; v += yStep {
		y := padT + plotH - v/yTop*plotH
		fmt.Fprintf(bw, `<line x1="%d" y1="%s" x2="%d" y2="%s" stroke="#e6e6e6"/>`+"\n", padL, f1(y), padL+plotW, f1(y))
		fmt.Fprintf(bw, `<text x="%d" y="%s" text-anchor="end" dominant-baseline="middle">%s</text>`+"\n", padL-6, f1(y), trimNum(v/div))
	}
	// X ticks.
	for v := 0.0; v <= xTop*1.0000001; v += xStep {
		x := padL + v/xTop*plotW
		fmt.Fprintf(bw, `<line x1="%s" y1="%d" x2="%s" y2="%d" stroke="#333"/>`+"\n", f1(x), padT+plotH, f1(x), padT+plotH+4)
		fmt.Fprintf(bw, `<text x="%s" y="%d" text-anchor="middle">%s</text>`+"\n", f1(x), padT+plotH+16, trimNum(v))
	}
	// Axes and their labels.
	fmt.Fprintf(bw, `<path d="M%d %dV%dH%d" fill="none" stroke="#333"/>`+"\n", padL, padT, padT+plotH, padL+plotW)
	fmt.Fprintf(bw, `<text x="%d" y="%d" text-anchor="middle">time (s) since %s</text>`+"\n", padL+plotW/2, svgH-8, html.EscapeString(g.Start.Format("2006-01-02 15:04:05.000000 UTC")))
	fmt.Fprintf(bw, `<text transform="translate(14 %d) rotate(-90)" text-anchor="middle">%s</text>`+"\n", padT+plotH/2, unit)
	// Workloads' windows: a band each, clipped to the plot, labelled at
	// its top, behind the lines.
	for i, m := range g.Marks {
		x0 := math.Max(0, m.Start.Seconds()) / xTop * plotW
		x1 := math.Min(xTop, m.End.Seconds()) / xTop * plotW
		if x1 < x0 || math.IsNaN(x0) || math.IsNaN(x1) {
			continue
		}
		fmt.Fprintf(bw, `<g class="workload" data-workload="%s"><rect x="%s" y="%d" width="%s" height="%d" fill="%s" fill-opacity="0.08" stroke="%s" stroke-opacity="0.5" stroke-dasharray="3 3"/>`,
			html.EscapeString(m.Name), f1(padL+x0), padT, f1(math.Max(1, x1-x0)), plotH, markColor[i%len(markColor)], markColor[i%len(markColor)])
		fmt.Fprintf(bw, `<text x="%s" y="%d" font-size="10" fill="%s">%s</text></g>`+"\n", f1(padL+x0+2), padT+10+(i%3)*11, markColor[i%len(markColor)], html.EscapeString(m.Name))
	}
	// Lines: each interval's value drawn across its width (a step line).
	for i, s := range g.Series {
		var d strings.Builder
		for j, v := range series[i] {
			x0 := padL + float64(j)*step/xTop*plotW
			x1 := padL + float64(j+1)*step/xTop*plotW
			y := padT + plotH - v/yTop*plotH
			if j == 0 {
				fmt.Fprintf(&d, "M%s %s", f1(x0), f1(y))
			} else {
				fmt.Fprintf(&d, "V%s", f1(y))
			}
			fmt.Fprintf(&d, "H%s", f1(x1))
		}
		c := seriesColor[s.Name]
		if c == "" {
			c = "#000"
		}
		fmt.Fprintf(bw, `<path class="series" data-series="%s" d="%s" fill="none" stroke="%s" stroke-width="1.5"/>`+"\n", html.EscapeString(s.Name), d.String(), c)
	}
	// Legend, top right inside the plot.
	for i, s := range g.Series {
		y := padT + 8 + i*legendRowH
		x := padL + plotW - 150
		c := seriesColor[s.Name]
		fmt.Fprintf(bw, `<rect x="%d" y="%d" width="14" height="3" fill="%s"/>`, x, y-2, c)
		fmt.Fprintf(bw, `<text x="%d" y="%d" dominant-baseline="middle">%s (%d pkts)</text>`+"\n", x+20, y, html.EscapeString(s.Name), s.Packets)
	}
	if len(g.Series) == 0 {
		fmt.Fprintf(bw, `<text x="%d" y="%d" text-anchor="middle">no RoCEv2 or TCP packets</text>`+"\n", padL+plotW/2, padT+plotH/2)
	}
	bw.WriteString("</svg>\n")
	return bw.Flush()
}

// markColor cycles the workloads' bands.
var markColor = []string{"#5c7cfa", "#f59f00", "#37b24d", "#f03e3e", "#7048e8"}

// niceScale returns a tick step of 1, 2 or 5 times a power of ten and the
// top of the axis (a multiple of it) for values up to v.
func niceScale(v float64) (step, top float64) {
	if v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 1, 1
	}
	raw := v / 5
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	switch f := raw / p; {
	case f <= 1:
		step = p
	case f <= 2:
		step = 2 * p
	case f <= 5:
		step = 5 * p
	default:
		step = 10 * p
	}
	return step, math.Ceil(v/step-1e-9) * step
}

// bpsUnit picks the unit for an axis that goes up to top bits/s.
func bpsUnit(top float64) (string, float64) {
	switch {
	case top >= 1e9:
		return "Gbit/s", 1e9
	case top >= 1e6:
		return "Mbit/s", 1e6
	case top >= 1e3:
		return "kbit/s", 1e3
	}
	return "bit/s", 1
}

func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

func trimNum(v float64) string { return strconv.FormatFloat(math.Round(v*1e6)/1e6, 'f', -1, 64) }
