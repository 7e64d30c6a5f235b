package kinds

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// TestToolsWellFormed checks every entry's rules against each other: a tool
// with transports has a default, fixed and maximum sizes need sizes, metrics
// are in the vocabulary, programs name packages for every distribution
// family, and a version taken from another program names one that asks.
func TestToolsWellFormed(t *testing.T) {
	for _, tl := range All() {
		if tl.Flavor == "" || tl.Chart == "" {
			t.Errorf("%s: flavor %q, chart %q: both are needed", tl.Name, tl.Flavor, tl.Chart)
		}
		if tl.Transports == nil && tl.TransportWhy == "" {
			t.Errorf("%s: fixes its transport but TransportWhy does not say why", tl.Name)
		}
		if (tl.FixedSize != 0 || tl.MaxSize != 0) && !tl.Sizes {
			t.Errorf("%s: a fixed or maximum size without sizes", tl.Name)
		}
		if tl.RDMA && tl.OneHost {
			t.Errorf("%s: an RDMA tool runs between two rxe devices", tl.Name)
		}
		for _, m := range tl.Metrics {
			if _, ok := MetricByName(m); !ok {
				t.Errorf("%s: metric %q is not in the vocabulary", tl.Name, m)
			}
		}
		if tl.RDMA && tl.Program == nil {
			t.Errorf("%s: an RDMA tool is a program on the host; Program is nil", tl.Name)
		}
	}
	for _, p := range Programs() {
		if p.Packages.Debian == "" || p.Packages.RHEL == "" || p.Packages.SUSE == "" {
			t.Errorf("program %s: packages %+v: one per distribution family", p.Name, p.Packages)
		}
		if v := p.Version; v.From != "" {
			from, ok := ProgramByName(v.From)
			if !ok || len(from.Version.Args) == 0 {
				t.Errorf("program %s: version from %q, which does not ask its own", p.Name, v.From)
			}
		}
		if len(p.Version.Args) > 0 {
			if _, err := regexp.Compile(p.Version.Pattern); err != nil || p.Version.Pattern == "" {
				t.Errorf("program %s: version pattern %q: %v", p.Name, p.Version.Pattern, err)
			}
		}
	}
	seen := map[string]string{}
	for _, m := range Metrics() {
		for _, n := range append([]string{m.Name}, aliasNames(m)...) {
			if prev, dup := seen[n]; dup {
				t.Errorf("name %q is both %s and %s", n, prev, m.Name)
			}
			seen[n] = m.Name
		}
	}
}

// builders may spell tool names besides the descriptor: code that must name
// one tool in particular. None needs to today.
var builders = map[string]bool{}

// TestOnePlaceSpellsToolNames: outside bench/ and tests, only the family
// packages under kinds/ (and at most two builders) have a string literal
// that names a tool the agent runs, so a second table of tools cannot grow unseen.
func TestOnePlaceSpellsToolNames(t *testing.T) {
	if len(builders) > 2 {
		t.Fatalf("%d builders; at most two may spell tool names", len(builders))
	}
	var names []string
	exact := map[string]bool{}
	for _, tl := range All() {
		// The program the agent runs: the tool's own name for every tool
		// but program (whose tool name is the word, and whose executable
		// is the compiler).
		if tl.Program != nil {
			n := tl.Program.Name
			exact[n] = true
			if strings.Contains(n, "_") { // no English word: found in prose too
				names = append(names, regexp.QuoteMeta(n))
			}
		}
	}
	sort.Strings(names)
	re := regexp.MustCompile(`(^|[^A-Za-z0-9_])(` + strings.Join(names, "|") + `)($|[^A-Za-z0-9_])`)
	// A tool family told by its name's shape is a table too.
	affix := map[string]bool{"ib_": true, "ibv_": true, "_bw": true, "_lat": true, "_pingpong": true, "ib_atomic_": true}
	root := ".."
	var offenders []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel == "bench" || rel == "testdata" || strings.HasPrefix(d.Name(), ".") && rel != "." {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel = filepath.ToSlash(rel)
		if strings.HasPrefix(rel, "kinds/") || builders[rel] {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				// A literal that is a tool name, or holds one that is no
				// English word ("rping" in help text is prose, not a table).
				if s, err := strconv.Unquote(lit.Value); err == nil && (exact[s] || affix[s] || re.MatchString(s)) {
					offenders = append(offenders, rel+": "+lit.Value)
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
		t.Errorf("spells a tool name outside the descriptor: %s", o)
	}
}

// TestPortFor: trial n of the workload at index takes a port of its block
// of PortsPerWorkload from BasePort (cycling), or from first when given.
func TestPortFor(t *testing.T) {
	for _, tt := range []struct{ index, first, n, want int }{
		{0, 0, 0, 20000},
		{3, 0, 1, 20031},
		{3, 0, 12, 20032},
		{3, 5201, 0, 5201},
	} {
		if got := PortFor(tt.index, tt.first, tt.n); got != tt.want {
			t.Errorf("PortFor(index %d, first %d, trial %d) = %d, want %d", tt.index, tt.first, tt.n, got, tt.want)
		}
	}
}
