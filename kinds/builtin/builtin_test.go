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
		if _, ok := k.(steps.Stepper); !ok {
			t.Errorf("%s: no step (steps.Stepper)", d.Name)
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
