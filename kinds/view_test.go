package kinds_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
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
	offenders, err := spelledMetrics("..", names, notMetrics)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range offenders {
		t.Errorf("spells a metric name outside the descriptor (declare it in the tool's View instead): %s", o)
	}
}

// spelledMetrics lists, as "file:line: literal", every string literal in a
// non-test Go file under root (the module's root) that is one of names,
// outside bench/, testdata/, kinds/ and familyCode, struct tags and the
// literals allowed by file (allowed) aside.
func spelledMetrics(root string, names map[string]bool, allowed map[string]string) ([]string, error) {
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
				if n.Kind != token.STRING || tags[n] || allowed[rel] == n.Value {
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
	return offenders, err
}

// TestSpelledMetricsFinds: the scanner above finds a metric's name planted
// in a view, in each form Go spells a string, and only where the rule
// applies: not in tests, struct tags, kinds/, bench/, testdata/ or an
// allowed literal.
func TestSpelledMetricsFinds(t *testing.T) {
	names := map[string]bool{"bw_avg": true, "tcp_gbps": true}
	for _, tc := range []struct {
		name, file, src string
		want            []string
	}{
		{"a view switching on a metric", "engine/results/view.go", "package results\n\nfunc f(m string) bool {\n\treturn m == \"bw_avg\"\n}\n",
			[]string{`engine/results/view.go:4: "bw_avg"`}},
		{"a raw string", "engine/report/x.go", "package report\n\nvar m = `tcp_gbps`\n", []string{"engine/report/x.go:3: `tcp_gbps`"}},
		{"in a map key", "cmd/rlab/x.go", "package main\n\nvar m = map[string]int{\n\t\"bw_avg\": 1,\n}\n", []string{`cmd/rlab/x.go:4: "bw_avg"`}},
		{"another word", "engine/results/view.go", "package results\n\nvar m = \"bw_avg2\"\n", nil},
		{"a test", "engine/results/view_test.go", "package results\n\nvar m = \"bw_avg\"\n", nil},
		{"a struct tag", "engine/results/file.go", "package results\n\ntype T struct {\n\tBW float64 `json:\"bw_avg\"`\n}\n", nil},
		{"the descriptor", "kinds/perftest/perftest.go", "package perftest\n\nvar m = \"bw_avg\"\n", nil},
		{"bench", "bench/x.go", "package bench\n\nvar m = \"bw_avg\"\n", nil},
		{"testdata", "testdata/x.go", "package x\n\nvar m = \"bw_avg\"\n", nil},
		{"an allowed literal", "engine/lab/workload.go", "package lab\n\nvar m = \"tcp_gbps\"\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			p := filepath.Join(root, tc.file)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(tc.src), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := spelledMetrics(root, names, map[string]string{"engine/lab/workload.go": `"tcp_gbps"`})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("offenders (-want +got):\n%s", diff)
			}
		})
	}
}

// TestEveryMetricShown: every registered family's metrics appear in some
// view its tools' Views declare (or a View says they are for the tables
// only), its Views name no metric they do not record, and it declares no
// metric that none of its tools records (kinds.Desc.Unshown); and the
// check itself finds what a made-up tool or family leaves out.
func TestEveryMetricShown(t *testing.T) {
	if len(kinds.Kinds()) == 0 {
		t.Fatal("no family registered: nothing to check")
	}
	for _, k := range kinds.Kinds() {
		d := k.Desc()
		if u := d.Unshown(); len(u) > 0 {
			t.Errorf("%s: no view shows %v: add them to its View (headline, chart, throughput or TableOnly), or drop a metric no tool records", d.Name, u)
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
	// A family: its tools' gaps, and a metric it declares that no tool
	// of it records.
	shown := kinds.View{Headline: []kinds.Figure{{Metric: "made_bw"}}}
	for _, tc := range []struct {
		name string
		desc kinds.Desc
		want []string
	}{
		{"all shown", kinds.Desc{Name: "made", Metrics: []kinds.Metric{{Name: "made_bw"}},
			Tools: []kinds.Tool{{Name: "made", Metrics: []string{"made_bw"}, View: shown}}}, nil},
		{"a tool's gap", kinds.Desc{Name: "made", Metrics: []kinds.Metric{{Name: "made_bw"}, {Name: "made_rtt"}},
			Tools: []kinds.Tool{{Name: "made", Metrics: []string{"made_bw", "made_rtt"}, View: shown}}}, []string{"made: made_rtt"}},
		{"declared, recorded by no tool", kinds.Desc{Name: "made", Metrics: []kinds.Metric{{Name: "made_bw"}, {Name: "made_rtt"}},
			Tools: []kinds.Tool{{Name: "made", Metrics: []string{"made_bw"}, View: shown}}}, []string{"metric: made_rtt"}},
		{"recorded, declared nowhere", kinds.Desc{Name: "made",
			Tools: []kinds.Tool{{Name: "made", Metrics: []string{"made_bw"}, View: shown}}}, []string{"made: undeclared made_bw"}},
		{"recorded, declared by another family", kinds.Desc{Name: "made",
			Tools: []kinds.Tool{{Name: "made", Metrics: []string{"bw_avg"}, View: kinds.View{TableOnly: []string{"bw_avg"}}}}}, nil},
	} {
		if diff := cmp.Diff(tc.want, tc.desc.Unshown()); diff != "" {
			t.Errorf("%s: Desc.Unshown (-want +got):\n%s", tc.name, diff)
		}
	}
}

// TestViewsWellFormed: chart IDs are unique across tools (the report's
// anchors), a metric is one tool family's throughput on one side only,
// and every metric a View names is in the vocabulary.
func TestViewsWellFormed(t *testing.T) {
	charts := map[string]kinds.Flavor{}
	thr := map[string]bool{}
	for _, tl := range kinds.All() {
		for _, c := range tl.View.Charts {
			if f, ok := charts[c.ID]; ok && f != tl.Flavor {
				t.Errorf("%s: chart %q is family %s's too", tl.Name, c.ID, f)
			}
			charts[c.ID] = tl.Flavor
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
