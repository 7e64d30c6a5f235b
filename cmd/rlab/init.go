package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/rlab-dev/rlab/templates"
	"github.com/spf13/cobra"
)

func newInitCmd() *cobra.Command {
	var tmpl string
	var list bool
	cmd := &cobra.Command{
		Use:   "init [--template NAME] DIR",
		Short: "Write a starter lab into a folder",
		Long: `init writes a starter lab from one of rlab's templates into DIR (created if
missing). It never overwrites a file: if one of the template's files exists in
DIR, init writes nothing and says which.

Templates: ` + strings.Join(templates.InitNames(), ", ") + ` (default ` + templates.DefaultInit + `).`,
		Example: `  rlab init mylab && rlab validate mylab
  rlab init --template class myclass
  rlab init --list`,
		Args: func(cmd *cobra.Command, args []string) error {
			if list {
				return nil
			}
			return cobra.ExactArgs(1)(cmd, args)
		},
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			if list {
				for _, n := range templates.InitNames() {
					fmt.Fprintln(cmd.OutOrStdout(), n)
				}
				return nil
			}
			files, err := writeTemplate(tmpl, args[0])
			if err != nil {
				return withCode(exitFail, err)
			}
			for _, f := range files {
				fmt.Fprintln(cmd.OutOrStdout(), "wrote", f)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Next: rlab validate %s && rlab plan %s\n", args[0], args[0])
			return nil
		},
	}
	cmd.Flags().StringVarP(&tmpl, "template", "t", templates.DefaultInit, "template to start from ("+strings.Join(templates.InitNames(), ", ")+")")
	cmd.Flags().BoolVar(&list, "list", false, "list the templates")
	_ = cmd.RegisterFlagCompletionFunc("template", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return templates.InitNames(), cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

// writeTemplate copies template name into dir, refusing to overwrite.
func writeTemplate(name, dir string) ([]string, error) {
	src, ok := templates.Init(name)
	if !ok {
		return nil, fmt.Errorf("init: no template %q; the templates are %s", name, strings.Join(templates.InitNames(), ", "))
	}
	var names []string
	err := fs.WalkDir(src, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			names = append(names, p)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("init: read template %q: %w", name, err)
	}
	for _, n := range names {
		if _, err := os.Lstat(filepath.Join(dir, n)); err == nil {
			return nil, fmt.Errorf("init: %s already exists; init never overwrites (choose an empty folder)", filepath.Join(dir, n))
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("init: %w", err)
		}
	}
	var wrote []string
	for _, n := range names {
		b, err := fs.ReadFile(src, n)
		if err != nil {
			return wrote, fmt.Errorf("init: read template file %s: %w", n, err)
		}
		dst := filepath.Join(dir, n)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return wrote, fmt.Errorf("init: %w", err)
		}
		f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return wrote, fmt.Errorf("init: %w", err)
		}
		if _, err := f.Write(b); err != nil {
			f.Close()
			return wrote, fmt.Errorf("init: write %s: %w", dst, err)
		}
		if err := f.Close(); err != nil {
			return wrote, fmt.Errorf("init: write %s: %w", dst, err)
		}
		wrote = append(wrote, dst)
	}
	return wrote, nil
}
