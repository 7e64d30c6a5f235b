package plan

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/rlab-dev/rlab/engine/lab"
)

// FuzzPlan: every lab that loads without errors plans without error, and
// the plan is a DAG in topological order that orders the workloads sharing
// a host and no others.
func FuzzPlan(f *testing.F) {
	files, _ := filepath.Glob("../../labs/*.hcl")
	more, _ := filepath.Glob("../../testdata/labs/valid/*.hcl")
	for _, p := range append(files, more...) {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	dir, _ := filepath.Abs("../../labs")
	f.Fuzz(func(t *testing.T, src []byte) {
		l, diags := lab.LoadSource("fuzz.hcl", src, dir, lab.LoadOptions{})
		if l == nil || diags.HasErrors() || len(l.Workloads) > 50 {
			return // checkDAG is quadratic in workloads
		}
		p, err := New(l)
		if err != nil {
			t.Fatalf("plan of a valid lab: %v", err)
		}
		checkDAG(t, p)
		// One lab, one plan: what rlab plan prints is what the run does.
		p2, err := New(l)
		if err != nil {
			t.Fatal(err)
		}
		var a, b bytes.Buffer
		if err := p.WriteText(&a); err != nil {
			t.Fatal(err)
		}
		if err := p2.WriteText(&b); err != nil {
			t.Fatal(err)
		}
		ja, _ := json.Marshal(p)
		jb, _ := json.Marshal(p2)
		if !bytes.Equal(a.Bytes(), b.Bytes()) || !bytes.Equal(ja, jb) {
			t.Fatalf("two plans of one lab differ:\n%s\n---\n%s", a.Bytes(), b.Bytes())
		}
	})
}
