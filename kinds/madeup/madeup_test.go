package madeup_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rlab-dev/rlab/kinds/madeup"
)

const importPath = "github.com/rlab-dev/rlab/kinds/madeup"

// maxFiles is what a new family costs in code: its package of about
// three files (descriptor, step, parser), as kinds' doc says.
const maxFiles = 3

// cost is what the made-up family costs the rest of the module under root
// (the module's root): its own package's non-test Go files, the test
// packages that register it, and every offence against "its package and
// one line": a non-test file outside it that imports it or spells one of
// its names, a test package that registers it other than by exactly one
// one-line kinds.Register(madeup.Kind{}).
func cost(root string, names []string) (files []string, registrants []string, offences []string) {
	spelled := map[string]bool{}
	for _, n := range names {
		spelled[n] = true
	}
	regs := map[string][]string{} // test package dir → its registration lines
	_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			offences = append(offences, err.Error())
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		dir, test := filepath.ToSlash(filepath.Dir(rel)), strings.HasSuffix(path, "_test.go")
		if dir == "kinds/madeup" && !test {
			files = append(files, rel)
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			offences = append(offences, err.Error())
			return nil
		}
		local := ""
		for _, im := range f.Imports {
			if p, _ := strconv.Unquote(im.Path.Value); p == importPath {
				local = "madeup"
				if im.Name != nil {
					local = im.Name.Name
				}
				if !test {
					offences = append(offences, rel+": imports "+importPath+" outside a test")
				}
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BasicLit:
				if s, err := strconv.Unquote(n.Value); err == nil && !test && n.Kind == token.STRING && spelled[s] {
					offences = append(offences, rel+":"+strconv.Itoa(fset.Position(n.Pos()).Line)+": spells "+n.Value+", a name of the made-up family")
				}
			case *ast.CallExpr:
				if local != "" && registersMadeUp(n, local) {
					from, to := fset.Position(n.Pos()).Line, fset.Position(n.End()).Line
					if from != to {
						offences = append(offences, rel+":"+strconv.Itoa(from)+": registers the made-up family on lines "+strconv.Itoa(from)+"-"+strconv.Itoa(to)+", not one")
					}
					regs[dir] = append(regs[dir], rel+":"+strconv.Itoa(from))
				}
			}
			return true
		})
		if local != "" {
			if _, ok := regs[dir]; !ok {
				regs[dir] = nil
			}
		}
		return nil
	})
	for dir, lines := range regs {
		registrants = append(registrants, dir)
		if len(lines) != 1 {
			offences = append(offences, dir+": its tests import the made-up family and register it "+strconv.Itoa(len(lines))+" times "+strings.Join(lines, " ")+", want once, by one line")
		}
	}
	sort.Strings(registrants)
	sort.Strings(offences)
	return files, registrants, offences
}

// registersMadeUp: call is kinds.Register(<local>.Kind{}).
func registersMadeUp(call *ast.CallExpr, local string) bool {
	fn, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || fn.Sel.Name != "Register" || len(call.Args) != 1 {
		return false
	}
	lit, ok := call.Args[0].(*ast.CompositeLit)
	if !ok {
		return false
	}
	typ, ok := lit.Type.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	pkg, ok := typ.X.(*ast.Ident)
	return ok && pkg.Name == local && typ.Sel.Name == "Kind"
}

// names are the made-up family's tool, family and metric names.
func names() []string {
	d := madeup.Kind{}.Desc()
	out := []string{}
	for _, tl := range d.Tools {
		out = append(out, tl.Name, string(tl.Flavor))
	}
	for _, m := range d.Metrics {
		out = append(out, m.Name)
	}
	return out
}

// TestOnePackageAndOneLine: in this module, the made-up family is its
// package of at most three files, and each test package that uses it
// registers it by one line; no other code names it. The test binaries
// that register it are the ones that show it in every view (the list
// below: a package dropping its line drops that proof, and fails here).
func TestOnePackageAndOneLine(t *testing.T) {
	files, registrants, offences := cost("../..", names())
	if len(files) == 0 || len(files) > maxFiles {
		t.Errorf("the made-up family is %d files %v, want 1 to %d", len(files), files, maxFiles)
	}
	for _, o := range offences {
		t.Error(o)
	}
	want := []string{"cmd/rlab", "engine/report", "kinds/madeup"}
	if diff := cmp.Diff(want, registrants); diff != "" {
		t.Errorf("test packages that register the made-up family (-want +got):\n%s", diff)
	}
}

// TestCostFindsOffences: the check above fails on each way of needing
// more than the package and one line, in a module made up for it.
func TestCostFindsOffences(t *testing.T) {
	reg := "package p\n\nimport (\n\t\"github.com/rlab-dev/rlab/kinds\"\n\t\"" + importPath + "\"\n)\n\nfunc setup() { kinds.Register(madeup.Kind{}) }\n"
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{"one line", map[string]string{"p/main_test.go": reg}, nil},
		{"imported by rlab", map[string]string{"p/p.go": reg}, []string{"p/p.go: imports " + importPath + " outside a test"}},
		{"registered twice", map[string]string{"p/main_test.go": reg, "p/more_test.go": strings.Replace(reg, "setup", "setup2", 1)},
			[]string{"p: its tests import the made-up family and register it 2 times p/main_test.go:8 p/more_test.go:8, want once, by one line"}},
		{"imported, not registered", map[string]string{"p/x_test.go": "package p\n\nimport m \"" + importPath + "\"\n\nvar _ = m.Tool\n"},
			[]string{"p: its tests import the made-up family and register it 0 times , want once, by one line"}},
		{"on two lines", map[string]string{"p/main_test.go": strings.Replace(reg, "madeup.Kind{}", "madeup.Kind{\n}", 1)},
			[]string{"p/main_test.go:8: registers the made-up family on lines 8-9, not one"}},
		{"a view spells its metric", map[string]string{"p/main_test.go": reg, "q/view.go": "package q\n\nvar m = \"made_gbps\"\n"},
			[]string{`q/view.go:3: spells "made_gbps", a name of the made-up family`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for p, src := range tc.files {
				p = filepath.Join(root, p)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, _, got := cost(root, names())
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("offences (-want +got):\n%s", diff)
			}
		})
	}
}

// TestEveryMetricShown: the made-up family shows every metric it records
// (kinds.Desc.Unshown), as the built-in ones must.
func TestEveryMetricShown(t *testing.T) {
	if u := (madeup.Kind{}).Desc().Unshown(); len(u) > 0 {
		t.Errorf("no view shows %v", u)
	}
}
