package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rlab-dev/rlab/engine/results"
)

func newCompareCmd() *cobra.Command {
	var (
		threshold string
		perMetric []string
		asJSON    bool
		asMD      bool
		junitPath string
	)
	cmd := &cobra.Command{
		Use:   "compare RUN_A RUN_B",
		Short: "Compare two runs' results and fail on a regression",
		Long: `compare matches the samples of two run directories (A the baseline, B the
new run) by workload, metric, message size and hosts, folds repeats into
medians and prints the change of each, with the repeats' spread (±).
Bandwidth, message rate and rping counts are better higher; latencies are
better lower.

A measurement regressed when it moved the wrong way by more than its
threshold (the --metric-threshold for its metric, else the threshold the lab
recorded for it, else --threshold) AND beyond the runs' own variation: with 4
or more repeats per run by a Mann-Whitney U test at alpha 0.05
(golang.org/x/perf/benchmath, as benchstat), with 2 or 3 by the repeats'
ranges not overlapping; with one repeat the threshold alone decides. A change
within the variation shows as "~" and does not fail. A measurement A has and B
lacks (a workload that failed) counts as a regression too. exit_code and
duration are compared only when given a --metric-threshold.

Warnings (stdout, and JUnit properties) say when there were too few repeats to
tell noise from change, and when the runs differ in lab, hosts, kernel, OS or
tool versions (from each host's facts.json).

Exit status: 0 no regression, 1 a regression (or a run could not be read).`,
		Example: `  rlab compare runs/nightly/2026-11-20T020000Z runs/nightly/2026-11-21T020000Z
  rlab compare nightly/2026-11-20T020000Z nightly/2026-11-21T020000Z   # as rlab runs names them
  rlab compare --threshold 5% --metric-threshold lat_p99=20% A B
  rlab compare --json A B > delta.json
  rlab compare --junit compare.xml A B
  rlab compare --markdown A B >> "$GITHUB_STEP_SUMMARY"`,
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: completeRuns2,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts := results.CompareOptions{MetricThresholds: map[string]float64{}}
			t, err := results.ParsePercent(threshold)
			if err != nil {
				return withCode(exitFail, fmt.Errorf("--threshold: %w", err))
			}
			opts.Threshold = t
			for _, kv := range perMetric {
				name, val, ok := strings.Cut(kv, "=")
				if !ok {
					return withCode(exitFail, fmt.Errorf("--metric-threshold %q: want METRIC=PERCENT, e.g. bw_avg=5%%", kv))
				}
				m, _, known := results.ResolveMetric(name) // an older expect name means its metric
				if !known {
					return withCode(exitFail, fmt.Errorf("--metric-threshold %q: unknown metric %q (known: %s)", kv, name, metricNames()))
				}
				name = m.Name
				v, err := results.ParsePercent(val)
				if err != nil {
					return withCode(exitFail, fmt.Errorf("--metric-threshold %q: %w", kv, err))
				}
				opts.MetricThresholds[name] = v
			}
			// A run as rlab runs names it (LAB/ID, an id) as well as a directory.
			for i, arg := range args {
				if _, err := os.Stat(arg); err != nil {
					if d, _, rerr := results.ResolveRun(results.DefaultRunsRoot, arg); rerr == nil {
						args[i] = d
					}
				}
			}
			a, err := results.ReadRun(args[0])
			if err != nil {
				return withCode(exitFail, err)
			}
			b, err := results.ReadRun(args[1])
			if err != nil {
				return withCode(exitFail, err)
			}
			c := results.Compare(a, b, opts)
			out := cmd.OutOrStdout()
			if asJSON && asMD {
				return withCode(exitFail, fmt.Errorf("--json and --markdown: choose one"))
			}
			if asMD {
				if err := c.WriteMarkdown(out); err != nil {
					return withCode(exitFail, err)
				}
			} else if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(c); err != nil {
					return withCode(exitFail, err)
				}
			} else if err := c.WriteText(out); err != nil {
				return withCode(exitFail, err)
			}
			if junitPath != "" {
				x, err := c.JUnit()
				if err != nil {
					return withCode(exitFail, fmt.Errorf("render JUnit of the comparison: %w", err))
				}
				if err := os.WriteFile(junitPath, x, 0o644); err != nil {
					return withCode(exitFail, fmt.Errorf("write JUnit of the comparison: %w", err))
				}
			}
			if c.Failed() {
				return withCode(exitFail, fmt.Errorf("%d measurement(s) regressed and %d missing in %s against %s",
					c.Regressed, c.Missing, args[1], args[0]))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&threshold, "threshold", "10%", "allowed change in the worse direction, for every metric without its own threshold")
	f.StringArrayVar(&perMetric, "metric-threshold", nil, "`METRIC=PERCENT` threshold for one metric (repeatable), e.g. bw_avg=5%")
	f.BoolVar(&asJSON, "json", false, "print the comparison as JSON")
	f.BoolVar(&asMD, "markdown", false, "print the comparison as a Markdown table (CI job summaries)")
	f.StringVar(&junitPath, "junit", "", "also write the comparison as JUnit XML to `FILE`")
	return cmd
}

func metricNames() string {
	var n []string
	for _, m := range results.Metrics() {
		n = append(n, m.Name)
	}
	return strings.Join(n, ", ")
}
