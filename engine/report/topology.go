package report

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"html/template"
	"strings"
	"time"

	"github.com/rlab-dev/rlab/engine/graph"
)

// Topology is the lab's topology graph: its DOT text and an SVG picture,
// drawn by Graphviz when it is installed where the report is rendered,
// else by graph.WriteSimpleSVG.
type Topology struct {
	// Image is the SVG as a data: URL for an <img> element. An image
	// cannot run script, so dot's output is shown without trusting it.
	Image template.URL
	DOT   string
	Note  string
}

// topologyTimeout bounds dot on a very large class lab.
const topologyTimeout = 30 * time.Second

// maxDrawnHosts is the largest lab whose topology is drawn. dot's layout
// grows much faster than the graph: a class of the shape of
// bench/scale/class-scale.hcl took 0.6 s at 200 hosts, 2.9 s at 300 and
// 129 s (18 s of CPU) at 1,000 on the 2-core bed (load 30), and the run
// waits for its report, so a 1,000-host run waited the whole
// topologyTimeout while dot took a core from the teardown. Above it the
// DOT is kept and the note says how to draw it.
const maxDrawnHosts = 256

// maxDrawnElements bounds what the picture draws: hosts, their netdevs,
// RDMA devices and captures, and workloads. The host bound alone let a lab
// of 2 hosts and 10,000 workloads make a picture of megabytes (dot lays
// 2 hosts and 2,000 workloads out in about a second, into 1 MB of SVG);
// past it the picture leaves workloads out, and the note says how many.
// A class at maxDrawnHosts with its facts is about 1,500.
const maxDrawnElements = 2000

func (b *builder) topology() {
	if b.model == nil {
		if !b.hasLabDir() {
			return
		}
		// A lab whose variables had no defaults needs its -var values,
		// which a run directory does not keep; the rest of the report
		// does not need the lab model.
		b.d.Topology = &Topology{Note: "The topology could not be drawn: the lab files under lab/ do not load on their own (a variable without a default?). rlab graph --var NAME=VALUE RUN_DIR draws it."}
		return
	}
	g := graph.FromLab(b.model)
	if err := g.AddRunFacts(b.model, b.dir); err != nil {
		b.d.Topology = &Topology{Note: "The topology could not be drawn: " + err.Error()}
		return
	}
	g.Redact(b.redactor())
	var dot bytes.Buffer
	if err := graph.WriteDOT(&dot, g); err != nil {
		return
	}
	t := &Topology{DOT: dot.String()}
	b.d.Topology = t
	if b.opts.NoGraphviz {
		return
	}
	if n := len(g.Hosts); n > maxDrawnHosts {
		t.Note = fmt.Sprintf("The topology of %d hosts is not drawn: Graphviz takes minutes to lay out more than %d. Its DOT is below; rlab graph --format svg RUN_DIR draws it.", n, maxDrawnHosts)
		return
	}
	drawn, left, fixed := drawnPart(g, maxDrawnElements)
	if drawn == nil {
		t.Note = fmt.Sprintf("The topology of %d hosts is not drawn: its hosts, links and devices are %d, more than the %d a picture draws. Its DOT is below; rlab graph --format svg RUN_DIR draws it.", len(g.Hosts), fixed, maxDrawnElements)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), topologyTimeout)
	defer cancel()
	var svg bytes.Buffer
	byDot, err := graph.RenderSVG(ctx, &svg, drawn)
	if err != nil {
		t.Note = "Graphviz could not draw the topology: " + err.Error()
		return
	}
	var notes []string
	if left > 0 {
		notes = append(notes, fmt.Sprintf("The picture leaves out %d of the lab's %d workloads: it draws at most %d hosts, links, devices and workloads (Graphviz takes minutes, and the picture megabytes, past that). The DOT below has them all; rlab graph --format svg RUN_DIR draws them.", left, workloads(g), maxDrawnElements))
	}
	if !byDot {
		notes = append(notes, "Drawn without Graphviz; install it (apt-get install graphviz) and run rlab report again for a better layout.")
	}
	t.Note = strings.Join(notes, " ")
	t.Image = template.URL("data:image/svg+xml;base64," + base64.StdEncoding.EncodeToString(svg.Bytes()))
}

// drawnPart is g with at most most elements (hosts, netdevs, devices,
// captures, workloads): every host and what is on it, then two-host
// workloads in lab order, then one-host ones host by host, while there is
// room; left is how many workloads it leaves out. nil when the hosts and
// what is on them (fixed) are already more.
func drawnPart(g *graph.Graph, most int) (drawn *graph.Graph, left, fixed int) {
	fixed = len(g.Hosts)
	for _, h := range g.Hosts {
		fixed += len(h.Netdevs)
		for _, n := range h.Netdevs {
			fixed += len(n.Devices) + len(n.Captures)
		}
	}
	if fixed > most {
		return nil, 0, fixed
	}
	room := most - fixed
	if workloads(g) <= room {
		return g, 0, fixed
	}
	c := *g
	keep := min(room, len(g.Workloads))
	c.Workloads = g.Workloads[:keep]
	room -= keep
	c.Hosts = make([]*graph.Host, len(g.Hosts))
	for i, h := range g.Hosts {
		hc := *h
		k := min(room, len(h.Execs))
		hc.Execs = h.Execs[:k]
		room -= k
		c.Hosts[i] = &hc
	}
	return &c, workloads(g) - workloads(&c), fixed
}

// workloads counts g's workloads: two-host ones (edges) and one-host ones.
func workloads(g *graph.Graph) int {
	n := len(g.Workloads)
	for _, h := range g.Hosts {
		n += len(h.Execs)
	}
	return n
}
