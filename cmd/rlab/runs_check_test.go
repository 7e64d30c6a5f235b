package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A student check (rlab check --validate) writes a run directory too; it
// must never become the nightly job's "last good run".
func TestRunsLeavesChecksOut(t *testing.T) {
	root := t.TempDir()
	src, err := os.ReadFile(filepath.Join(runDrop, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	write := func(id string, check bool) string {
		var m map[string]any
		if err := json.Unmarshal(src, &m); err != nil {
			t.Fatal(err)
		}
		m["id"] = id
		m["started"] = strings.Replace(id, "T020000Z", "T02:00:00Z", 1)
		if check {
			m["check"] = true
		}
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(root, "nightly", id)
		if check {
			dir = filepath.Join(root, "nightly", "check-"+id)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "results.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	run := write("2026-11-22T020000Z", false)
	check := write("2026-11-24T020000Z", true) // newer, ok, but a check

	for _, tc := range []struct {
		name string
		args []string
		code int
		want string // exact stdout (trimmed) or, with a leading '~', a substring
	}{
		{"last ok run skips the newer check", []string{"--lab", "nightly", "--status", "ok", "--last", root}, exitOK, run},
		{"checks on request", []string{"--kind", "check", "--last", root}, exitOK, check},
		{"all: checks marked", []string{"--kind", "all", root}, exitOK, "~ok (check)"},
		{"default table hides checks", []string{root}, exitOK, "~2026-11-22"},
		{"bad kind", []string{"--kind", "checks", root}, exitFail, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errText := execute(t, newRunsCmd(), tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d: %s", code, tc.code, errText)
			}
			got := strings.TrimSpace(out)
			switch {
			case tc.want == "":
			case strings.HasPrefix(tc.want, "~"):
				if !strings.Contains(got, tc.want[1:]) {
					t.Errorf("output lacks %q:\n%s", tc.want[1:], got)
				}
			case got != tc.want:
				t.Errorf("got %q, want %q", got, tc.want)
			}
			if tc.name == "default table hides checks" && strings.Contains(got, "check-") {
				t.Errorf("default listing shows a check:\n%s", got)
			}
		})
	}
}
