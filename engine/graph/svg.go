package graph

import (
	"fmt"
	"github.com/rlab-dev/rlab/engine/termsafe"
	"html"
	"io"
	"math"
	"sort"
	"strings"
)

// WriteSimpleSVG draws g without Graphviz: hosts side by side (four to a
// row), each a column of its netdevs with their rxe devices and captures
// below, and workloads as curves between them labelled with name and tool.
// It is what rlab uses when `dot` is not installed; Graphviz's layout is
// better for large labs.
func WriteSimpleSVG(w io.Writer, g *Graph) error {
	const (
		colW    = 280.0
		gap     = 150.0 // between columns: room for the workload labels
		lineH   = 14.0
		pad     = 8.0
		perRow  = 4
		boxGap  = 10.0
		titleH  = 34.0
		rowGap  = 40.0
		boxW    = colW - 2*pad
		maxLine = 40
	)
	type box struct {
		x, y, w, h float64
		lines      []string
		fill       string
		note       bool
	}
	var boxes []box
	anchor := map[string][2]float64{} // node id -> box's left x, centre y; right x is left + boxW
	var b strings.Builder
	textH := func(n int) float64 { return float64(n)*lineH + 2*pad - 4 }
	y0 := titleH
	maxW, maxH := 0.0, 0.0
	for _, row := range placeHosts(g, perRow) {
		rowH := 0.0
		for col, i := range row {
			if i < 0 {
				continue
			}
			h := g.Hosts[i]
			x := 10 + float64(col)*(colW+gap)
			y := y0 + 22 // cluster label
			add := func(id string, lines []string, fill string, note bool) {
				for k, l := range lines {
					if r := []rune(l); len(r) > maxLine {
						lines[k] = string(r[:maxLine-1]) + "…"
					}
				}
				bh := textH(len(lines))
				boxes = append(boxes, box{x + pad, y, boxW, bh, lines, fill, note})
				anchor[id] = [2]float64{x + pad, y + bh/2}
				y += bh + boxGap
			}
			add(h.ID, append([]string{"host " + h.Name}, h.Detail...), "#f6f8fa", false)
			for _, n := range h.Netdevs {
				add(n.ID, append([]string{"netdev " + n.Name}, n.Detail...), "#fff8c5", false)
				for _, r := range n.Devices {
					head := "rdma " + r.Device
					if r.Ref != "" && r.Ref != r.Device {
						head += " (" + r.refKind() + "." + r.Ref + ")"
					}
					add(r.ID, append([]string{head}, r.Detail...), "#ddf4ff", false)
				}
				for _, c := range n.Captures {
					add(c.ID, append([]string{"capture " + c.Name}, c.Detail...), "#fbefff", true)
				}
			}
			for _, e := range h.Execs {
				add(e.ID, []string{"workload " + e.Name, e.Tool}, "#ffffff", false)
			}
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" rx="8" fill="none" stroke="#8c959f" stroke-dasharray="5,3"/>`+"\n", x, y0, colW, y-y0)
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" font-weight="bold">%s</text>`+"\n", x+colW/2, y0+16, esc(h.Name))
			rowH = math.Max(rowH, y-y0)
			maxW = math.Max(maxW, x+colW+10)
		}
		y0 += rowH + rowGap
	}
	maxH = y0
	for _, bx := range boxes {
		dash := ""
		if bx.note {
			dash = ` stroke-dasharray="2,2"`
		}
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" rx="6" fill="%s" stroke="#57606a"%s/>`+"\n", bx.x, bx.y, bx.w, bx.h, bx.fill, dash)
		for k, l := range bx.lines {
			weight := ""
			if k == 0 {
				weight = ` font-weight="bold"`
			}
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle"%s>%s</text>`+"\n", bx.x+bx.w/2, bx.y+pad+10+float64(k)*lineH, weight, esc(l))
		}
	}
	// Workload edges: from the facing sides of the two boxes, bowed so
	// several workloads between the same pair stay apart.
	count := map[[2]string]int{}
	for _, e := range g.Workloads {
		count[[2]string{e.From, e.To}]++
	}
	seen := map[[2]string]int{}
	for _, e := range g.Workloads {
		a, okA := anchor[e.From]
		z, okZ := anchor[e.To]
		if !okA || !okZ {
			continue
		}
		k := [2]string{e.From, e.To}
		n := seen[k]
		seen[k]++
		// Edges between the same two boxes fan out: each bends up or down
		// by off, so their labels (at the curve's middle) stay apart.
		off := (float64(n) - float64(count[k]-1)/2) * 30
		x1, x2 := a[0]+boxW, z[0]
		if z[0] < a[0] {
			x1, x2 = a[0], z[0]+boxW
		}
		y1, y2 := a[1], z[1]
		cx1, cx2 := x1+(x2-x1)/3, x2-(x2-x1)/3
		if z[0] == a[0] { // same column: loop out to the right
			x1, x2 = a[0]+boxW, z[0]+boxW
			cx1, cx2 = x1+60+math.Abs(off), x2+60+math.Abs(off)
		}
		cy1, cy2 := y1+off*4/3, y2+off*4/3
		colour, dash := "#0969da", ""
		if !e.RDMA {
			colour, dash = "#6e7781", ` stroke-dasharray="6,4"`
		}
		fmt.Fprintf(&b, `<path d="M%.1f,%.1f C%.1f,%.1f %.1f,%.1f %.1f,%.1f" fill="none" stroke="%s" stroke-width="2"%s marker-end="url(#arrow)"/>`+"\n",
			x1, y1, cx1, cy1, cx2, cy2, x2, y2, colour, dash)
		// The label sits on the curve's midpoint (t = 1/2 of the Bezier).
		mx := (x1 + 3*cx1 + 3*cx2 + x2) / 8
		my := (y1 + 3*cy1 + 3*cy2 + y2) / 8
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" class="el">%s</text>`+"\n", mx, my-2, esc(e.Name))
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" class="el">%s</text>`+"\n", mx, my+10, esc(e.Tool))
		maxW = math.Max(maxW, math.Max(cx1, cx2)+10)
	}
	maxW = math.Max(maxW, 300)
	_, err := fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="DejaVu Sans, sans-serif" font-size="11">
<title>%s</title>
<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#57606a"/></marker></defs>
<style>.el { font-size: 10px; fill: #24292f; paint-order: stroke; stroke: #ffffff; stroke-width: 3px; }</style>
<rect width="100%%" height="100%%" fill="#ffffff"/>
<text x="%.1f" y="20" text-anchor="middle" font-size="13">%s</text>
%s</svg>
`, maxW, maxH, maxW, maxH, esc("lab "+g.Name), maxW/2, esc("lab "+g.Name), b.String())
	return err
}

// placeHosts puts hosts into rows of perRow slots (-1: empty) so that hosts
// joined by workloads sit next to each other: each group of connected hosts
// in order of its first host in the lab, starting a new row when a group
// that fits in a row would not fit in what is left of this one.
func placeHosts(g *Graph, perRow int) [][]int {
	hostOf := map[string]int{}
	for i, h := range g.Hosts {
		hostOf[h.ID] = i
	}
	owner := func(id string) int {
		if i, ok := hostOf[id]; ok {
			return i
		}
		if k := strings.IndexByte(id, '_'); k > 0 {
			if i, ok := hostOf[id[:k]]; ok {
				return i
			}
		}
		return -1
	}
	adj := make([][]int, len(g.Hosts))
	for _, e := range g.Workloads {
		a, z := owner(e.From), owner(e.To)
		if a >= 0 && z >= 0 && a != z {
			adj[a] = append(adj[a], z)
			adj[z] = append(adj[z], a)
		}
	}
	for i := range adj {
		sort.Ints(adj[i])
	}
	seen := make([]bool, len(g.Hosts))
	var rows [][]int
	var row []int
	flush := func() {
		if len(row) > 0 {
			for len(row) < perRow {
				row = append(row, -1)
			}
			rows = append(rows, row)
			row = nil
		}
	}
	for start := range g.Hosts {
		if seen[start] {
			continue
		}
		group := []int{start}
		seen[start] = true
		for k := 0; k < len(group); k++ {
			for _, n := range adj[group[k]] {
				if !seen[n] {
					seen[n] = true
					group = append(group, n)
				}
			}
		}
		if len(group) <= perRow && len(row)+len(group) > perRow {
			flush()
		}
		for _, h := range group {
			row = append(row, h)
			if len(row) == perRow {
				flush()
			}
		}
	}
	flush()
	return rows
}

// esc escapes text for SVG (XML) content and attributes. Control
// characters and the noncharacters XML forbids are escaped as text first
// (termsafe), so a host's facts always make well-formed XML.
func esc(s string) string {
	return html.EscapeString(termsafe.Line(s))
}
