package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/engine/toolout"
	"github.com/rlab-dev/rlab/kinds"
	"github.com/rlab-dev/rlab/kinds/toolopts"
	"github.com/rlab-dev/rlab/steps"
)

// A made-up tool, known to this test build only by the one value its family
// registers (a descriptor entry, a step and a parser) (engine/run's madeup_test.go runs one end to end on
// in-process agents); here the CLI's validate and plan take it.
// cliFakeKind is the made-up family: its one value, registered by
// TestMain (main_test.go).
type cliFakeKind struct{}

// Options: the made-up tool takes the shared options its descriptor's
// flags name (sizes, iterations), decoded by engine/lab.
func (cliFakeKind) Options(t kinds.Tool) []toolopts.Option { return toolopts.Standard(t) }

func (cliFakeKind) Desc() kinds.Desc {
	return kinds.Desc{Name: "cli_fake", Tools: []kinds.Tool{{Name: "cli_fake", Family: "cli_fake", RDMA: true,
		TransportWhy: "cli_fake has no transports", Sizes: true, Iterations: true,
		Program: &kinds.Program{Name: "cli_fake", Packages: kinds.Packages{Debian: "cli-fake", RHEL: "cli-fake", SUSE: "cli-fake"}},
		Metrics: []string{"duration"}, Chart: "fake"}}}
}

func (cliFakeKind) NewStep(w *steps.Workload) (steps.Step, error) { return cliFake{w}, nil }

func (cliFakeKind) Parse([]byte, toolout.Options) ([]toolout.Row, toolout.Info, error) {
	return nil, toolout.Info{}, nil
}

type cliFake struct{ w *steps.Workload }

func (s cliFake) Describe() string                      { return "cli_fake " + s.w.Name }
func (cliFake) Apply(context.Context, *steps.Env) error { return nil }
func (cliFake) Undo(context.Context, *steps.Env) error  { return nil }

const cliFakeLab = `lab "fake" {}
host "a" { address = "192.0.2.1" }
host "b" { address = "192.0.2.2" }
rxe "a" {
  host   = host.a
  netdev = "eth1"
}
rxe "b" {
  host   = host.b
  netdev = "eth1"
}
workload "f" {
  tool   = "cli_fake"
  server = rxe.a
  client = rxe.b
  sizes  = [64]
}
`

func TestMadeUpToolCLI(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.hcl")
	bad := filepath.Join(dir, "bad.hcl")
	for p, src := range map[string]string{good: cliFakeLab, bad: strings.Replace(cliFakeLab, "sizes  = [64]", "sizes  = [64]\n  qps    = 2", 1)} {
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	if code, out, errText := execute(t, newValidateCmd(), good); code != exitOK {
		t.Errorf("validate: exit %d\n%s\n%s", code, out, errText)
	}
	code, out, errText := execute(t, newValidateCmd(), bad)
	if code == exitOK || !strings.Contains(out+errText, "Argument not valid for cli_fake") {
		t.Errorf("validate of qps on cli_fake: exit %d\n%s\n%s", code, out, errText)
	}
	code, out, errText = execute(t, newPlanCmd(), good)
	if code != exitOK || !strings.Contains(out, "cli_fake") {
		t.Errorf("plan: exit %d, want the workload's steps\n%s\n%s", code, out, errText)
	}
}
