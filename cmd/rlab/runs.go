package main

import (
	"encoding/json"
	"fmt"
	"github.com/rlab-dev/rlab/engine/termsafe"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rlab-dev/rlab/engine/results"
)

// runListing is one line of `rlab runs --json`.
type runListing struct {
	Dir       string    `json:"dir"`
	Lab       string    `json:"lab"`
	ID        string    `json:"id"`
	Started   time.Time `json:"started,omitzero"` // RFC 3339, UTC
	Type      string    `json:"kind"`             // "run", or "check" for rlab check --validate
	Status    string    `json:"status"`
	Workloads int       `json:"workloads"`
	OK        int       `json:"ok"`
	Headline  []string  `json:"headline,omitempty"`
}

func newRunsCmd() *cobra.Command {
	var (
		asJSON  bool
		last    bool
		lab     string
		status  string
		before  string
		runType string
	)
	cmd := &cobra.Command{
		Use:   "runs [DIR]",
		Short: "List run directories with their status and headline numbers",
		Long: `runs lists the run directories under DIR (default "runs", where rlab run
writes them as runs/<lab>/<UTC timestamp>/), oldest first, with each run's
status, how many workloads ended ok, and one headline figure per workload
(bandwidth at the largest size, or typical latency). --status ok --json gives a
nightly job the runs to compare against; --last prints only the newest matching
run's directory (nothing when none matches), for scripts. Student checks
(rlab check --validate, run directories named check-<timestamp>) are not
runs of the whole lab and are left out unless --kind check or --kind all asks
for them, so a check never becomes a nightly job's baseline.`,
		Example: `  rlab runs
  rlab runs --lab nightly --status ok --json
  prev=$(rlab runs --lab nightly --status ok --last)`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			root := "runs"
			if len(args) == 1 {
				root = args[0]
			}
			runs, errs := results.ListRuns(root)
			if len(runs) == 0 && len(errs) > 0 {
				return withCode(exitFail, errs[0])
			}
			switch runType {
			case "run", "check", "all":
			default:
				return withCode(exitFail, fmt.Errorf("--kind %q: want run, check or all", runType))
			}
			var ref *results.Run
			if before != "" {
				r, err := results.ReadRun(before)
				if err != nil {
					return withCode(exitFail, fmt.Errorf("--before: %w", err))
				}
				ref = r
			}
			var list []runListing
			for _, r := range runs {
				if lab != "" && r.Lab != lab {
					continue
				}
				k := "run"
				if r.Check {
					k = "check"
				}
				if runType != "all" && k != runType {
					continue
				}
				st := r.Status
				if r.Incomplete != "" {
					st = "incomplete" // its files were not all written (disk full, stopped)
				}
				if status != "" && st != status {
					continue
				}
				if ref != nil && (!r.Started.Before(ref.Started) || sameDir(r.Dir, ref.Dir)) {
					continue
				}
				l := runListing{Dir: r.Dir, Lab: r.Lab, ID: r.ID, Type: k, Status: st, Workloads: r.Listed, OK: r.ListedOK, Headline: r.Glance}
				l.Started = r.Started.UTC()
				list = append(list, l)
			}
			out := cmd.OutOrStdout()
			for _, err := range errs {
				fmt.Fprintln(cmd.ErrOrStderr(), "warning:", termText(err.Error()))
			}
			if last {
				if len(list) > 0 {
					fmt.Fprintln(out, termText(list[len(list)-1].Dir))
				}
				return nil
			}
			if asJSON {
				if list == nil {
					list = []runListing{}
				}
				b, err := json.MarshalIndent(list, "", "  ")
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(out, "%s\n", termsafe.JSON(b))
				return err
			}
			if len(list) == 0 {
				fmt.Fprintf(out, "no runs under %s\n", termText(root))
				return nil
			}
			tw := termsafe.NewTable(out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "RUN\tSTARTED (UTC)\tSTATUS\tWORKLOADS OK\tHEADLINE")
			for _, l := range list {
				dir := l.Dir
				if rel, err := filepath.Rel(root, l.Dir); err == nil && !strings.HasPrefix(rel, "..") && rel != "." {
					dir = rel
				}
				head := l.Headline
				if len(head) > 3 { // a class lab has hundreds; --json has them all
					head = append(head[:3:3], fmt.Sprintf("… %d more", len(l.Headline)-3))
				}
				st := l.Status
				if l.Type == "check" {
					st += " (check)"
				}
				// A run directory received from someone else names its
				// folder, status and headline: escaped, as every output.
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d/%d\t%s\n", termText(dir), termText(startedText(l.Started)), termText(st), l.OK, l.Workloads, termText(strings.Join(head, "; ")))
			}
			return tw.Flush()
		},
	}
	f := cmd.Flags()
	f.BoolVar(&asJSON, "json", false, "print the list as JSON")
	f.BoolVar(&last, "last", false, "print only the directory of the newest matching run")
	f.StringVar(&lab, "lab", "", "only runs of this lab")
	f.StringVar(&status, "status", "", "only runs with this status (ok, failed, error, interrupted, incomplete)")
	f.StringVar(&runType, "kind", "run", "which run directories: run (whole-lab runs), check (rlab check --validate) or all")
	f.StringVar(&before, "before", "", "only runs that started before the run in `RUN_DIR`")
	return cmd
}

func sameDir(a, b string) bool {
	aa, err1 := filepath.Abs(a)
	bb, err2 := filepath.Abs(b)
	return err1 == nil && err2 == nil && aa == bb
}

// startedText is when a run started, as the table prints it ("" unknown).
func startedText(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Format("2006-01-02 15:04:05")
}
