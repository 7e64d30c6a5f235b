package run

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc"
	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/engine/plan"
	"github.com/rlab-dev/rlab/engine/runstate"
)

// TestFactsRedacted: a host's facts name its login user, its work dir
// (under that user's home) and its RDMA devices, and a lab may make the
// user a sensitive value (`user = var.login`, which the plan and the
// status lines redact, SECURITY 181) or name a device after one (an rdma
// block's `device`, a kept rxe's `name`). facts.json was written as the
// host said it (attack round 14): the value twice there. It is written
// redacted; the run keeps using the facts as they came. state.json keeps
// the user: rlab down logs in as it.
func TestFactsRedacted(t *testing.T) {
	const tok = "Zq9xCANARYfacts"
	src := `lab "t" {}
variable "login" {
  type      = string
  sensitive = true
}
host "a" {
  address = "127.0.0.1"
  user    = var.login
}
workload "e" {
  tool    = "exec"
  host    = host.a
  command = ["true"]
}
`
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "lab.hcl"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	l, diags := lab.Load([]string{filepath.Join(dir, "lab.hcl")}, lab.LoadOptions{Vars: map[string]string{"login": tok}})
	if diags.HasErrors() {
		t.Fatalf("load: %v", diags)
	}
	bed := newPipeBed(t)
	// What a host reached as that user answers (the in-process agent
	// runs as whoever runs the test).
	bed.rewrite = map[string]func(*rpc.Request){"a": func(req *rpc.Request) {
		if _, f, ok := rpc.Match(req, rpc.Facts); ok {
			f.User = tok
			f.WorkDir = "/home/" + tok + "/.cache/rlab/runs/x"
			f.RDMA = append(f.RDMA, proto.RDMADevice{Name: tok, Driver: "hw", NodeType: "CA"})
		}
	}}
	res := runPlanned(context.Background(), t, l, plan.Options{}, Options{Connector: bed, Out: filepath.Join(t.TempDir(), "run"), NoReport: true})
	if res.Code != ExitOK {
		t.Fatalf("code %d: %v", res.Code, res.Err)
	}
	b, err := os.ReadFile(filepath.Join(res.Dir, "hosts", "a", "facts.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f proto.Facts
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("facts.json is not the facts: %v", err)
	}
	if f.CPUs < 1 || len(f.RDMA) == 0 {
		t.Errorf("facts.json lost what the host said: %+v", f)
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
