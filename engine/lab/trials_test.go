package lab

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTrialsBounded: a lab whose workloads run more than MaxTrials trials
// (sizes × repeat, all workloads together) is refused at the workload that
// passes the bound (issue 24, attack round 5: 100,000 sizes × repeat 1,000,
// a 589 KB lab valid by every other rule, took `rlab plan` past 10 GB in a
// minute); one at the bound still loads.
func TestTrialsBounded(t *testing.T) {
	sizes := func(n int) string {
		s := make([]string, n)
		for i := range s {
			s[i] = fmt.Sprint(i + 1)
		}
		return "[" + strings.Join(s, ", ") + "]"
	}
	head := "lab \"t\" {}\nhost \"s\" {\n  address = \"192.0.2.1\"\n}\nhost \"c\" {\n  address = \"192.0.2.2\"\n}\n" +
		"rxe \"s\" {\n  host   = host.s\n  netdev = \"eth1\"\n}\nrxe \"c\" {\n  host   = host.c\n  netdev = \"eth1\"\n}\n"
	bw := func(extra, sz string, repeat int) string {
		return fmt.Sprintf("workload \"w\" {\n%s  tool   = \"ib_write_bw\"\n  server = rxe.s\n  client = rxe.c\n  repeat = %d\n  sizes  = %s\n}\n", extra, repeat, sz)
	}
	for _, c := range []struct {
		name, lab string
		refused   bool
	}{
		{"one workload past the bound", bw("", sizes(101), 1000), true},
		{"instances together past it", bw("  for_each = toset([\"a\", \"b\", \"c\"])\n", sizes(40), 1000), true},
		{"at the bound", bw("", sizes(100), 1000), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "lab.hcl")
			must(t, os.WriteFile(p, []byte(head+c.lab), 0o644))
			_, diags := Load([]string{p}, LoadOptions{})
			refused := false
			for _, d := range diags {
				if d.Summary == "Too many trials" {
					refused = true
				}
			}
			if refused != c.refused {
				t.Errorf("refused %v, want %v: %v", refused, c.refused, diags)
			}
			if !c.refused && diags.HasErrors() {
				t.Errorf("errors: %v", diags)
			}
		})
	}
}
