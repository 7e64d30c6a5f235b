package kinds_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rlab-dev/rlab/kinds"
)

// familyCode are folders outside kinds/ whose code names the metrics it
// records: none, since each family's step and parser are in kinds/<family>/.
var familyCode = []string{}

// notMetrics are literals that spell a metric's name but mean something
// else, by file: the workload's duration option and pflag's type name.
var notMetrics = map[string]string{
	"engine/lab/workload.go": `"duration"`,
	"cmd/rlab/hostflags.go":  `"duration"`,
}

// TestOnePlaceSpellsMetricNames: outside tests, bench/, the descriptor
// (kinds/) and the family code above, no string literal is
// a metric's name (or an alias, or a retired name), so no view switches on
// one: each reads what the tool's View declares. Struct tags are names of
// fields in a file format, not metrics, and are not read.
func TestOnePlaceSpellsMetricNames(t *testing.T) {
	names := map[string]bool{}
	for _, m := range kinds.Metrics() {
		names[m.Name] = true
		for _, a := range m.Aliases {
			names[a.Name] = true
		}
	}
	for _, k := range kinds.Kinds() {
		for old := range k.Desc().Retired {
			names[old] = true
		}
	}
	root := ".."
	var offenders []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			switch {
			case rel == "bench" || rel == "testdata" || rel == "kinds",
				strings.HasPrefix(d.Name(), ".") && rel != ".":
				return filepath.SkipDir
			}
			for _, f := range familyCode {
				if rel+"/" == f {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		tags := map[*ast.BasicLit]bool{}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.Field:
				if n.Tag != nil {
					tags[n.Tag] = true
				}
			case *ast.BasicLit:
				if n.Kind != token.STRING || tags[n] || notMetrics[rel] == n.Value {
					return true
				}
				if s, err := strconv.Unquote(n.Value); err == nil && names[s] {
					offenders = append(offenders, rel+":"+strconv.Itoa(fset.Position(n.Pos()).Line)+": "+n.Value)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range offenders {
		t.Errorf("spells a metric name outside the descriptor (declare it in the tool's View instead): %s", o)
	}
}

// TestEveryMetricShown: every built-in tool's metrics appear in some view
// its View declares (or its View says they are for the tables only), and
// its View names no metric it does not record; and the check itself finds
// what a made-up tool leaves out.
func TestEveryMetricShown(t *testing.T) {
	for _, tl := range kinds.All() {
		if u := tl.Unshown(); len(u) > 0 {
			t.Errorf("%s: no view shows %v: add them to its View (headline, chart, throughput or TableOnly)", tl.Name, u)
		}
	}
	for _, tc := range []struct {
		name string
		tool kinds.Tool
		want []string
	}{
		{"nothing declared", kinds.Tool{Name: "made", Metrics: []string{"made_rtt"}}, []string{"made_rtt"}},
		{"in a chart", kinds.Tool{Name: "made", Metrics: []string{"made_rtt", "made_bw"},
			View: kinds.View{Charts: []kinds.Chart{{ID: "made", Series: []kinds.Series{{"made_rtt", "rtt"}}}}}}, []string{"made_bw"}},
		{"in the headline's With", kinds.Tool{Name: "made", Metrics: []string{"made_rtt", "made_bw"},
			View: kinds.View{Headline: []kinds.Figure{{Metric: "made_bw", With: []kinds.Figure{{Metric: "made_rtt"}}}}}}, nil},
		{"throughput and tables", kinds.Tool{Name: "made", Metrics: []string{"made_rtt", "made_bw"},
			View: kinds.View{Throughput: "made_bw", TableOnly: []string{"made_rtt"}}}, nil},
		{"a view of a metric not recorded", kinds.Tool{Name: "made", Metrics: []string{"made_bw"},
			View: kinds.View{Headline: []kinds.Figure{{Metric: "made_bw"}}, Glance: kinds.Figure{Metric: "made_bwx"}}}, []string{"view: made_bwx"}},
	} {
		if diff := cmp.Diff(tc.want, tc.tool.Unshown()); diff != "" {
			t.Errorf("%s: Unshown (-want +got):\n%s", tc.name, diff)
		}
	}
}

// TestViewsWellFormed: chart IDs are unique across tools (the report's
// anchors), a metric is one tool family's throughput on one side only,
// and every metric a View names is in the vocabulary.
func TestViewsWellFormed(t *testing.T) {
	charts := map[string]kinds.Family{}
	thr := map[string]bool{}
	for _, tl := range kinds.All() {
		for _, c := range tl.View.Charts {
			if f, ok := charts[c.ID]; ok && f != tl.Family {
				t.Errorf("%s: chart %q is family %s's too", tl.Name, c.ID, f)
			}
			charts[c.ID] = tl.Family
			if len(c.Series) == 0 {
				t.Errorf("%s: chart %q has no series", tl.Name, c.ID)
			}
		}
		if m := tl.View.Throughput; m != "" {
			if rdma, ok := thr[m]; ok && rdma != tl.RDMA {
				t.Errorf("%s: throughput %q is both RDMA and not", tl.Name, m)
			}
			thr[m] = tl.RDMA
		}
		for _, m := range tl.View.Shown() {
			if _, ok := kinds.MetricByName(m); !ok {
				t.Errorf("%s: its View names %q, no metric", tl.Name, m)
			}
		}
	}
}

// TestArrowFollowsTheData: a workload's hosts (server first, as results
// record them) are drawn the way its tool's data goes, as the kernel's
// counters and rlab graph say (issue 25: run, show and summary.md printed
// server → client for ib_write_bw and tcp).
func TestArrowFollowsTheData(t *testing.T) {
	for _, tc := range []struct{ tool, want string }{
		{"ib_write_bw", "c → s"}, {"ib_send_bw", "c → s"}, {"ib_atomic_bw", "c → s"}, {"tcp", "c → s"},
		{"ib_read_bw", "s → c"}, {"ib_read_lat", "s → c"},
		{"ib_write_lat", "s ↔ c"}, {"ib_send_lat", "s ↔ c"}, {"ibv_rc_pingpong", "s ↔ c"}, {"rping", "s ↔ c"},
		{"no_such_tool", "s → c"},
	} {
		if got := kinds.Arrow(tc.tool, []string{"s", "c"}); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.tool, got, tc.want)
		}
	}
	if got := kinds.Arrow("exec", []string{"h"}); got != "h" {
		t.Errorf("exec on one host: %q", got)
	}
	for _, tl := range kinds.All() {
		if !tl.OneHost && tl.Data == "" {
			t.Errorf("%s: a two-sided tool says not which way its data goes (Data)", tl.Name)
		}
	}
}
