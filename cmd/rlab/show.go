package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/rlab-dev/rlab/engine/rundir"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/rlab-dev/rlab/engine/results"
	"github.com/rlab-dev/rlab/engine/termsafe"
)

func newShowCmd() *cobra.Command {
	var render, students, markdown, counters, asJSON, all bool
	cmd := &cobra.Command{
		Use:   "show [RUN]",
		Short: "Print a run's summary",
		Long: `show prints the summary of a run directory, laid out for a terminal (aligned
tables; --markdown prints summary.md as it is): each workload's result (its
headline, as rlab run prints it) and trouble counters first, then
per-workload tables of bandwidth, message rate and latency percentiles
(medians over repeats; every number in the unit results.json and expect
use), the expects and whether they held, RDMA vs TCP, and where the run's
files are. The full tables of kernel counters are folded to one line per
workload; --counters prints them.
When the run has no summary.md (or with --render) it is rendered from
results.json.

RUN is a run directory, a name as rlab runs prints it (nightly/2026-11-20T020000Z),
a run id alone, a lab name or a folder of runs (runs/, runs/<lab>/: the newest
run); without RUN, the newest run under runs/.
A class lab run's summary lists its students first, the failed ones on
top; from 10 students the ready ones are one line, --all lists them.
With --students it prints the per-student table of a class lab run instead
(as rlab run ends with), each failing expect with what it wanted and got.
With --json it prints the run's results.json in the current schema (version 2,
docs/results.schema.json) whatever rlab wrote it, for scripts and notebooks:
host platforms once, each sample's kind (tool or counter), numbers as
numbers, times in RFC 3339.`,
		Example: `  rlab show                     # the newest run
  rlab show nightly/2026-11-20T020000Z
  rlab show nightly             # the newest run of the lab
  rlab show --markdown nightly >> "$GITHUB_STEP_SUMMARY"
  rlab show --json nightly | jq '.samples[] | select(.kind == "tool")'
  rlab show --students runs/class  # who is ready in the last class run
  rlab show --all runs/class       # every student, the ready ones too`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeRuns,
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			if len(args) > 0 && fileExists(filepath.Join(args[0], "plan.json")) && !fileExists(filepath.Join(args[0], results.ResultsFile)) {
				// A run directory that never got its results.
				return withCode(exitInfra, fmt.Errorf("run %s: incomplete: no %s (still running, or it stopped before writing its results)", args[0], results.ResultsFile))
			}
			dir, err := resolveRunArg(cmd, args)
			if err != nil {
				return err
			}
			// The run as decoded, once (at the decoder's bound a decode
			// takes 23 s and 1 GB): what is printed and the check below
			// share it; printing summary.md decodes nothing.
			var run *results.Run
			readOnce := func(dir string) (*results.Run, error) {
				if run == nil {
					r, err := readRun(dir)
					if err != nil {
						return nil, err
					}
					run = r
				}
				return run, nil
			}
			defer func() {
				// What exists is shown; a run whose files were not all
				// written is an infrastructure failure (exit 2).
				if err != nil {
					return
				}
				why := ""
				if run != nil {
					why = run.Incomplete
				} else {
					why = results.ReadIncomplete(dir)
				}
				if why != "" {
					err = withCode(exitInfra, fmt.Errorf("run %s: %s", dir, why))
				}
			}()
			if asJSON {
				if markdown || counters || students || render || all {
					return withCode(exitFail, errors.New("show: --json prints the whole run; drop --markdown, --counters, --students, --all and --render"))
				}
				r, err := readOnce(dir)
				if err != nil {
					return withCode(exitFail, fmt.Errorf("show: %w", err))
				}
				r.Dir = "" // where this rlab found it, not part of the run
				b, err := json.MarshalIndent(r, "", "  ")
				if err != nil {
					return withCode(exitFail, fmt.Errorf("show: encode run %s: %w", dir, err))
				}
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s\n", termsafe.JSON(b))
				return err
			}
			if students {
				r, err := readOnce(dir)
				if err != nil {
					return withCode(exitFail, fmt.Errorf("show: %w", err))
				}
				if len(r.Students) == 0 {
					return withCode(exitFail, fmt.Errorf("show --students: run %s is not of a class lab (its hosts are not keyed per student)", dir))
				}
				return results.WriteStudentsTable(cmd.OutOrStdout(), r.Students, true, all)
			}
			if !render {
				b, err := rundir.ReadFile(dir, results.SummaryFile)
				if err == nil {
					// A summary.md written by another rlab (or edited) may
					// hold a host's terminal escapes.
					text := termsafe.Block(string(b))
					if !markdown {
						text = string(results.TerminalTextWith([]byte(text), results.Unfold{Counters: counters, Students: all}))
					}
					_, err = io.WriteString(cmd.OutOrStdout(), text)
					return err
				}
				if !errors.Is(err, os.ErrNotExist) {
					return withCode(exitFail, fmt.Errorf("show run %s: %w", dir, err))
				}
			}
			r, err := readOnce(dir)
			if err != nil {
				return withCode(exitFail, fmt.Errorf("show: %w", err))
			}
			b := results.Summary(r, r.Dir)
			if !markdown {
				b = results.TerminalTextWith(b, results.Unfold{Counters: counters, Students: all})
			}
			_, err = cmd.OutOrStdout().Write(b)
			return err
		},
	}
	cmd.Flags().BoolVar(&markdown, "markdown", false, "print the summary as Markdown (summary.md), not laid out for a terminal")
	cmd.Flags().BoolVar(&render, "render", false, "render the summary from results.json even when summary.md exists")
	cmd.Flags().BoolVar(&students, "students", false, "print the per-student table of a class lab run")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the run as JSON (results.json in the current schema)")
	cmd.Flags().BoolVar(&all, "all", false, "list every student of a class lab run, the ready ones too (folded to one line from 10 students)")
	cmd.Flags().BoolVar(&counters, "counters", false, "print the full tables of kernel counters that moved (folded by default)")
	return cmd
}

// readRun is results.ReadRun; tests count the decodes of results.json.
var readRun = results.ReadRun

// resolveRunArg finds the run directory named by args[0] (or the newest run
// when there is none) and says on stderr which one was picked when the
// argument did not name it exactly.
func resolveRunArg(cmd *cobra.Command, args []string) (string, error) {
	ref := ""
	if len(args) > 0 {
		ref = args[0]
	}
	dir, note, err := results.ResolveRun(results.DefaultRunsRoot, ref)
	if err != nil {
		return "", withCode(exitFail, fmt.Errorf("%s: %w", cmd.Name(), err))
	}
	if note != "" {
		fmt.Fprintf(cmd.ErrOrStderr(), "%s: %s\n", cmd.Name(), termText(note))
	}
	return dir, nil
}

// completeRuns completes run names as rlab runs prints them (LAB/ID) and
// lab names, from the run directories under runs/.
func completeRuns(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	runs, _ := results.ListRuns(results.DefaultRunsRoot)
	var out []string
	labs := map[string]bool{}
	for i := len(runs) - 1; i >= 0; i-- {
		r := runs[i]
		if rel, err := filepath.Rel(results.DefaultRunsRoot, r.Dir); err == nil {
			out = append(out, rel+"\t"+r.Status)
		}
		if !labs[r.Lab] {
			labs[r.Lab] = true
			out = append(out, r.Lab+"\tnewest run of the lab")
		}
	}
	return out, cobra.ShellCompDirectiveDefault
}

// completeRuns2 completes the two runs of compare.
func completeRuns2(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) >= 2 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return completeRuns(cmd, nil, toComplete)
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
