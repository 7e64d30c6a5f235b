package lab

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
)

var updateDiag = flag.Bool("update", false, "rewrite testdata/diag/*.golden")

// TestLongLineDiagnosticGolden: a diagnostic on a lab line of 4 MB shows a
// window of MaxSourceLine characters around the range, with … where the
// line was cut, and the caret under the range; it printed the whole line
// before. testdata/diag/*.golden (-update rewrites them).
func TestLongLineDiagnosticGolden(t *testing.T) {
	long := strings.Repeat("x", 4<<20-200) // a 4 MB line, under MaxFileBytes
	for _, c := range []struct{ name, line string }{
		{"middle", `  a = ["` + long[:2<<20-100] + `", nosuch.thing, "` + long[:2<<20-100] + `"]`},
		{"start", `  a = [nosuch.thing, "` + long + `"]`},
		{"end", `  a = ["` + long + `", nosuch.thing]`},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := []byte("lab \"x\" {}\nhost \"a\" {\n  address = \"192.0.2.1\"\n}\nlocals {\n" + c.line + "\n}\n")
			_, diags := LoadSource("long.hcl", src, t.TempDir(), LoadOptions{})
			if len(diags) == 0 {
				t.Fatal("no diagnostic")
			}
			files := map[string]*hcl.File{"long.hcl": {Bytes: src}}
			var plain, color strings.Builder
			must(t, WriteDiagnostics(&plain, files, diags, 100, false))
			must(t, WriteDiagnostics(&color, files, diags, 100, true))
			for _, out := range []string{plain.String(), color.String()} {
				if len(out) > 4<<10 {
					t.Errorf("%d bytes printed for one diagnostic, want under 4 KiB", len(out))
				}
			}
			if !strings.Contains(color.String(), highlightOn+"nosuch.thing"+highlightOff) {
				t.Errorf("colour output lost the highlight:\n%q", color.String())
			}
			golden := filepath.Join("testdata", "diag", c.name+".golden")
			if *updateDiag {
				must(t, os.MkdirAll(filepath.Dir(golden), 0o755))
				must(t, os.WriteFile(golden, []byte(plain.String()), 0o644))
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(string(want), plain.String()); d != "" {
				t.Errorf("diagnostic differs from %s (-want +got):\n%s", golden, d)
			}
		})
	}
}
