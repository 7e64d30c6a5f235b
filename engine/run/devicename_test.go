package run

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/engine/plan"
	"github.com/rlab-dev/rlab/engine/report"
	"github.com/rlab-dev/rlab/engine/runstate"
)

// TestDeviceNameRedacted: an rxe block's name is an expression, and a lab
// that names a device after a sensitive value (1 to 63 letters, digits,
// '_', '.' or '-': a GitHub token fits) had it raw in results.json (the
// workload's devices and each sample's) and report.html, while the plan
// said "(sensitive)" (attack round 14). state.json keeps it: rlab down
// deletes the device by that name, as it reaches the host by the
// address state.json keeps.
func TestDeviceNameRedacted(t *testing.T) {
	const tok = "ghp_Zq9xCANARYdevicename"
	src := `lab "t" {}
variable "tok" {
  type      = string
  sensitive = true
}
host "a" { address = "127.0.0.1" }
host "b" { address = "127.0.0.1" }
rxe "a" {
  host   = host.a
  netdev = "lo"
  name   = var.tok
}
rxe "b" {
  host   = host.b
  netdev = "lo"
}
program "p" {
  source = "prog.sh"
}
workload "w" {
  tool           = "program"
  program        = program.p
  server         = rxe.a
  client         = rxe.b
  server_command = ["sh", "prog.sh"]
  client_command = ["sh", "prog.sh"]
  ready          = "value"
  metric "value" {
    pattern = "value=(?P<value>[0-9]+)"
  }
}
`
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "prog.sh"), []byte("echo value=7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "lab.hcl"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	l, diags := lab.Load([]string{filepath.Join(dir, "lab.hcl")}, lab.LoadOptions{Vars: map[string]string{"tok": tok}})
	if diags.HasErrors() {
		t.Fatalf("load: %v", diags)
	}
	out := filepath.Join(t.TempDir(), "run")
	res := runPlanned(context.Background(), t, l, plan.Options{}, Options{Connector: rxeConnector(newPipeBed(t), &fakeKernel{devs: map[string]string{}}), Out: out, Preflight: noPreflight})
	if res.Code != ExitOK {
		t.Fatalf("code %d: %v", res.Code, res.Err)
	}
	if err := report.Render(res.Dir); err != nil {
		t.Fatal(err)
	}
	r := readRun(t, res.Dir)
	if len(r.Workloads) != 1 || len(r.Workloads[0].Devices) != 2 || r.Workloads[0].Devices[1] != "rxe_lo" {
		t.Fatalf("results.json's workloads: %+v, want w on two devices", r.Workloads)
	}
	filepath.WalkDir(res.Dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() || d.Name() == runstate.File {
			return nil
		}
		b, _ := os.ReadFile(p)
		if n := bytes.Count(b, []byte(tok)); n > 0 {
			rel, _ := filepath.Rel(res.Dir, p)
			t.Errorf("%s holds the sensitive value %d times", rel, n)
		}
		return nil
	})
}
