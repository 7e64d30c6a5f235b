package main

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// runCmd runs one of the report/graph commands as main would and returns
// its exit code, stdout and stderr.
func runCmd(t *testing.T, cmd *cobra.Command, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	code := exitOK
	if err := cmd.Execute(); err != nil {
		code = exitFail
		var ee *exitError
		if errors.As(err, &ee) {
			code = ee.code
		}
		errb.WriteString(err.Error())
	}
	return code, out.String(), errb.String()
}

func copyRunDir(t *testing.T) string {
	t.Helper()
	src := "../../testdata/report/run"
	dst := filepath.Join(t.TempDir(), "run")
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func TestReportCmd(t *testing.T) {
	dir := copyRunDir(t)
	code, out, errs := runCmd(t, newReportCmd(), dir)
	if code != exitOK || strings.TrimSpace(out) != filepath.Join(dir, "report.html") {
		t.Fatalf("rlab report: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "report.html")); err != nil || !bytes.Contains(b, []byte("<svg")) {
		t.Errorf("report.html: %v", err)
	}
	if code, _, errs := runCmd(t, newReportCmd(), filepath.Join(dir, "nope")); code != exitFail || !strings.Contains(errs, "nope") {
		t.Errorf("rlab report on a missing dir: exit %d, stderr %q; want 1 naming it", code, errs)
	}
}

func TestGraphCmd(t *testing.T) {
	dir := copyRunDir(t)
	for _, tc := range []struct {
		name    string
		args    []string
		code    int
		out     string // stdout contains
		errs    string // stderr contains
		noGraph bool   // run with no graphviz on PATH
	}{
		{"lab file as DOT", []string{"../../testdata/report/run/lab/quickstart.hcl"}, exitOK, `digraph "rlab quickstart"`, "", false},
		{"run dir adds facts", []string{dir}, exitOK, "node GUID 5054:00ff:fe99:0001", "", false},
		{"svg without graphviz", []string{"--format", "svg", dir}, exitOK, "<svg", "graphviz `dot` is not installed", true},
		{"bad format", []string{"--format", "png", dir}, exitFail, "", "--format must be dot or svg", false},
		{"bad var", []string{"--var", "novalue", dir}, exitFail, "", "want NAME=VALUE", false},
		{"lab with errors", []string{"../../testdata/report/graph/class.hcl", "--var", "students=notamap"}, exitFail, "", "the lab has errors", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.noGraph {
				t.Setenv("PATH", t.TempDir())
			}
			code, out, errs := runCmd(t, newGraphCmd(), tc.args...)
			if code != tc.code || !strings.Contains(out, tc.out) || !strings.Contains(errs, tc.errs) {
				t.Errorf("rlab graph %s: exit %d (want %d)\nstdout %.300q (want %q)\nstderr %.300q (want %q)", strings.Join(tc.args, " "), code, tc.code, out, tc.out, errs, tc.errs)
			}
		})
	}
	out := filepath.Join(t.TempDir(), "g.dot")
	if code, _, errs := runCmd(t, newGraphCmd(), "-o", out, dir); code != exitOK {
		t.Fatalf("rlab graph -o: exit %d: %s", code, errs)
	}
	if b, err := os.ReadFile(out); err != nil || !bytes.HasPrefix(b, []byte("digraph")) {
		t.Errorf("rlab graph -o wrote %q, %v", b, err)
	}
}
