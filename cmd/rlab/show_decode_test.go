package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/engine/results"
)

// TestShowDecodesOnce: `rlab show` decodes results.json at most once, and
// not at all when it prints summary.md, yet still says a run directory is
// incomplete (exit 2). It decoded the file a second time for that check,
// also when it printed summary.md: at the decoder's bound 23 s and 1 GB
// more (promise 190).
func TestShowDecodesOnce(t *testing.T) {
	b, err := os.ReadFile("../../testdata/results/v2/results.json") // complete_marker: true
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		summary bool // summary.md in the run directory
		args    []string
		decodes int
	}{
		{"render", true, []string{"--render"}, 1},
		{"json", false, []string{"--json"}, 1},
		{"no summary.md", false, nil, 1},
		{"summary.md", true, nil, 0},
		{"summary.md as markdown", true, []string{"--markdown"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, results.ResultsFile), b, 0o600); err != nil {
				t.Fatal(err)
			}
			if tc.summary {
				os.WriteFile(filepath.Join(dir, results.SummaryFile), []byte("# summary of the run\n"), 0o600)
			}
			decodes := 0
			readRun = func(p string) (*results.Run, error) { decodes++; return results.ReadRun(p) }
			t.Cleanup(func() { readRun = results.ReadRun })
			code, out, errText := execute(t, newShowCmd(), append(tc.args, dir)...)
			if code != exitInfra || !strings.Contains(errText, "incomplete: no "+results.CompleteFile) {
				t.Errorf("show %q of a run without %s: exit %d, stderr %q; want exit %d naming it", tc.args, results.CompleteFile, code, errText, exitInfra)
			}
			if out == "" {
				t.Errorf("show %q printed nothing", tc.args)
			}
			if decodes != tc.decodes {
				t.Errorf("show %q decoded %s %d times, want %d", tc.args, results.ResultsFile, decodes, tc.decodes)
			}
		})
	}
}
