package run

import (
	"reflect"
	"testing"

	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/engine/plan"
	"github.com/rlab-dev/rlab/kinds"
	"github.com/rlab-dev/rlab/steps"
)

// TestOneWorkloadModel: the lab model and the step kinds hold a workload's
// names, tool and options in one type (kinds.Workload) that both embed
// and stepWorkload hands over whole; a field both declare on their own is
// only a reference the run resolves (a lab *Host or *RXE becomes its name).
// A new attribute added to both by hand, to be copied field by field,
// fails here.
func TestOneWorkloadModel(t *testing.T) {
	lt, st := reflect.TypeOf(lab.Workload{}), reflect.TypeOf(steps.Workload{})
	shared := reflect.TypeOf(kinds.Workload{})
	for _, typ := range []reflect.Type{lt, st} {
		f, ok := typ.FieldByName("Workload")
		if !ok || !f.Anonymous || f.Type != shared {
			t.Errorf("%s does not embed kinds.Workload", typ)
		}
	}
	refs := map[reflect.Type]bool{reflect.TypeOf(&lab.Host{}): true, reflect.TypeOf(&lab.Device{}): true}
	for i := 0; i < st.NumField(); i++ {
		sf := st.Field(i)
		if sf.Anonymous {
			continue
		}
		lf, ok := lt.FieldByName(sf.Name)
		if !ok || len(lf.Index) > 1 {
			continue // the steps' own (ServerAddr, DialDevice, Port) or the shared type's
		}
		if !refs[lf.Type] || sf.Type.Kind() != reflect.String {
			t.Errorf("lab.Workload.%s (%s) and steps.Workload.%s (%s) are two copies of one field: move it into kinds.Workload", sf.Name, lf.Type, sf.Name, sf.Type)
		}
	}

	h1, h2 := &lab.Host{Name: "s", Address: "192.0.2.1"}, &lab.Host{Name: "c"}
	w := &lab.Workload{Workload: kinds.Workload{Name: `bw["a"]`, Slug: "bw-a", Index: 3, Tool: "ib_write_bw",
		Options: kinds.Options{Sizes: []int64{4096}, Iterations: 7, Repeat: 2}},
		ServerHost: h1, ClientHost: h2, ServerDevice: &lab.Device{Name: "rs"}, ClientDevice: &lab.Device{Name: "rc"}}
	sw := stepWorkload(&plan.WorkloadPlan{Workload: w}) // RDMA: no dial, the client dials its server rxe
	if !reflect.DeepEqual(sw.Workload, w.Workload) {
		t.Errorf("stepWorkload: shared part %+v, want %+v", sw.Workload, w.Workload)
	}
	if sw.ServerHost != "s" || sw.ClientHost != "c" || sw.ServerDevice != "rs" || sw.ClientDevice != "rc" || sw.ServerAddr != "" || sw.DialDevice != "" {
		t.Errorf("stepWorkload: references resolved to %+v", sw)
	}
}
