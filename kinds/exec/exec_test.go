package exec

import (
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/kinds"
	"github.com/rlab-dev/rlab/steps"
)

// TestNewStep: exec runs one command on one host; a workload without either
// is refused when its step is built, naming the workload.
func TestNewStep(t *testing.T) {
	for _, tc := range []struct {
		name    string
		w       steps.Workload
		wantErr string
		desc    string
	}{
		{"ok", steps.Workload{Workload: kinds.Workload{Name: "e", Tool: "exec", Options: kinds.Options{Command: []string{"ip", "-br", "addr"}}}, Host: "a"}, "", "exec e on host a: ip -br addr"},
		{"no command", steps.Workload{Workload: kinds.Workload{Name: "e", Tool: "exec"}, Host: "a"}, `workload "e" (exec): empty command`, ""},
		{"no host", steps.Workload{Workload: kinds.Workload{Name: "e", Tool: "exec", Options: kinds.Options{Command: []string{"true"}}}}, `workload "e" (exec): no host`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Kind{}.NewOp(&tc.w)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Describe(); got != tc.desc {
				t.Errorf("Describe() = %q, want %q", got, tc.desc)
			}
		})
	}
}

// TestDesc: exec is one tool on one host that records only the common
// metrics.
func TestDesc(t *testing.T) {
	d := Kind{}.Desc()
	if len(d.Tools) != 1 || d.Tools[0].Name != "exec" || !d.Tools[0].OneHost || d.Tools[0].Flavor != Flavor || len(d.Metrics) != 0 {
		t.Errorf("Desc() = %+v", d)
	}
}

// TestArgv: exec's argv hook is the command on its one host, no server,
// and a copy: what a caller does to it does not change the workload's.
func TestArgv(t *testing.T) {
	w := kinds.Workload{Name: "e", Tool: "exec", Options: kinds.Options{Command: []string{"ip", "-br", "addr"}}}
	s, c := Kind{}.Argv(kinds.ArgvIn{W: &w, Trial: kinds.Trial{Repeat: 1}})
	if s != nil || strings.Join(c, " ") != "ip -br addr" {
		t.Fatalf("Argv = %q, %q; want no server, the command", s, c)
	}
	c[0] = "rm"
	if w.Command[0] != "ip" {
		t.Error("Argv's argv shares the workload's command")
	}
}
