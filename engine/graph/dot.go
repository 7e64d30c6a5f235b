package graph

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/rlab-dev/rlab/engine/termsafe"
	"io"
	"os/exec"
	"strings"
	"time"
)

// WriteDOT writes g in Graphviz DOT. The output is deterministic (lab
// order), so it can be diffed and kept under version control.
func WriteDOT(w io.Writer, g *Graph) error {
	var b strings.Builder
	fmt.Fprintf(&b, "digraph %s {\n", quote("rlab "+g.Name))
	fmt.Fprintf(&b, "  graph [rankdir=LR, compound=true, fontname=\"DejaVu Sans\", fontsize=12, labelloc=t, label=%s];\n", quote("lab "+g.Name))
	b.WriteString("  node [fontname=\"DejaVu Sans\", fontsize=10, shape=box, style=rounded];\n")
	b.WriteString("  edge [fontname=\"DejaVu Sans\", fontsize=9];\n")
	for _, h := range g.Hosts {
		fmt.Fprintf(&b, "  subgraph %s {\n", quote("cluster_"+h.ID))
		fmt.Fprintf(&b, "    label=%s; style=\"rounded,dashed\"; color=\"#8c959f\";\n", quote(h.Name))
		fmt.Fprintf(&b, "    %s [shape=box3d, style=filled, fillcolor=\"#f6f8fa\", label=%s];\n", quote(h.ID), label(append([]string{"host " + h.Name}, h.Detail...)))
		for _, n := range h.Netdevs {
			fmt.Fprintf(&b, "    %s [shape=box, style=\"rounded,filled\", fillcolor=\"#fff8c5\", label=%s];\n", quote(n.ID), label(append([]string{"netdev " + n.Name}, n.Detail...)))
			fmt.Fprintf(&b, "    %s -> %s [arrowhead=none, color=\"#8c959f\"];\n", quote(h.ID), quote(n.ID))
			for _, r := range n.Devices {
				head := "rdma " + r.Device
				if r.Ref != "" && r.Ref != r.Device {
					head += " (" + r.refKind() + "." + r.Ref + ")"
				}
				fmt.Fprintf(&b, "    %s [shape=box, style=\"rounded,filled\", fillcolor=\"#ddf4ff\", label=%s];\n", quote(r.ID), label(append([]string{head}, r.Detail...)))
				fmt.Fprintf(&b, "    %s -> %s [arrowhead=none, color=\"#8c959f\", label=\"parent\"];\n", quote(n.ID), quote(r.ID))
			}
			for _, c := range n.Captures {
				fmt.Fprintf(&b, "    %s [shape=note, style=filled, fillcolor=\"#fbefff\", label=%s];\n", quote(c.ID), label(append([]string{"capture " + c.Name}, c.Detail...)))
				fmt.Fprintf(&b, "    %s -> %s [arrowhead=none, style=dotted];\n", quote(n.ID), quote(c.ID))
			}
		}
		for _, x := range h.Execs {
			fmt.Fprintf(&b, "    %s [shape=component, label=%s];\n", quote(x.ID), label([]string{"workload " + x.Name, x.Tool}))
			fmt.Fprintf(&b, "    %s -> %s [arrowhead=none, style=dashed];\n", quote(h.ID), quote(x.ID))
		}
		b.WriteString("  }\n")
	}
	for _, e := range g.Workloads {
		style := "color=\"#0969da\", penwidth=2"
		if !e.RDMA {
			style = "color=\"#6e7781\", penwidth=2, style=dashed"
		}
		fmt.Fprintf(&b, "  %s -> %s [%s, label=%s];\n", quote(e.From), quote(e.To), style, label([]string{e.Name, e.Tool}))
	}
	b.WriteString("}\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// quote makes a DOT double-quoted string. Backslashes are doubled so a
// string can never end the quote or inject an escape of DOT's own.
func quote(s string) string {
	return `"` + quoteEscapes.Replace(safeLines(s)) + `"`
}

// The replacers of quote and label, built once (a class of 1,000 hosts
// quotes thousands of strings).
var (
	quoteEscapes = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", "")
	labelEscapes = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", " ")
)

// safeLines escapes every control character of s but its newlines
// (termsafe): facts come from hosts, names from labs, and a control
// character printed by rlab graph would reach the terminal, and in the
// SVG made from the DOT it is not XML at all (the picture did not load).
func safeLines(s string) string {
	parts := strings.Split(strings.ReplaceAll(s, "\r", ""), "\n")
	for i, p := range parts {
		parts[i] = termsafe.Line(p)
	}
	return strings.Join(parts, "\n")
}

// label joins lines into a DOT label, each centred.
func label(lines []string) string {
	for i, l := range lines {
		lines[i] = labelEscapes.Replace(safeLines(l))
	}
	return `"` + strings.Join(lines, `\n`) + `"`
}

// ErrNoDot says Graphviz is missing.
var ErrNoDot = errors.New("graphviz `dot` is not installed (Debian/Ubuntu: apt-get install graphviz); use --format dot and render it elsewhere")

// WriteSVG renders g as SVG with Graphviz's dot, which must be on PATH.
func WriteSVG(ctx context.Context, w io.Writer, g *Graph) error {
	bin, err := exec.LookPath("dot")
	if err != nil {
		return ErrNoDot
	}
	var in, out, stderr bytes.Buffer
	if err := WriteDOT(&in, g); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, bin, "-Tsvg")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = &in, &out, &stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("render graph with %s -Tsvg: %w: %s", bin, err, strings.TrimSpace(stderr.String()))
	}
	_, err = w.Write(out.Bytes())
	return err
}

// RenderSVG draws g with Graphviz when `dot` is installed, else with
// WriteSimpleSVG; dot says which drew it.
func RenderSVG(ctx context.Context, w io.Writer, g *Graph) (dot bool, err error) {
	var buf bytes.Buffer
	err = WriteSVG(ctx, &buf, g)
	if errors.Is(err, ErrNoDot) {
		return false, WriteSimpleSVG(w, g)
	}
	if err != nil {
		return true, err
	}
	_, err = w.Write(buf.Bytes())
	return true, err
}
