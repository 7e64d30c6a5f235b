package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/engine/lab"
)

// TestEmptyLab: a class lab whose for_each is empty (a student list not
// filled in) is an error in validate, plan, run and check --validate
// (exit 1), named at the workload's for_each (file:line:col); with
// --allow-empty it validates and plans, and runs green having run nothing.
func TestEmptyLab(t *testing.T) {
	const f = "testdata/empty/class.hcl"
	at := f + ":13,14-26" // workload "w"'s for_each
	out := filepath.Join(t.TempDir(), "run")
	for _, tc := range []struct {
		args []string
		code int
		want string // in stderr
	}{
		{[]string{"validate", f}, exitFail, at},
		{[]string{"validate", "-json", f}, exitFail, `"line": 13`},
		{[]string{"plan", f}, exitFail, at},
		{[]string{"run", "--out", out, f}, exitFail, at},
		{[]string{"check", "--validate", "--out", out, f}, exitFail, at},
		{[]string{"validate", "--allow-empty", f}, exitOK, ""},
		{[]string{"plan", "--allow-empty", f}, exitOK, ""},
		{[]string{"run", "--allow-empty", "--out", out + "-allowed", f}, exitOK, ""},
		{[]string{"check", "--validate", "--allow-empty", "--out", out + "-checked", f}, exitOK, ""},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			stdout, stderr, code := rlab(t, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tc.code, stdout, stderr)
			}
			if tc.code == exitOK {
				return
			}
			if !strings.Contains(stderr+stdout, "Lab has no workloads") || !strings.Contains(stderr+stdout, `for_each of workload `) {
				t.Errorf("output lacks the named error:\n%s%s", stdout, stderr)
			}
			if tc.want != "" && !strings.Contains(stderr+stdout, tc.want) {
				t.Errorf("stderr lacks %q:\n%s", tc.want, stderr)
			}
		})
	}
}

// TestEmptySelection: an --only selection that leaves no workload is an
// error naming the selection, unless --allow-empty; no --only, or a
// selection with workloads, is not.
func TestEmptySelection(t *testing.T) {
	l, diags := lab.LoadOne("testdata/empty/class.hcl", lab.LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	for _, tc := range []struct {
		only     []string
		selected int
		allow    bool
		want     string
	}{
		{[]string{"ana"}, 0, false, `--only ana selects no workload of lab "e"`},
		{[]string{"ana"}, 0, true, ""},
		{[]string{"ana"}, 2, false, ""},
		{nil, 0, false, ""}, // the lab's own emptiness is NoWorkloads' to say
	} {
		err := emptySelection(l, tc.only, tc.selected, tc.allow)
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("emptySelection(%v, %d, %v) = %v, want %q", tc.only, tc.selected, tc.allow, err, tc.want)
		}
	}
}
