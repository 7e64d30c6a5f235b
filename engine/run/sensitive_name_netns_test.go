package run

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/engine/plan"
	"github.com/rlab-dev/rlab/engine/results"
)

// TestSensitiveFileNameMaskedNetns: a workload that writes a file named
// with a sensitive -var (real sshd; pulled by the bundle and by SFTP) lands
// in the run directory with the value masked in its name: no file name, and
// no byte of report.html, manifest.json or any other file, holds it; the
// run is complete (its manifest matches the files). The workload's own.pcap
// holding the value is a log (no capture step made it), masked as logs are.
func TestSensitiveFileNameMaskedNetns(t *testing.T) {
	_, hosts := netnsBed(t, 1)
	const token = "TOKENfile42"
	dir := t.TempDir()
	src := `lab "sensname" {}
variable "token" {
  type      = string
  sensitive = true
}
` + hosts + `
workload "out" {
  tool = "exec"
  host = host.h0
  command = ["sh", "-c", "echo small > small-$1.txt; head -c 2000000 /dev/zero > big-$1.bin; mkdir -p d-$1; echo in > d-$1/f; echo $1 > own.pcap", "sh", var.token]
}`
	if err := os.WriteFile(filepath.Join(dir, "lab.hcl"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	l, diags := lab.Load([]string{filepath.Join(dir, "lab.hcl")}, lab.LoadOptions{Vars: map[string]string{"token": token}})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	res := runPlanned(context.Background(), t, l, plan.Options{}, Options{Connector: sshConnector(t), Out: filepath.Join(t.TempDir(), "run")})
	if res.Code != ExitOK {
		t.Fatalf("code %d: %v", res.Code, res.Err)
	}
	var names []string
	filepath.WalkDir(res.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(res.Dir, p)
		names = append(names, rel)
		if strings.Contains(rel, token) {
			t.Errorf("a file of the run directory is named with the sensitive value: %s", rel)
		}
		if !d.IsDir() {
			if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(token)) {
				t.Errorf("%s holds the sensitive value", rel)
			}
		}
		return nil
	})
	logs := filepath.Join(res.Dir, "hosts", "h0", "logs")
	for _, f := range []struct{ name, want string }{
		{"small-(sensitive).txt", "small\n"},
		{"d-(sensitive)/f", "in\n"},
	} {
		if b, err := os.ReadFile(filepath.Join(logs, f.name)); err != nil || string(b) != f.want {
			t.Errorf("%s: %q, %v; want %q (files: %s)", f.name, b, err, f.want, strings.Join(names, " "))
		}
	}
	if st, err := os.Stat(filepath.Join(logs, "big-(sensitive).bin")); err != nil || st.Size() != 2000000 {
		t.Errorf("big-(sensitive).bin (by SFTP): %v, %v", st, err)
	}
	if err := results.CheckComplete(res.Dir); err != nil {
		t.Errorf("run directory: %v", err)
	}
}
