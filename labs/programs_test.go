package labs

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/engine/lab"
)

// TestProgramsCompile builds the tutorial programs of programs/src with
// the warnings the labs' hosts may print turned into errors, in a copy (the
// source folder stays as shipped). It needs gcc, make and the verbs and
// RDMA-CM headers (Debian: libibverbs-dev librdmacm-dev); without them it
// says which is missing and skips. engine/vm's TestE2ERealRXE runs them.
func TestProgramsCompile(t *testing.T) {
	for _, tool := range []string{"make", "gcc"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	for _, h := range []string{"/usr/include/infiniband/verbs.h", "/usr/include/rdma/rdma_cma.h"} {
		if _, err := os.Stat(h); err != nil {
			t.Skipf("%s missing (install libibverbs-dev librdmacm-dev)", h)
		}
	}
	src := filepath.Join("programs", "src")
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("make", "CC=gcc", "CFLAGS=-O2 -g -Wall -Wextra -Werror")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make: %v\n%s", err, out)
	}
	for _, p := range []string{"server", "client", "imm_client", "bulk_client"} {
		out, err := exec.Command(filepath.Join(dir, p)).CombinedOutput()
		// With no arguments each prints its usage and exits 2, touching no device.
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.HasPrefix(string(out), "usage: ") {
			t.Errorf("%s with no arguments: %v, %q; want usage and exit 2", p, err, out)
		}
	}
}

// TestProgramLabsValid: the labs of programs/ load (the program block,
// program workloads, metric blocks) with no diagnostic at all; their runs
// are engine/vm's TestE2EProgramLabs.
func TestProgramLabsValid(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("programs", "*.hcl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no program labs: %v", err)
	}
	vm, err := os.ReadFile("../engine/vm/e2e_program_labs_test.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		l, diags := lab.Load([]string{f}, lab.LoadOptions{})
		if len(diags) > 0 {
			t.Errorf("%s: %s", f, diags.Error())
			continue
		}
		if len(l.Workloads) == 0 {
			t.Errorf("%s: no workloads", f)
		}
		if name := strings.TrimSuffix(filepath.Base(f), ".hcl"); !strings.Contains(string(vm), `"`+name+`"`) {
			t.Errorf("%s: TestE2EProgramLabs does not run it", f)
		}
	}
}
