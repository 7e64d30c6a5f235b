package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/engine/termsafe"
	"github.com/spf13/cobra"
)

func newFmtCmd() *cobra.Command {
	var check, diff bool
	cmd := &cobra.Command{
		Use:   "fmt [-check] [-diff] [PATH]...",
		Short: "Rewrite lab files in the canonical HCL layout",
		Long: `fmt rewrites lab files (a file, or the *.hcl files of a folder; default the
current folder) in the canonical HCL layout: indentation, aligned equals
signs, spacing. It changes layout only, never meaning, and prints the names of
the files it changed.

-check changes nothing and exits 1 if any file is not formatted (for CI).
-diff prints the changes as a unified diff.`,
		Example: `  rlab fmt labs/
  rlab fmt -check -diff labs/quickstart.hcl`,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			paths, done, err := parseLabFlags(cmd, args)
			if done || err != nil {
				return err
			}
			if len(paths) == 0 {
				paths = []string{"."}
			}
			// fmt evaluates nothing, but lexes and rewrites whole
			// files: bounded as a lab's evaluation is, once for the
			// command (evalguard.go; each file is bounded first by
			// lab.MaxTokens, with its position).
			guard := fmtGuard(cmd.ErrOrStderr(), paths)
			defer guard.stop()
			files, err := hclFiles(paths)
			if err != nil {
				return withCode(exitFail, err)
			}
			var diags hcl.Diagnostics
			unformatted := 0
			for _, f := range files {
				// As validate reads it: a course repository's folder
				// may hold a FIFO named *.hcl (read for good), a
				// symlink to /dev/zero, or one to a file of yours
				// outside it (printed by -diff, copied in by the write).
				src, err := lab.ReadLabFile(f)
				if err != nil {
					diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Cannot read lab file", Detail: fmt.Sprintf("Could not read %s: %s.", f, err)})
					continue
				}
				out, d := lab.Format(f, src)
				diags = append(diags, d...)
				if d.HasErrors() || bytes.Equal(src, out) {
					continue
				}
				unformatted++
				// A course repository's file names and lines reach
				// the terminal: escaped (an OSC in a comment set the
				// window title, CSI 2J cleared the screen).
				name := termsafe.Line(f)
				fmt.Fprintln(cmd.OutOrStdout(), name)
				if diff {
					fmt.Fprint(cmd.OutOrStdout(), termsafe.Block(lab.UnifiedDiff(name, src, out)))
				}
				if !check {
					if err := writeSame(f, out); err != nil {
						return withCode(exitFail, fmt.Errorf("fmt %s: %w", f, err))
					}
				}
			}
			writeDiags(cmd.ErrOrStderr(), nil, diags)
			if diags.HasErrors() || (check && unformatted > 0) {
				return withCode(exitFail, nil)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&check, "check", false, "change nothing; exit 1 if a file is not formatted")
	cmd.Flags().BoolVar(&diff, "diff", false, "print the changes as a unified diff")
	return cmd
}

// hclFiles expands folders to their *.hcl files.
func hclFiles(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("fmt %s: %w", p, err)
		}
		if !st.IsDir() {
			out = append(out, p)
			continue
		}
		m, _ := filepath.Glob(filepath.Join(p, "*.hcl"))
		sort.Strings(m)
		out = append(out, m...)
	}
	return out, nil
}

// writeSame replaces a file's content through a temporary file in the same
// folder, keeping its mode, so an interrupted fmt never leaves half a file.
func writeSame(path string, b []byte) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(st.Mode().Perm()); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
