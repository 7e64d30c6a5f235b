package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rlab-dev/rlab/engine/results/classtest"
)

// classFailed are the failed students of the synthetic 500-student run,
// spread over the class (odd: a host unreachable, even: an expect).
var classFailed = []int{0, 7, 42, 99, 100, 137, 250, 311, 388, 420, 471, 499}

// TestShowClass500: the first screen of `rlab show` of a 500-student run
// names every failed student and how many are ready; the ready ones are
// one line that --all unfolds; show --students folds the same way.
func TestShowClass500(t *testing.T) {
	dir := classtest.WriteDir(t, 500, classFailed...)
	ready := fmt.Sprintf("%d of 500 ready", 500-len(classFailed))
	for _, tc := range []struct {
		name   string
		args   []string
		screen int // lines that must name every failed student
		all    bool
	}{
		{"summary", []string{dir}, 40, false},
		{"summary rendered", []string{"--render", dir}, 40, false},
		{"summary --all", []string{"--all", dir}, 40, true},
		{"students", []string{"--students", dir}, 30, false},
		{"students --all", []string{"--students", "--all", dir}, 30, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errText := execute(t, newShowCmd(), tc.args...)
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, errText)
			}
			lines := strings.Split(out, "\n")
			screen := strings.Join(lines[:min(tc.screen, len(lines))], "\n")
			if !strings.Contains(screen, ready) {
				t.Errorf("first %d lines do not say %q:\n%s", tc.screen, ready, screen)
			}
			for _, i := range classFailed {
				if !strings.Contains(screen, classtest.Key(i)) {
					t.Errorf("first %d lines do not name failed student %s:\n%s", tc.screen, classtest.Key(i), screen)
				}
			}
			listed := 0
			for i := 0; i < 500; i++ {
				if strings.Contains(out, classtest.Key(i)+" ") || strings.Contains(out, classtest.Key(i)+"\t") {
					listed++
				}
			}
			fold := fmt.Sprintf("%d students ready", 500-len(classFailed))
			switch {
			case tc.all && listed != 500:
				t.Errorf("--all lists %d students, want 500", listed)
			case tc.all && strings.Contains(out, "(rlab show --all)"):
				t.Errorf("--all still folds:\n%s", screen)
			case !tc.all && listed != len(classFailed):
				t.Errorf("folded output lists %d students, want the %d failed", listed, len(classFailed))
			case !tc.all && !strings.Contains(screen, fold):
				t.Errorf("first %d lines do not fold the ready students to %q:\n%s", tc.screen, fold, screen)
			}
		})
	}
}

// TestShowClassGolden pins `rlab show` of a 12-student class with three
// failed (failed first, the nine ready ones one line), with --all and
// with --students; go test -update rewrites testdata/class/*.golden.
func TestShowClassGolden(t *testing.T) {
	dir := classtest.WriteDir(t, 12, 0, 5, 8)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"show", []string{dir}},
		{"show-all", []string{"--all", dir}},
		{"students", []string{"--students", dir}},
		{"students-all", []string{"--students", "--all", dir}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errText := execute(t, newShowCmd(), tc.args...)
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, errText)
			}
			got := strings.ReplaceAll(out, dir, "RUN")
			p := filepath.Join("testdata", "class", tc.name+".golden")
			if *update {
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(p)
			if err != nil {
				t.Fatalf("%v (run go test -update)", err)
			}
			if d := cmp.Diff(string(want), got); d != "" {
				t.Errorf("%s differs (-want +got):\n%s", p, d)
			}
		})
	}
}
