package report

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"html/template"
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
	ctx, cancel := context.WithTimeout(context.Background(), topologyTimeout)
	defer cancel()
	var svg bytes.Buffer
	byDot, err := graph.RenderSVG(ctx, &svg, g)
	if err != nil {
		t.Note = "Graphviz could not draw the topology: " + err.Error()
		return
	}
	if !byDot {
		t.Note = "Drawn without Graphviz; install it (apt-get install graphviz) and run rlab report again for a better layout."
	}
	t.Image = template.URL("data:image/svg+xml;base64," + base64.StdEncoding.EncodeToString(svg.Bytes()))
}
