package lab

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestYAMLEncodeBounded: yamlencode indents each line by its depth, so a
// list nested 3,600 deep (30 locals of 120 brackets) around 50,000 numbers,
// an 8 KB lab, is 360 MB of YAML, which the meter counted only after the
// call had made it (SECURITY 110: validate 12.5 s, 1.05 GB). It is now
// refused before the call; an ordinary yamlencode still works.
func TestYAMLEncodeBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("lab \"y\" {}\nlocals {\n  d0 = [for i in range(50) : [for j in range(1000) : 1]]\n")
	for k := 1; k <= 30; k++ {
		fmt.Fprintf(&b, "  d%d = %slocal.d%d%s\n", k, strings.Repeat("[", 120), k-1, strings.Repeat("]", 120))
	}
	b.WriteString("  out = yamlencode(local.d30)\n}\nhost \"h\" {\n  address = \"192.0.2.1\"\n  user = length(local.out) > 0 ? \"u\" : \"v\"\n}\n")
	p := filepath.Join(t.TempDir(), "lab.hcl")
	must(t, os.WriteFile(p, []byte(b.String()), 0o644))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, diags := Load([]string{p}, LoadOptions{})
	runtime.ReadMemStats(&after)
	if !strings.Contains(diagLines(diags), "yamlencode()") {
		t.Errorf("not refused at yamlencode:\n%s", diagLines(diags))
	}
	if made := after.TotalAlloc - before.TotalAlloc; made > 200<<20 {
		t.Errorf("the load allocated %d MiB: yamlencode ran before it was refused", made>>20)
	}

	p = filepath.Join(t.TempDir(), "ok.hcl")
	must(t, os.WriteFile(p, []byte(`lab "y" {
  description = yamlencode({ a = [[1, 2], ["x"]] })
}
host "h" {
  address = "192.0.2.1"
}
`), 0o644))
	l, diags := Load([]string{p}, LoadOptions{})
	if diags.HasErrors() {
		t.Fatalf("errors:\n%s", diagLines(diags))
	}
	if !strings.Contains(l.Description, "- - 1") {
		t.Errorf("description %q", l.Description)
	}
}
