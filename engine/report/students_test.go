package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/engine/results/classtest"
)

// classFailed are the failed students of the synthetic class runs (odd: a
// host unreachable, even: an expect that did not hold).
var classFailed = []int{0, 7, 42, 99, 100, 137, 250, 311, 388, 420, 471, 499}

func renderClass(t *testing.T, n int, failed ...int) (*Data, string) {
	t.Helper()
	dir := classtest.WriteDir(t, n, failed...)
	d, err := Build(dir, Options{NoGraphviz: true})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := Write(&b, d); err != nil {
		t.Fatal(err)
	}
	return d, b.String()
}

// TestClassReport500: the report of a 500-student run opens with the
// students, every failed one named before the fold, the ready ones and
// their workloads and hosts under closed <details>; its size grows
// linearly with the class (500 students: at most 10.5 times 50) and stays
// under 3 MiB.
func TestClassReport500(t *testing.T) {
	d, page := renderClass(t, 500, classFailed...)
	s := d.Students
	if s == nil || s.Total != 500 || s.Ready != 500-len(classFailed) || len(s.Failed) != len(classFailed) || !s.Folded {
		t.Fatalf("students %+v", s)
	}
	start := strings.Index(page, `<section id="students">`)
	fold := strings.Index(page, `<details class="ready"><summary>488 students ready</summary>`)
	topo := strings.Index(page, `<section id="workloads">`)
	if start < 0 || fold < start || topo < fold {
		t.Fatalf("students section at %d, its fold at %d, workloads at %d: want students first, folded", start, fold, topo)
	}
	for _, i := range classFailed {
		if !strings.Contains(page[start:fold], fmt.Sprintf("<td>%s</td>", classtest.Key(i))) {
			t.Errorf("failed student %s is not above the fold", classtest.Key(i))
		}
	}
	if strings.Contains(page[start:fold], "<td>s001</td>") {
		t.Error("a ready student is above the fold")
	}
	// Failed students' workloads and hosts stay open; the others are folded.
	if n := s.FoldedWorkloads; n != 2*(500-len(classFailed)) {
		t.Errorf("%d workloads folded, want %d", n, 2*(500-len(classFailed)))
	}
	if n := s.FoldedHosts; n != 2*(500-len(classFailed)) {
		t.Errorf("%d hosts folded, want %d", n, 2*(500-len(classFailed)))
	}
	for _, w := range d.Workloads {
		if w.Folded && (strings.Contains(w.Name, `"s007"`) || strings.Contains(w.Name, `"s042"`)) {
			t.Errorf("workload %s of a failed student is folded", w.Name)
		}
	}
	wfold := strings.Index(page, `<details class="ready"><summary>976 workloads of the 488 ready students</summary>`)
	if wfold < 0 || !strings.Contains(page[topo:wfold], `tcp[&#34;s042&#34;]`) || strings.Contains(page[topo:wfold], `tcp[&#34;s001&#34;]`) {
		t.Error("the workloads section does not show the failed students' workloads above the fold and the others under it")
	}
	_, small := renderClass(t, 50, 0, 7, 42)
	const limit = 3 << 20
	if len(page) > limit || float64(len(page)) > 10.5*float64(len(small)) {
		t.Errorf("report.html of 500 students is %d bytes (50 students: %d): want at most %d and 10.5 times 50's", len(page), len(small), limit)
	}
}

// TestClassReportGolden pins the students table of a 12-student class
// with three failed (go test -update rewrites it); a class under
// results.FoldStudentsAt folds nothing.
func TestClassReportGolden(t *testing.T) {
	d, _ := renderClass(t, 12, 0, 5, 8)
	b, err := json.MarshalIndent(d.Students, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "class12.students.golden.json", append(b, '\n'))
	d, page := renderClass(t, 3, 1)
	if d.Students == nil || d.Students.Folded || strings.Contains(page, `<details class="ready">`) {
		t.Errorf("a 3-student class is folded: %+v", d.Students)
	}
	for _, w := range d.Workloads {
		if w.Folded {
			t.Errorf("workload %s of a 3-student class is folded", w.Name)
		}
	}
}

// classLab loads a class lab of n students (a server/client pair each, an
// exec and a TCP transfer), the shape of bench/scale/class-scale.hcl.
func classLab(t *testing.T, n int) *lab.Lab {
	t.Helper()
	var src strings.Builder
	src.WriteString("lab \"class-scale\" {}\nlocals {\n  students = {\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&src, "    %q = { server = \"10.0.%d.%d\", client = \"10.1.%d.%d\" }\n", classtest.Key(i), i/250, i%250+1, i/250, i%250+1)
	}
	src.WriteString(`  }
}
host "server" {
  for_each = local.students
  address  = each.value.server
}
host "client" {
  for_each = local.students
  address  = each.value.client
}
workload "hello" {
  for_each = local.students
  tool     = "exec"
  host     = host.server[each.key]
  command  = ["uname", "-r"]
}
workload "tcp" {
  for_each = local.students
  tool     = "tcp"
  server   = host.server[each.key]
  client   = host.client[each.key]
}
`)
	p := filepath.Join(t.TempDir(), "class-scale.hcl")
	if err := os.WriteFile(p, []byte(src.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	l, diags := lab.Load([]string{p}, lab.LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	return l
}

// TestTopologyOfLargeClass: above maxDrawnHosts the report keeps the
// topology's DOT and says why there is no picture, without running dot
// (which took minutes at 1,000 hosts); at or under it the picture is drawn.
func TestTopologyOfLargeClass(t *testing.T) {
	for _, tc := range []struct {
		students int
		drawn    bool
	}{{3, true}, {maxDrawnHosts / 2, true}, {maxDrawnHosts/2 + 1, false}, {500, false}} {
		t.Run(fmt.Sprint(tc.students), func(t *testing.T) {
			if tc.drawn && tc.students > 3 && testing.Short() {
				t.Skip("dot on 256 hosts takes seconds")
			}
			dir := classtest.WriteDir(t, tc.students)
			d, err := Build(dir, Options{Lab: classLab(t, tc.students)})
			if err != nil {
				t.Fatal(err)
			}
			top := d.Topology
			if top == nil || !strings.Contains(top.DOT, `client[\"s000\"]`) && !strings.Contains(top.DOT, `client["s000"]`) {
				t.Fatalf("topology %+v: want the DOT of every host", top)
			}
			if drawn := top.Image != ""; drawn != tc.drawn {
				t.Errorf("%d hosts: picture drawn %v, want %v (note %q)", 2*tc.students, drawn, tc.drawn, top.Note)
			}
			if !tc.drawn && !strings.Contains(top.Note, fmt.Sprintf("%d hosts is not drawn", 2*tc.students)) {
				t.Errorf("note %q does not say why there is no picture", top.Note)
			}
		})
	}
}
