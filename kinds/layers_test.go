package kinds

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLayers: the import rules this package's doc states, checked over
// `go list -deps` rather than trusted as prose. kinds is a standard-library
// leaf; the layers that read descriptors (steps, engine/toolout,
// engine/lab, engine/results, engine/plan) never import a family or
// kinds/builtin (families import them); a family imports no other family.
func TestLayers(t *testing.T) {
	const mod = "github.com/rlab-dev/rlab/"
	deps := func(pkg string) []string {
		out, err := exec.Command("go", "list", "-deps", mod+pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		return strings.Fields(string(out))
	}
	isFamily := func(d string) bool {
		// kinds/internal holds code the families share (metric blocks),
		// kinds/toolopts the options some families take and the engine
		// decodes through them: neither is a family.
		return strings.HasPrefix(d, mod+"kinds/") && !strings.HasPrefix(d, mod+"kinds/internal/") && d != mod+"kinds/toolopts"
	}
	for _, d := range deps("kinds") {
		if first, _, _ := strings.Cut(d, "/"); strings.Contains(first, ".") && d != mod+"kinds" {
			t.Errorf("kinds imports %s: it may import only the standard library", d)
		}
	}
	for _, pkg := range []string{"steps", "engine/toolout", "engine/lab", "engine/results", "engine/plan"} {
		ds := deps(pkg)
		if len(ds) < 5 {
			t.Fatalf("go list -deps %s: %q", pkg, ds)
		}
		for _, d := range ds {
			if isFamily(d) {
				t.Errorf("%s imports %s: a layer below the families must not", pkg, d)
			}
		}
	}
	for _, fam := range []string{"perftest", "pingpong", "rping", "tcp", "exec", "program"} {
		for _, d := range deps("kinds/" + fam) {
			if isFamily(d) && d != mod+"kinds/"+fam {
				t.Errorf("kinds/%s imports %s: a family imports no other", fam, d)
			}
		}
	}
}
