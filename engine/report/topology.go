package report

import (
	"bytes"
	"context"
	"encoding/base64"
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
