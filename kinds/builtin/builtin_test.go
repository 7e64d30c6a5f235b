package builtin_test

import (
	"testing"

	"github.com/rlab-dev/rlab/engine/toolout"
	"github.com/rlab-dev/rlab/kinds"
	"github.com/rlab-dev/rlab/kinds/builtin"
	"github.com/rlab-dev/rlab/steps"
)

// TestEveryKindHasItsAbilities: every built-in family builds steps, and
// every family of RDMA tools reads their output (tcp is measured by the
// agent, exec's output is kept): a family missing one would pass `rlab
// validate` and fail, or record nothing, in `rlab run`.
func TestEveryKindHasItsAbilities(t *testing.T) {
	builtin.Register()
	builtin.Register() // twice is once
	ks := kinds.Kinds()
	if len(ks) != 6 {
		t.Fatalf("%d families registered, want the 6 built-in ones", len(ks))
	}
	for _, k := range ks {
		d := k.Desc()
		if len(d.Tools) == 0 {
			t.Errorf("%s: no tools", d.Name)
		}
		if _, ok := k.(steps.OpMaker); !ok {
			t.Errorf("%s: no step (steps.OpMaker)", d.Name)
		}
		rdma := false
		for _, tl := range d.Tools {
			rdma = rdma || tl.RDMA
			if got, _ := kinds.KindOf(tl.Name); got != k {
				t.Errorf("%s: KindOf(%s) = %v", d.Name, tl.Name, got)
			}
		}
		if _, ok := k.(toolout.Parser); ok != rdma {
			t.Errorf("%s: parser %v, RDMA tools %v: a family of RDMA tools parses their output, no other does", d.Name, ok, rdma)
		}
	}
}

// TestEveryToolHasAPace: every built-in tool says how long a run of it
// takes (kinds.Pace), so the estimate of `rlab plan` counts it: a tool
// bound by iterations has a default count and a time per iteration or a
// rate, one bound by bytes a rate, one that cannot be told says why.
func TestEveryToolHasAPace(t *testing.T) {
	builtin.Register()
	for _, tl := range kinds.All() {
		p := tl.Pace
		switch {
		case p.Start <= 0:
			t.Errorf("%s: no Pace.Start", tl.Name)
		case p.Unknown != "":
		case tl.Iterations && (p.Iterations <= 0 || (p.PerIteration <= 0 && p.Rate <= 0)):
			t.Errorf("%s: bound by iterations, but its pace has no default count or no time per iteration: %+v", tl.Name, p)
		case tl.Bytes && p.Rate <= 0:
			t.Errorf("%s: bound by bytes, but its pace has no rate: %+v", tl.Name, p)
		case !tl.Iterations && !tl.Bytes && !tl.Duration:
			t.Errorf("%s: neither iterations, bytes nor a duration bound it, and its pace says no reason: %+v", tl.Name, p)
		}
	}
}
