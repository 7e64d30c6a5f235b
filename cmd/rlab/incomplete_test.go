package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/engine/results"
)

// TestIncompleteRun: a run directory whose files were not all written (no
// complete.json, or a manifest.json other than the one it names) is listed
// as incomplete by `rlab runs`, and `rlab show` prints what there is and
// exits 2, and `rlab compare` refuses it (exit 2) unless --allow-incomplete.
// The engine side (a real full tmpfs) is engine/run TestRunDiskFull.
func TestIncompleteRun(t *testing.T) {
	tests := []struct {
		name   string
		damage func(dir string)
		want   string // status in rlab runs
	}{
		{"complete", func(string) {}, "ok"},
		{"no marker", func(dir string) { os.Remove(filepath.Join(dir, results.CompleteFile)) }, "incomplete"},
		{"manifest cut short", func(dir string) { os.WriteFile(filepath.Join(dir, results.ManifestFile), nil, 0o600) }, "incomplete"},
		{"marker damaged", func(dir string) { os.WriteFile(filepath.Join(dir, results.CompleteFile), []byte("{"), 0o600) }, "incomplete"},
	}
	t.Run("no results at all", func(t *testing.T) {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "plan.json"), []byte("{}\n"), 0o600)
		show := newShowCmd()
		var out bytes.Buffer
		show.SetOut(&out)
		show.SetErr(&out)
		show.SetArgs([]string{dir})
		var ee *exitError
		if err := show.Execute(); !errors.As(err, &ee) || ee.code != exitInfra || !strings.Contains(err.Error(), "incomplete") {
			t.Errorf("rlab show of a run without results: %v, want exit 2 saying incomplete", err)
		}
	})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "lab", "20261126T100000Z")
			os.MkdirAll(dir, 0o700)
			r := &results.Run{Lab: "lab", ID: "20261126T100000Z", Started: time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC), Status: results.RunOK,
				Workloads: []results.Workload{{Name: "w", Tool: "exec", Status: results.StatusOK}}, Samples: []results.Sample{}, CompleteMarker: true}
			if err := results.WriteRun(dir, r); err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(dir, results.ManifestFile), []byte("[]\n"), 0o600)
			if err := results.MarkComplete(dir); err != nil {
				t.Fatal(err)
			}
			tc.damage(dir)

			var out bytes.Buffer
			runs := newRunsCmd()
			runs.SetOut(&out)
			runs.SetErr(&out)
			runs.SetArgs([]string{root})
			if err := runs.Execute(); err != nil {
				t.Fatal(err)
			}
			if fields := strings.Fields(strings.Split(out.String(), "\n")[1]); len(fields) < 4 || fields[3] != tc.want {
				t.Errorf("rlab runs:\n%s\nwant status %q", out.String(), tc.want)
			}

			// --status ok never picks an incomplete run (a baseline for compare).
			out.Reset()
			runs = newRunsCmd()
			runs.SetOut(&out)
			runs.SetErr(&out)
			runs.SetArgs([]string{"--last", "--status", "ok", root})
			if err := runs.Execute(); err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSpace(out.String()) != ""; got != (tc.want == "ok") {
				t.Errorf("rlab runs --last --status ok: %q", out.String())
			}

			out.Reset()
			show := newShowCmd()
			show.SetOut(&out)
			show.SetErr(&out)
			show.SetArgs([]string{dir})
			err := show.Execute()
			var ee *exitError
			if tc.want == "ok" {
				if err != nil {
					t.Errorf("rlab show of a complete run: %v", err)
				}
			} else if !errors.As(err, &ee) || ee.code != exitInfra || !strings.Contains(err.Error(), "incomplete") {
				t.Errorf("rlab show of an incomplete run: %v, want exit 2 saying incomplete", err)
			}
			if !strings.Contains(out.String(), "rlab run: lab") { // laid out for a terminal: no "#"
				t.Errorf("rlab show did not print the summary:\n%s", out.String())
			}

			// rlab compare refuses an incomplete run as A or B (exit 2),
			// and compares it with a warning under --allow-incomplete.
			for _, args := range [][]string{{dir, dir}, {"--allow-incomplete", dir, dir}} {
				stdout, stderr, code := rlab(t, append([]string{"compare"}, args...)...)
				switch {
				case tc.want == "ok" && (code != exitOK || strings.Contains(stderr, "WARNING")):
					t.Errorf("rlab compare %q of a complete run: exit %d\n%s", args, code, stderr)
				case tc.want != "ok" && args[0] != "--allow-incomplete" && (code != exitInfra || !strings.Contains(stderr, "incomplete") || stdout != ""):
					t.Errorf("rlab compare %q of an incomplete run: exit %d, want 2 saying incomplete\n%s%s", args, code, stdout, stderr)
				case tc.want != "ok" && args[0] == "--allow-incomplete" && (code != exitOK || !strings.Contains(stderr, "WARNING: run "+dir)):
					t.Errorf("rlab compare %q of an incomplete run: exit %d, want 0 with a warning\n%s", args, code, stderr)
				}
			}
		})
	}
}
