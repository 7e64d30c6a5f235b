package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/rlab-dev/rlab/engine/results"
	"github.com/rlab-dev/rlab/engine/termsafe"
)

func newShowCmd() *cobra.Command {
	var render, students bool
	cmd := &cobra.Command{
		Use:   "show RUN_DIR",
		Short: "Print a run's summary",
		Long: `show prints the summary.md of a run directory: per-workload tables of
bandwidth, message rate and latency percentiles (medians over repeats), the
expects and whether they held, RDMA vs TCP, and where the run's files are.
When the run has no summary.md (or with --render) it is rendered from
results.json. Given a folder of runs (runs/, runs/<lab>/) it shows the newest.
With --students it prints the per-student table of a class lab run instead
(as rlab run ends with), each failing expect with what it wanted and got.`,
		Example: `  rlab show runs/nightly/2026-11-20T020000Z
  rlab show runs/nightly        # the newest run of the lab
  rlab show --students runs/class  # who is ready in the last class run`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			dir := args[0]
			defer func() {
				// What exists is shown; a run whose files were not all
				// written is an infrastructure failure (exit 2).
				r, rerr := results.ReadRun(dir)
				switch {
				case err == nil && rerr == nil && r.Incomplete != "":
					err = withCode(exitInfra, fmt.Errorf("run %s: %s", dir, r.Incomplete))
				case rerr != nil && fileExists(filepath.Join(dir, "plan.json")) && !fileExists(filepath.Join(dir, results.ResultsFile)):
					err = withCode(exitInfra, fmt.Errorf("run %s: incomplete: no %s (still running, or it stopped before writing its results)", dir, results.ResultsFile))
				}
			}()
			if _, err := os.Stat(filepath.Join(dir, results.ResultsFile)); errors.Is(err, os.ErrNotExist) {
				if runs, _ := results.ListRuns(dir); len(runs) > 0 {
					dir = runs[len(runs)-1].Dir
					fmt.Fprintf(cmd.ErrOrStderr(), "showing the newest run under %s: %s\n", args[0], dir)
				}
			}
			if students {
				r, err := results.ReadRun(dir)
				if err != nil {
					return withCode(exitFail, fmt.Errorf("show: %w", err))
				}
				if len(r.Students) == 0 {
					return withCode(exitFail, fmt.Errorf("show --students: run %s is not of a class lab (its workloads have no for_each keys)", dir))
				}
				return results.WriteStudentsTable(cmd.OutOrStdout(), r.Students, true)
			}
			if !render {
				b, err := os.ReadFile(filepath.Join(dir, results.SummaryFile))
				if err == nil {
					// A summary.md written by another rlab (or edited) may
					// hold a host's terminal escapes.
					_, err = io.WriteString(cmd.OutOrStdout(), termsafe.Block(string(b)))
					return err
				}
				if !errors.Is(err, os.ErrNotExist) {
					return withCode(exitFail, fmt.Errorf("show run %s: %w", dir, err))
				}
			}
			r, err := results.ReadRun(dir)
			if err != nil {
				return withCode(exitFail, fmt.Errorf("show: %w", err))
			}
			_, err = cmd.OutOrStdout().Write(results.Summary(r, r.Dir))
			return err
		},
	}
	cmd.Flags().BoolVar(&render, "render", false, "render the summary from results.json even when summary.md exists")
	cmd.Flags().BoolVar(&students, "students", false, "print the per-student table of a class lab run")
	return cmd
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
