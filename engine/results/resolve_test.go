package results

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestResolveRun: the ids `rlab runs` prints, run ids, lab names, folders
// of runs and nothing (the newest run) all find a run directory.
func TestResolveRun(t *testing.T) {
	root := filepath.Join("..", "..", "testdata", "runs")
	newest := filepath.Join(root, "nightly", "2026-11-23T020000Z")
	tests := []struct {
		ref, want, err string
		note           bool
	}{
		{ref: "", want: newest, note: true},
		{ref: "nightly/2026-11-21T020000Z", want: filepath.Join(root, "nightly", "2026-11-21T020000Z")},
		{ref: "2026-11-22T020000Z", want: filepath.Join(root, "nightly", "2026-11-22T020000Z")},
		{ref: "nightly", want: newest, note: true},
		{ref: filepath.Join(root, "nightly", "2026-11-20T020000Z"), want: filepath.Join(root, "nightly", "2026-11-20T020000Z")},
		{ref: root, want: newest, note: true},
		{ref: "nope", err: `run "nope" not found`},
		{ref: "nightly/2026-01-01T000000Z", err: "not found"},
		{ref: "testdata", err: "holds no runs"},
	}
	for _, tc := range tests {
		t.Run(tc.ref, func(t *testing.T) {
			got, note, err := ResolveRun(root, tc.ref)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ResolveRun(%q) = %q, %v; want error with %q", tc.ref, got, err, tc.err)
				}
				return
			}
			if err != nil || filepath.Clean(got) != filepath.Clean(tc.want) || (note != "") != tc.note {
				t.Errorf("ResolveRun(%q) = %q, note %q, %v; want %q (note %v)", tc.ref, got, note, err, tc.want, tc.note)
			}
		})
	}
	if _, _, err := ResolveRun(t.TempDir(), ""); err == nil || !strings.Contains(err.Error(), "no runs under") {
		t.Errorf("empty root: %v", err)
	}
}
