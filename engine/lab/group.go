package lab

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/rlab-dev/rlab/kinds/toolopts"
)

// The group block: workloads that run at the same time even when they share
// a host (an incast of several clients into one server, a ring where every
// node sends to the next while it receives from the previous).
//
//	group "incast" { workloads = [workload.a_in, workload.b_in] }
//	group "ring"   { workloads = [workload.ring] }   # every for_each instance
//
// A block with a list of references rather than an attribute on each
// workload: the references are checked at load time with their ranges (a
// misspelt free-text label would silently make a second group), a whole
// for_each workload is one reference (a ring of any size is one line), the
// group has a name `rlab plan` shows, and a group may itself take for_each
// (one incast per student).

var groupSchema = &hcl.BodySchema{Attributes: append([]hcl.AttributeSchema{
	{Name: "workloads", Required: true},
}, metaSchema...)}

func (l *loader) decodeGroups(blocks []*hcl.Block) {
	in := map[*Workload]*Group{}
	for _, b := range blocks {
		label := b.Labels[0]
		if d := l.decls["group"][label]; d == nil || d.block != b {
			continue
		}
		content := l.content(b.Body, groupSchema)
		ctx := l.baseCtx().NewChild()
		ctx.Variables = l.workloadObjs
		sc := &scope{ctx: ctx, where: "a group block", blockTypes: []string{"host", "rxe", "workload"}}
		for _, inst := range l.expand(label, content, sc) {
			l.enter(inst)
			g := &Group{Name: inst.name, Slug: inst.slug, Range: b.DefRange}
			attrs := l.unsetNulls(content, groupSchema, inst.sc.ctx).Attributes
			a := attrs["workloads"]
			if a == nil {
				continue
			}
			ws, rs := l.workloadRefs(a, inst.sc, "workloads")
			for i, w := range ws {
				switch {
				case in[w] == g:
					l.errorf(rs[i], "Workload listed twice", "Workload %s is already in group %s; list it once.", w.Name, g.Name)
					continue
				case in[w] != nil:
					l.errorf(rs[i], "Workload in two groups", "Workload %s already runs together with group %s (%s); a workload belongs to one group. Merge the groups or leave it out of one.", w.Name, in[w].Name, in[w].Range)
					continue
				}
				in[w] = g
				g.Workloads = append(g.Workloads, w)
			}
			l.lab.Groups = append(l.lab.Groups, g)
		}
	}
}

// workloadRefs resolves a list of workload references; a whole for_each or
// count workload stands for all its instances. It returns the workloads and
// each one's source range.
func (l *loader) workloadRefs(a *hcl.Attribute, sc *scope, what string) ([]*Workload, []*hcl.Range) {
	v, ok := l.value(a, sc)
	if !ok {
		return nil, nil
	}
	t := v.Type()
	if !(t.IsListType() || t.IsTupleType() || t.IsSetType()) {
		l.errorf(a.Expr.Range().Ptr(), "Invalid "+what, "%s is a list of workloads, like [workload.a, workload.b]; got %s.", what, article(t))
		return nil, nil
	}
	elems := v.AsValueSlice()
	rs := toolopts.ElemRanges(a.Expr, len(elems))
	var out []*Workload
	var where []*hcl.Range
	add := func(r *hcl.Range, n string, ok bool) {
		if w := l.workloadByName[n]; ok && w != nil {
			out = append(out, w)
			where = append(where, r)
		}
	}
	for i, e := range elems {
		if et := e.Type(); (et.IsObjectType() && !et.HasAttribute("kind")) || et.IsTupleType() {
			for it := e.ElementIterator(); it.Next(); {
				_, inst := it.Element()
				n, ok := l.resolveRefAt(rs[i].Ptr(), inst, "workload", what)
				add(rs[i].Ptr(), n, ok)
			}
			continue
		}
		n, ok := l.resolveRefAt(rs[i].Ptr(), e, "workload", what)
		add(rs[i].Ptr(), n, ok)
	}
	return out, where
}

// GroupOf returns the group a workload runs together with, or nil.
func (l *Lab) GroupOf(w *Workload) *Group {
	for _, g := range l.Groups {
		for _, x := range g.Workloads {
			if x == w {
				return g
			}
		}
	}
	return nil
}

// String names the group for messages.
func (g *Group) String() string { return fmt.Sprintf("group %s", g.Name) }

// Group is workloads that start at the same time, shared hosts or not:
// `group "NAME" { workloads = [...] }`. In the run order of each host the
// group takes the place of its first workload in file order.
type Group struct {
	Name, Slug string
	Workloads  []*Workload // file order of the references
	Range      hcl.Range
}
