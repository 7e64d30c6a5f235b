package main

import (
	"bytes"
	"maps"
	"regexp"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/engine/report"
	"github.com/rlab-dev/rlab/engine/results"
)

// TestRDMAvsTCPOneAnswer (issue 25 item 2): the run's table, rlab show,
// summary.md and the report answer "RDMA vs TCP" alike for a run: each RDMA
// workload at the same message size with the same throughput (and the
// same ratio where the view prints one), by the one rule they all state.
func TestRDMAvsTCPOneAnswer(t *testing.T) {
	term := regexp.MustCompile(`(\S+) ([0-9.]+ \S+?)(?: \([^)]*\))? at (\d+ \S+) = ([0-9.]+)× TCP`)
	row := regexp.MustCompile(`^\|?\s*RDMA[^|]*?\s*\|?\s+(\S+)\s+\|?\s*\S+\s+\|?\s*(\d+ \S+) messages\s+\|?\s*([0-9.]+ \S+)\s+\|?\s*([0-9.]+)x`)
	for _, run := range []string{demoRun, runBase} {
		t.Run(run, func(t *testing.T) {
			var head bytes.Buffer
			if !printHeadline(&head, run) {
				t.Fatal("no headline")
			}
			want := map[string]string{} // workload → "size, throughput, ratio"
			for _, m := range term.FindAllStringSubmatch(head.String(), -1) {
				want[m[1]] = m[3] + ", " + m[2] + ", " + m[4]
			}
			if len(want) == 0 {
				t.Fatalf("the run's table has no RDMA vs TCP:\n%s", head.String())
			}
			r, err := results.ReadRun(run)
			if err != nil {
				t.Fatal(err)
			}
			_, show, _ := execute(t, newShowCmd(), run)
			for view, text := range map[string]string{"summary.md": string(results.Summary(r, run)), "rlab show": show} {
				if !strings.Contains(text, results.RDMAvsTCPRule) {
					t.Errorf("%s does not say its rule", view)
				}
				got := map[string]string{}
				for _, l := range strings.Split(text, "\n") {
					// A row whose transport names its carrier ("RDMA over RoCE (rxe)") too.
					l = regexp.MustCompile(`^(\|? ?RDMA)[^|]*?(\s{2,}|\s\|)`).ReplaceAllString(l, "$1$2")
					if m := row.FindStringSubmatch(l); m != nil {
						got[m[1]] = m[2] + ", " + m[3] + ", " + m[4]
					}
				}
				if !maps.Equal(got, want) {
					t.Errorf("%s: RDMA vs TCP %q, the run's table %q", view, got, want)
				}
			}
			d, err := report.Build(run, report.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if d.Compare == nil || !strings.Contains(d.Compare.Rule, results.RDMAvsTCPRule) {
				t.Fatalf("report: no RDMA vs TCP, or without its rule: %+v", d.Compare)
			}
			got := map[string]string{}
			for _, c := range d.Compare.Table.Rows {
				if strings.HasPrefix(c[2], "RDMA") {
					got[c[0]] = c[3] + ", " + c[4]
				}
			}
			for wl, w := range want {
				if i := strings.LastIndex(w, ", "); got[wl] != w[:i] {
					t.Errorf("report: %s compared at %q, the run's table at %q", wl, got[wl], w[:i])
				}
			}
			if len(got) != len(want) {
				t.Errorf("report compares %q, the run's table %q", got, want)
			}
		})
	}
}
