package main

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/rlab-dev/rlab/engine/report"
	"github.com/rlab-dev/rlab/engine/results"
)

func newReportCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "report [RUN]",
		Short: "Render report.html of a run directory again",
		Long: `report (re-)renders report.html in a run directory from what the directory
holds: the lab files as run, every host's facts (kernel, OS, rdma-core and
perftest versions, netdevs, rxe devices with GIDs and MTU), each workload's
numbers as tables and charts (bandwidth and message rate against message size,
latency percentiles), RDMA beside TCP, each capture's opcode summary,
connections and IO graph, the expect results, and links to the raw outputs.
The first 256 captures are analysed; past them the page says how many more
there are (rlab pcap reads any of them), so the page and the memory it takes
stay bounded.

The page is one self-contained file (inline CSS and SVG, no JavaScript, nothing
fetched from the network): open it in any browser, mail it, attach it to CI.
rlab run writes it at the end of every run; use this command after changing
rlab, or on a run directory copied from elsewhere. RUN is taken as rlab show
takes it (a directory, LAB/ID as rlab runs prints it, an id, a lab name); without
it, the newest run under runs/. In a complete run directory, manifest.json's
entry for report.html is brought to the new page and complete.json names the
new manifest; every other entry stays what the run wrote.`,
		Example: `  rlab report runs/quickstart/20261125T210211Z
  rlab report quickstart/20261125T210211Z
  rlab report                  # the newest run
  xdg-open runs/quickstart/20261125T210211Z/report.html`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeRuns,
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := resolveRunArg(cmd, args)
			if err != nil {
				return err
			}
			// The lab under lab/ is loaded under the evaluation guard
			// (evalguard.go): a received run directory's lab is as
			// hostile as any lab rlab validate is given.
			guard := func(lab string) func() { return guardEval(cmd.ErrOrStderr(), lab).stop }
			if err := report.RenderWith(dir, report.Options{Guard: guard}); err != nil {
				return withCode(exitFail, fmt.Errorf("report: %w", err))
			}
			if _, err := results.Rehash(dir, report.FileName); err != nil {
				return withCode(exitFail, fmt.Errorf("report: %w", err))
			}
			fmt.Fprintln(cmd.OutOrStdout(), termText(filepath.Join(dir, report.FileName)))
			return nil
		},
	}
	return cmd
}
