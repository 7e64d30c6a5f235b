package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rlab-dev/rlab/engine/graph"
	"github.com/rlab-dev/rlab/engine/lab"
)

func newGraphCmd() *cobra.Command {
	var (
		format string
		out    string
		vars   []string
	)
	cmd := &cobra.Command{
		Use:   "graph PATH_OR_RUN_DIR",
		Short: "Draw a lab's topology: hosts, netdevs, rxe devices, captures and the workloads between them",
		Long: `graph draws the topology of a lab file or folder, or of a run directory: every
host with the netdevs the lab uses, the rxe devices on them, the captures, and
each workload as an edge from its client to its server, labelled with its name
and tool (RDMA workloads solid between rxe devices, TCP dashed between hosts,
exec workloads beside their host).

Given a run directory, the hosts' facts from that run add what only a live host
knows: hostname, OS and kernel, addresses and MTU, and for each RDMA device its
kind, parent netdev, node GUID, port state, active/max MTU and RoCE v2 GIDs.

--format dot (the default) prints Graphviz DOT; --format svg renders it with
Graphviz's dot when it is installed (apt-get install graphviz), else with a
simple built-in layout (hosts side by side, workloads as curves between them).
dot gets 60 s to lay a graph out; a larger one is drawn with the simple layout
(--format dot and dot -Tsvg draw it without a bound).`,
		Example: `  rlab graph labs/quickstart.hcl | dot -Tpng > topology.png
  rlab graph --format svg -o topology.svg runs/quickstart/20261125T210211Z
  rlab graph --var netdev=ens4 labs/class.hcl`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "dot" && format != "svg" {
				return withCode(exitFail, fmt.Errorf("--format must be dot or svg, not %q", format))
			}
			opts := lab.LoadOptions{Vars: map[string]string{}, Env: os.Environ()}
			for _, v := range vars {
				k, val, ok := strings.Cut(v, "=")
				if !ok || k == "" {
					return withCode(exitFail, fmt.Errorf("--var %q: want NAME=VALUE", v))
				}
				opts.Vars[k] = val
			}
			guard := guardEval(cmd.ErrOrStderr(), args[0])
			g, l, diags, err := graph.LoadLab(args[0], opts)
			guard.stop()
			maskOutput(cmd, l)
			writeDiags(cmd.ErrOrStderr(), l, diags)
			if err != nil {
				return withCode(exitFail, fmt.Errorf("graph: %w", err))
			}
			var w io.Writer = cmd.OutOrStdout()
			var f *os.File
			if out != "" && out != "-" {
				f, err = os.Create(out)
				if err != nil {
					return withCode(exitFail, fmt.Errorf("graph: %w", err))
				}
				w = f
			}
			if format == "svg" {
				err = drawSVG(cmd.Context(), w, cmd.ErrOrStderr(), g, graphDrawTime)
			} else {
				err = graph.WriteDOT(w, g)
			}
			if f != nil {
				if cerr := f.Close(); err == nil {
					err = cerr
				}
			}
			if err != nil {
				return withCode(exitFail, fmt.Errorf("graph: write %s: %w", format, err))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "dot", "output format: dot or svg")
	cmd.Flags().StringVarP(&out, "output", "o", "", "write to this file instead of stdout")
	cmd.Flags().StringArrayVar(&vars, "var", nil, "set a lab variable (NAME=VALUE), repeatable")
	return cmd
}

// graphDrawTime bounds Graphviz's layout of one graph. dot's time grows
// far faster than the graph: a 600-byte lab of 500 hosts and 5,000
// workloads took it 46 s of one core, 1,000 hosts and 10,000 workloads
// minutes (SECURITY 108), while the lab loaded in a second under the
// evaluation guard. Past it the simple layout (linear) draws the graph.
const graphDrawTime = 60 * time.Second

// drawSVG writes g as SVG to w: by Graphviz's dot within limit, else (dot
// not installed, or past limit) by the simple layout, saying which on
// note.
func drawSVG(ctx context.Context, w, note io.Writer, g *graph.Graph, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	dot, err := graph.RenderSVG(ctx, w, g)
	switch {
	case err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		fmt.Fprintf(note, "note: graphviz `dot` took longer than %s to lay out %d hosts and %d workloads; drew a simple layout (rlab graph --format dot and dot -Tsvg draw it without a bound)\n",
			limit, len(g.Hosts), len(g.Workloads))
		return graph.WriteSimpleSVG(w, g)
	case err == nil && !dot:
		fmt.Fprintln(note, "note: graphviz `dot` is not installed; drew a simple layout (apt-get install graphviz for a better one)")
	}
	return err
}
