package lab

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoWorkloads: a lab that would run nothing is named for why: the
// workload's empty for_each or count = 0 at its expression, else the
// empty for_each of another block, else the lab block; a lab with a
// workload has no such error.
func TestNoWorkloads(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      string // in the one error's detail ("" = none)
		line      int    // its subject's line
	}{
		{"workload for_each", "lab \"x\" {}\nhost \"h\" { address = \"10.0.0.1\" }\nworkload \"w\" {\n  for_each = {}\n  tool = \"exec\"\n  host = host.h\n  command = [\"true\"]\n}\n",
			`The for_each of workload "w" is empty`, 4},
		{"workload count", "lab \"x\" {}\nhost \"h\" { address = \"10.0.0.1\" }\nworkload \"w\" {\n  count = 0\n  tool = \"exec\"\n  host = host.h\n  command = [\"true\"]\n}\n",
			`The count of workload "w" is empty`, 4},
		{"host for_each only", "lab \"x\" {}\nhost \"h\" {\n  for_each = toset([])\n  address = \"10.0.0.1\"\n}\n",
			`The for_each of host "h" is empty`, 3},
		{"no workload block", "lab \"x\" {}\nhost \"h\" { address = \"10.0.0.1\" }\n",
			`Lab "x" declares no workload block`, 1},
		{"a workload", "lab \"x\" {}\nhost \"h\" { address = \"10.0.0.1\" }\nworkload \"w\" {\n  tool = \"exec\"\n  host = host.h\n  command = [\"true\"]\n}\n",
			"", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "x.hcl")
			if err := os.WriteFile(p, []byte(tc.src), 0o644); err != nil {
				t.Fatal(err)
			}
			l, diags := Load([]string{p}, LoadOptions{})
			if diags.HasErrors() {
				t.Fatal(diags.Error())
			}
			got := l.NoWorkloads()
			if tc.want == "" {
				if got != nil {
					t.Fatalf("NoWorkloads = %v, want none", got)
				}
				return
			}
			if len(got) != 1 || !strings.Contains(got[0].Detail, tc.want) || !strings.Contains(got[0].Detail, AllowEmptyFlag) {
				t.Fatalf("NoWorkloads = %v, want one error with %q", got, tc.want)
			}
			if s := got[0].Subject; s == nil || s.Filename != p || s.Start.Line != tc.line {
				t.Errorf("subject %v, want %s line %d", s, p, tc.line)
			}
		})
	}
}
