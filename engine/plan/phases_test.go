package plan

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/engine/lab"
)

// TestPhasesFollowThePlan: the run's phases (Phases) can execute the plan of every
// example and corpus lab (no edge points back to an earlier phase), and a
// plan they cannot execute is refused with the edge named.
func TestPhasesFollowThePlan(t *testing.T) {
	files, _ := filepath.Glob("../../labs/*.hcl")
	corpus, _ := filepath.Glob("../../testdata/labs/valid/*.hcl")
	files = append(files, corpus...)
	if len(files) < 5 {
		t.Fatalf("found %d labs, want the example and corpus labs", len(files))
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".hcl"), func(t *testing.T) {
			l, diags := lab.Load([]string{f}, lab.LoadOptions{})
			if diags.HasErrors() {
				t.Fatalf("load: %v", diags)
			}
			p, err := NewWith(l, Options{Provision: true}) // with every kind of step
			if err != nil {
				t.Fatal(err)
			}
			if err := p.checkPhases(); err != nil {
				t.Error(err)
			}
		})
	}

	src := filepath.Join(t.TempDir(), "bend.hcl")
	if err := os.WriteFile(src, []byte(`
lab "t" {}
host "a" { address = "127.0.0.1" }
host "b" { address = "127.0.0.1" }
rxe "a" {
  host   = host.a
  netdev = "lo"
}
rxe "b" {
  host   = host.b
  netdev = "lo"
}
workload "w" {
  tool    = "exec"
  host    = host.a
  command = ["true"]
}
workload "v" {
  tool    = "exec"
  host    = host.b
  command = ["true"]
}
capture "c" {
  host   = host.a
  netdev = "lo"
  during = [workload.w]
}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	l := load(t, src, lab.LoadOptions{})
	for _, tt := range []struct {
		name  string
		bend  func(p *Plan)
		error string
	}{
		{"rxe after a workload", func(p *Plan) {
			s := p.Step("a/create-rxe/a")
			s.DependsOn = append(s.DependsOn, "a/workload-run/w")
		}, "step a/create-rxe/a (run phase rxe) depends on a/workload-run/w (run phase workloads)"},
		{"preflight after fetch", func(p *Plan) {
			s := p.Step("a/preflight")
			s.DependsOn = append(s.DependsOn, "a/fetch")
		}, "step a/preflight (run phase preflight) depends on a/fetch (run phase fetch)"},
		{"a kind the run does not know", func(p *Plan) { p.Step("a/fetch").Action = "reboot" }, `step a/fetch is of kind "reboot"`},
		{"one rxe after another", func(p *Plan) {
			s := p.Step("b/create-rxe/b")
			s.DependsOn = append(s.DependsOn, "a/create-rxe/a")
		}, "step b/create-rxe/b depends on a/create-rxe/a: the run executes the steps of phase rxe at once"},
		{"a workload after a scoped capture's stop", func(p *Plan) {
			s := p.Step("b/workload-run/v")
			s.DependsOn = append(s.DependsOn, "a/stop-capture/c")
		}, "step b/workload-run/v depends on a/stop-capture/c: the run executes the steps of phase workloads at once"},
		{"a scoped capture's start needed by a workload its stop does not wait for", func(p *Plan) {
			s := p.Step("b/workload-run/v")
			s.DependsOn = append(s.DependsOn, "a/start-capture/c")
		}, `step b/workload-run/v needs capture "c" started, but the capture's stop does not wait for it`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := NewWith(l, Options{Provision: true}) // with every kind of step
			if err != nil {
				t.Fatal(err)
			}
			if err := p.checkPhases(); err != nil {
				t.Fatalf("the plan as made: %v", err)
			}
			tt.bend(p)
			if err := p.checkPhases(); err == nil || !strings.Contains(err.Error(), tt.error) {
				t.Errorf("checkPhases = %v, want an error with %q", err, tt.error)
			}
		})
	}
}
