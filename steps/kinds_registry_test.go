package steps

import (
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/kinds"
)

func TestNewWorkloadKinds(t *testing.T) {
	for _, tool := range KindNames() {
		w := &Workload{Workload: kinds.Workload{Name: "w", Slug: "w", Tool: tool, Options: kinds.Options{Command: []string{"true"}, Program: &kinds.Source{Name: "p"}}}, Host: "a", ServerHost: "a", ClientHost: "b"}
		s, err := NewWorkload(w)
		if err != nil {
			t.Errorf("%s: %v", tool, err)
			continue
		}
		if _, ok := s.(Outcomer); !ok {
			t.Errorf("%s: step has no outcome", tool)
		}
		if s.Describe() == "" {
			t.Errorf("%s: empty description", tool)
		}
	}
	_, err := NewWorkload(&Workload{Workload: kinds.Workload{Name: "x", Tool: "ib_write_bandwidth"}})
	if err == nil || !strings.Contains(err.Error(), "valid: exec, ib_atomic_bw") {
		t.Errorf("unknown tool error = %v, want the list of valid tools", err)
	}
	if _, err := NewWorkload(&Workload{Workload: kinds.Workload{Name: "x", Tool: "exec"}, Host: "a"}); err == nil {
		t.Error("exec without command: no error")
	}
}

func TestPortFor(t *testing.T) {
	tests := []struct {
		w    Workload
		n    int
		want int
	}{
		{Workload{Workload: kinds.Workload{Index: 0}}, 0, 20000},
		{Workload{Workload: kinds.Workload{Index: 3}}, 1, 20031},
		{Workload{Workload: kinds.Workload{Index: 3}}, 12, 20032},
		{Workload{Workload: kinds.Workload{Index: 3}, Port: 5201}, 0, 5201},
	}
	for _, tt := range tests {
		if got := PortFor(&tt.w, tt.n); got != tt.want {
			t.Errorf("PortFor(index %d, port %d, run %d) = %d, want %d", tt.w.Index, tt.w.Port, tt.n, got, tt.want)
		}
	}
}
