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
