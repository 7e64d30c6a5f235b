package plan

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
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

// FuzzSelect feeds --only any values on the class lab: a value is refused
// with a *SelectionError naming it, or it selects something; what is
// selected is part of the lab, every selected workload's hosts get an agent
// and every planned host is one the selection uses or a jump host on the
// way to one; the plan of the selection is a DAG.
func FuzzSelect(f *testing.F) {
	l, diags := lab.Load([]string{"../../labs/class.hcl"}, lab.LoadOptions{})
	if diags.HasErrors() {
		f.Fatal(diags)
	}
	for _, s := range []string{"ana", `write_bw["bea"]`, "write_bw.bea", "pingpong", "key:ana", "workload:pingpong", "anna", "", `x["`, "[", "]", `a[""]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		p, err := NewWith(l, Options{Only: []string{v}})
		var se *SelectionError
		if err != nil {
			if !errors.As(err, &se) || !strings.Contains(err.Error(), strconv.Quote(strings.TrimSpace(v))) {
				t.Fatalf("--only %q: %v, want a selection error naming it", v, err)
			}
			return
		}
		sel := p.Selected
		if strings.TrimSpace(v) != "" && len(sel.Workloads)+len(sel.Devices)+len(sel.Captures) == 0 {
			t.Fatalf("--only %q accepted but selects nothing", v)
		}
		agent := map[*lab.Host]bool{}
		for _, h := range p.Agents() {
			agent[h.Ref] = true
		}
		for _, w := range sel.Workloads {
			if l.WorkloadByName(w.Name) != w {
				t.Fatalf("--only %q selected %s, not of the lab", v, w.Name)
			}
			for _, h := range w.Hosts() {
				if !agent[h] {
					t.Fatalf("--only %q: workload %s's host %s gets no agent", v, w.Name, h.Name)
				}
			}
		}
		for _, hp := range p.Hosts {
			if hp.JumpOnly && !slices.ContainsFunc(p.Agents(), func(h *HostPlan) bool {
				for j := h.Ref.JumpHost; j != nil; j = j.JumpHost {
					if j == hp.Ref {
						return true
					}
				}
				return false
			}) {
				t.Fatalf("--only %q: jump host %s is on the way to no planned host", v, hp.Name)
			}
		}
		checkDAG(t, p)
	})
}
