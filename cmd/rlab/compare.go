package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/rlab-dev/rlab/engine/termsafe"
	"io"
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
		allowInc  bool
		counters  bool
		all       bool
	)
	cmd := &cobra.Command{
		Use:   "compare RUN_A RUN_B",
		Short: "Compare two runs' results and fail on a regression",
		Long: `compare matches the samples of two run directories (A the baseline, B the
new run) by workload, metric, message size and hosts, folds repeats into
medians and prints the change of each, with the repeats' spread (±), after
each workload's result in A and in B (its headline, as rlab run prints it).
By default it compares each workload's headline figures (bandwidth and
message rate, typical and p99 latency, TCP throughput...), each in the unit
results.json and expect use; --all-metrics adds the others (peak bandwidth,
every latency percentile), --counters the kernel's trouble counters
(retransmissions, sequence errors, drops: from none to some is a
regression). Bandwidth, message rate and rping counts are better higher;
latencies are better lower.

A measurement regressed when it moved the wrong way by more than its
threshold (the --metric-threshold for its metric, else the threshold the lab
recorded for it, else --threshold) AND beyond the runs' own variation: with 4
or more repeats per run by a Mann-Whitney U test at alpha 0.05
(golang.org/x/perf/benchmath, as benchstat), with 2 or 3 by the repeats'
ranges not overlapping; with one repeat the threshold alone decides. A change
within the variation shows as "~" and does not fail. A measurement A has and B
lacks (a workload that failed) counts as a regression too. exit_code,
duration and traffic counters (packets, bytes) are compared only when given
a --metric-threshold. --junit writes one test case per workload, failed
when one of its measurements regressed or went missing.

Warnings (stdout, and JUnit properties) say when there were too few repeats to
tell noise from change, and when the runs differ in lab, hosts, kernel, OS or
tool versions (from each host's facts.json).

A run that did not finish writing its files (no complete.json, as rlab runs
shows "incomplete") is refused (exit 2): its measurements may be missing or
cut short. --allow-incomplete compares it anyway, with a warning on stderr.

Exit status: 0 no regression, 1 a regression (or a run could not be read),
2 a run is incomplete.`,
		Example: `  rlab compare runs/nightly/2026-11-20T020000Z runs/nightly/2026-11-21T020000Z
  rlab compare nightly/2026-11-20T020000Z nightly/2026-11-21T020000Z   # as rlab runs names them
  rlab compare --threshold 5% --metric-threshold lat_p99=20% A B
  rlab compare --json A B > delta.json
  rlab compare --junit compare.xml A B
  rlab compare --markdown A B >> "$GITHUB_STEP_SUMMARY"`,
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: completeRuns2,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts := results.CompareOptions{MetricThresholds: map[string]float64{}, Counters: counters, AllMetrics: all}
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
			for i, r := range []*results.Run{a, b} {
				if r.Incomplete == "" {
					continue
				}
				if !allowInc {
					return withCode(exitInfra, fmt.Errorf("run %s: %s; compare refuses it, as its measurements may be missing (--allow-incomplete compares it anyway)", args[i], r.Incomplete))
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "WARNING: run %s: %s; comparing it anyway (--allow-incomplete): measurements may be missing\n", termText(args[i]), termText(r.Incomplete))
			}
			c := results.Compare(a, b, opts)
			out := cmd.OutOrStdout()
			if asJSON && asMD {
				return withCode(exitFail, fmt.Errorf("--json and --markdown: choose one"))
			}
			// Both runs may come from someone else: their names, lab and
			// statuses are escaped, as every output (termsafe).
			var buf bytes.Buffer
			if asMD {
				if err := c.WriteMarkdown(&buf); err != nil {
					return withCode(exitFail, err)
				}
			} else if asJSON {
				b, err := json.MarshalIndent(c, "", "  ")
				if err != nil {
					return withCode(exitFail, err)
				}
				buf.Write(termsafe.JSON(b))
				buf.WriteByte('\n')
			} else if err := c.WriteText(&buf); err != nil {
				return withCode(exitFail, err)
			}
			text := buf.String()
			if !asJSON {
				text = termsafe.Block(text)
			}
			if _, err := io.WriteString(out, text); err != nil {
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
	f.BoolVar(&allowInc, "allow-incomplete", false, "compare a run that did not finish writing its files (no complete.json) instead of refusing it (exit 2), with a warning")
	f.StringVar(&junitPath, "junit", "", "also write the comparison as JUnit XML to `FILE` (a test case per workload)")
	f.BoolVar(&counters, "counters", false, "also compare the kernel's trouble counters (retransmissions, sequence errors, drops)")
	f.BoolVar(&all, "all-metrics", false, "compare every metric of the tools, not only each workload's headline figures")
	return cmd
}

func metricNames() string {
	var n []string
	for _, m := range results.Metrics() {
		n = append(n, m.Name)
	}
	return strings.Join(n, ", ")
}
