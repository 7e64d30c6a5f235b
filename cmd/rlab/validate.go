package main

import (
	"fmt"
	"github.com/rlab-dev/rlab/engine/termsafe"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/spf13/cobra"
)

func newValidateCmd() *cobra.Command {
	var vf varFlags
	var asJSON, allowEmpty bool
	cmd := &cobra.Command{
		Use:   "validate [-json] [-var NAME=VALUE]... PATH...",
		Short: "Check lab files without touching any host",
		Long: `validate loads each lab (a file, or a folder of *.hcl files), evaluates its
variables, locals, for_each and count, and checks every reference, type, unit
and tool option. It reports all errors at once, each with the file, line and
column, the source line and how to fix it.

A folder whose files each declare their own lab block (like labs/) is checked
as that many labs; otherwise its files together make one lab.

With -json, stdout holds only one JSON object:
  {"valid": bool, "error_count": N, "warning_count": N,
   "diagnostics": [{"severity": "error"|"warning", "summary": "...", "detail": "...",
                    "range": {"filename": "...", "start": {"line","column","byte"},
                              "end": {...}}}]}

A lab with no workload (a for_each over an empty map, a student list not
filled in) is an error naming what came out empty, unless --allow-empty.

Exit status: 0 valid, 1 invalid.`,
		Example: `  rlab validate labs/quickstart.hcl
  rlab validate labs/
  rlab validate -json -var server=10.0.0.5 labs/walkthrough.hcl`,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			paths, done, err := parseLabFlags(cmd, args)
			if done || err != nil {
				return err
			}
			if len(paths) == 0 {
				paths = []string{"."}
			}
			opts, err := vf.options()
			if err != nil {
				return err
			}
			var all hcl.Diagnostics
			for _, p := range paths {
				// Splitting a folder parses each of its files: under
				// the guard too (attack round 17, labs: a folder's 4 MB
				// tuple took 25 s and 1.9 GB before any lab's guard).
				g := guardEval(cmd.ErrOrStderr(), p)
				labs, diags := lab.Split(p)
				g.stop()
				all = append(all, diags...)
				if !asJSON {
					writeDiags(cmd.ErrOrStderr(), nil, diags)
				}
				for _, u := range labs {
					guard := guardEval(cmd.ErrOrStderr(), unitName(p, u)) // each lab its own bound (evalguard.go)
					l, diags := lab.Load(u, opts)
					guard.stop()
					maskOutput(cmd, l)
					if !diags.HasErrors() {
						diags = append(diags, emptyLab(l, allowEmpty)...)
					}
					redact := lab.Redact(l)
					for _, d := range diags {
						c := *d
						c.Summary, c.Detail = redact(d.Summary), redact(d.Detail)
						all = append(all, &c)
					}
					if asJSON {
						continue
					}
					writeDiags(cmd.ErrOrStderr(), l, diags)
					if !diags.HasErrors() {
						fmt.Fprintf(cmd.OutOrStdout(), "%s: lab %q is valid (%s)\n", termsafe.Line(unitName(p, u)), l.Name, counts(l))
					}
				}
			}
			if asJSON {
				b, err := lab.MarshalJSONResult(all)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s\n", termsafe.JSON(b))
			}
			if all.HasErrors() {
				if !asJSON {
					n := 0
					for _, d := range all {
						if d.Severity == hcl.DiagError {
							n++
						}
					}
					fmt.Fprintf(cmd.ErrOrStderr(), "%d error(s).\n", n)
				}
				return withCode(exitFail, nil)
			}
			return nil
		},
	}
	vf.register(cmd.Flags())
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON on stdout")
	allowEmptyFlag(cmd.Flags(), &allowEmpty)
	return cmd
}

func unitName(arg string, files []string) string {
	if len(files) == 1 {
		return files[0]
	}
	return arg
}

func counts(l *lab.Lab) string {
	plural := func(n int, s string) string {
		if n == 1 {
			return fmt.Sprintf("%d %s", n, s)
		}
		return fmt.Sprintf("%d %ss", n, s)
	}
	// RDMA devices by block kind, in the order the blocks are decoded:
	// "2 rxe", or "2 siw, 2 rdma" (a lab without any says "0 rxe").
	n := map[string]int{}
	for _, r := range l.Devices {
		n[r.Block]++
	}
	var devs []string
	for _, k := range lab.DeviceBlocks {
		if n[k] > 0 || (k == "rxe" && len(l.Devices) == 0) {
			devs = append(devs, fmt.Sprintf("%d %s", n[k], k))
		}
	}
	return fmt.Sprintf("%s, %s, %s, %s", plural(len(l.Hosts), "host"), strings.Join(devs, ", "), plural(len(l.Captures), "capture"), plural(len(l.Workloads), "workload"))
}
