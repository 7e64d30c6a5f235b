package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"
)

// goFlags lets the lab commands take Go/Terraform-style single-dash long
// flags (-json, -var k=v, -check) as the issue and users of those tools
// expect, alongside --json: single-dash forms of the command's long flags
// are rewritten before parsing. Arguments after "--" are left alone.
func goFlags(fs *pflag.FlagSet, args []string) []string {
	out := make([]string, 0, len(args))
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...)
		}
		if len(a) > 2 && a[0] == '-' && a[1] != '-' {
			name, _, _ := strings.Cut(a[1:], "=")
			if len(name) > 1 && fs.Lookup(name) != nil {
				a = "-" + a
			}
		}
		out = append(out, a)
	}
	return out
}

// parseLabFlags parses a lab command's flags itself (the command sets
// DisableFlagParsing so that goFlags can run first). done is true when help
// was printed.
func parseLabFlags(cmd *cobra.Command, args []string) (rest []string, done bool, err error) {
	fs := cmd.Flags()
	help := false
	if fs.Lookup("help") == nil {
		fs.BoolVarP(&help, "help", "h", false, "help for "+cmd.Name())
	}
	if err := fs.Parse(goFlags(fs, args)); err != nil {
		return nil, false, withCode(exitFail, fmt.Errorf("%s: %w (see rlab %s --help)", cmd.Name(), suggestFlag(fs, err), cmd.Name()))
	}
	if h, _ := fs.GetBool("help"); h {
		return nil, true, cmd.Help()
	}
	return fs.Args(), false, nil
}

// varFlags are the lab-variable flags of validate and plan.
type varFlags struct {
	vars, varFiles []string
}

func (v *varFlags) register(fs *pflag.FlagSet) {
	fs.StringArrayVar(&v.vars, "var", nil, "set a variable: NAME=VALUE (repeatable)")
	fs.StringArrayVar(&v.varFiles, "var-file", nil, "read variables from an HCL (or .json) file (repeatable)")
}

func (v *varFlags) options() (lab.LoadOptions, error) {
	opts := lab.LoadOptions{Vars: map[string]string{}, VarFiles: v.varFiles, Env: os.Environ()}
	for _, kv := range v.vars {
		k, val, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return opts, withCode(exitFail, fmt.Errorf("-var %q: want NAME=VALUE", kv))
		}
		opts.Vars[k] = val
	}
	return opts, nil
}

// writeDiags prints diagnostics as HCL does: FILE:LINE,COL, the source
// line with the range marked, and the detail; in colour on a terminal.
func writeDiags(w io.Writer, l *lab.Lab, diags hcl.Diagnostics) {
	if len(diags) == 0 {
		return
	}
	width, color := uint(0), false
	if f, ok := w.(interface{ Fd() uintptr }); ok && term.IsTerminal(int(f.Fd())) {
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 0 {
			width = uint(cols)
		}
		color = os.Getenv("NO_COLOR") == ""
	}
	writeDiagsAs(w, l, diags, width, color)
}

// writeDiagsAs is writeDiags at a given width (0: no wrapping) and colour.
// Each diagnostic's texts are redacted before they are written, not only
// the output after: on a terminal hcl wraps a detail at its width, and a
// sensitive value with a space in it ("cannot convert \"correct horse
// battery staple\" to number") was split over two lines the output's
// redactor no longer matched.
func writeDiagsAs(w io.Writer, l *lab.Lab, diags hcl.Diagnostics, width uint, color bool) {
	safe := lab.RedactDiags(l, diags)
	var buf strings.Builder
	_ = lab.WriteDiagnostics(&buf, lab.SourceFiles(l, safe), safe, width, color)
	io.WriteString(w, lab.Redact(l)(buf.String()))
}
