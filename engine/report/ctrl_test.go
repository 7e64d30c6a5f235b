package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/engine/termsafe"
)

// TestControlCharactersEscaped: a received run directory's texts reach
// report.html through termsafe's one rule, as they reach the terminal and
// summary.md: ESC, BEL, C1 controls and bidi overrides are shown escaped,
// never kept raw (escaped for HTML, they were kept as bytes: a page saved as
// text, or its source viewed with cat or less, wrote the host's escapes to
// a terminal; attack round 14). Each case puts the text in one place the page
// shows it.
func TestControlCharactersEscaped(t *testing.T) {
	const evil = "T\x1b]0;pwned\x07\x1b[2J\u202eX\u009b1m"
	want := termsafe.Line(evil) // what the page must show
	for _, tc := range []struct {
		name string
		set  func(run, facts map[string]any)
	}{
		{"run description", func(run, _ map[string]any) { run["description"] = evil }},
		{"run error", func(run, _ map[string]any) { run["error"] = evil }},
		{"workload name", func(run, _ map[string]any) { workload0(run)["name"] = evil }},
		{"workload error", func(run, _ map[string]any) { workload0(run)["error"] = evil }},
		{"expect message", func(run, _ map[string]any) {
			workload0(run)["expects"] = []any{map[string]any{"condition": "x > 1", "message": evil, "held": false, "value": "x = 0"}}
		}},
		{"sample unit", func(run, _ map[string]any) {
			run["samples"].([]any)[0].(map[string]any)["unit"] = evil
		}},
		{"host's hostname", func(_, facts map[string]any) { facts["hostname"] = evil }},
		{"host's kernel", func(_, facts map[string]any) { facts["kernel"] = evil }},
		{"host's errors", func(_, facts map[string]any) { facts["errors"] = []string{evil} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyDir(t, fixture)
			var run, facts map[string]any
			readJSON(t, filepath.Join(dir, "results.json"), &run)
			readJSON(t, filepath.Join(dir, "hosts/server/facts.json"), &facts)
			tc.set(run, facts)
			writeJSON(t, filepath.Join(dir, "results.json"), run)
			writeJSON(t, filepath.Join(dir, "hosts/server/facts.json"), facts)
			if err := Render(dir); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(dir, FileName))
			if err != nil {
				t.Fatal(err)
			}
			page := string(b)
			if !termsafe.Safe(page) {
				i := strings.IndexAny(page, "\x1b\x07\u202e\u009b")
				t.Errorf("report.html keeps a control character raw: %q", page[max(0, i-40):min(len(page), i+40)])
			}
			if !strings.Contains(page, want) {
				t.Errorf("report.html does not show %q", want)
			}
		})
	}
}

func workload0(run map[string]any) map[string]any {
	return run["workloads"].([]any)[0].(map[string]any)
}
