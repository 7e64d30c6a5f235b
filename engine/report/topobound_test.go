package report

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/engine/results/classtest"
)

// TestTopologyBoundedByWhatIsDrawn: a lab of few hosts and very many
// workloads stays under maxDrawnHosts, and its picture drew every
// workload (megabytes of SVG, and dot for as long as topologyTimeout);
// now the picture draws at most maxDrawnElements, the note says how many
// workloads it leaves out, and the DOT keeps them all. A lab within the
// bound is drawn whole, with no such note.
func TestTopologyBoundedByWhatIsDrawn(t *testing.T) {
	for _, tc := range []struct {
		tcp, exec int
		left      int
	}{{100, 2, 0}, {3000, 10, 3000 + 10 + 2 - maxDrawnElements}} {
		t.Run(fmt.Sprint(tc.tcp+tc.exec), func(t *testing.T) {
			src := fmt.Sprintf(`lab "many" {}
host "a" {
  address = "10.0.0.1"
}
host "b" {
  address = "10.0.0.2"
}
workload "tcp" {
  for_each = toset(flatten([for i in range(%d) : [for j in range(100) : "${i}-${j}"]]))
  tool     = "tcp"
  server   = host.a
  client   = host.b
}
workload "hello" {
  for_each = toset([for i in range(%d) : tostring(i)])
  tool     = "exec"
  host     = host.a
  command  = ["uname", "-r"]
}
`, tc.tcp/100, tc.exec)
			p := filepath.Join(t.TempDir(), "many.hcl")
			must(t, os.WriteFile(p, []byte(src), 0o644))
			l, diags := lab.Load([]string{p}, lab.LoadOptions{})
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			d, err := Build(classtest.WriteDir(t, 1), Options{Lab: l})
			if err != nil {
				t.Fatal(err)
			}
			top := d.Topology
			if top == nil || top.Image == "" {
				t.Fatalf("topology %+v: want a picture", top)
			}
			if !strings.Contains(top.DOT, fmt.Sprintf(`tcp[\"%d-99\"]`, tc.tcp/100-1)) && !strings.Contains(top.DOT, fmt.Sprintf(`tcp["%d-99"]`, tc.tcp/100-1)) {
				t.Errorf("the DOT lacks the last workload")
			}
			note := fmt.Sprintf("leaves out %d of the lab's %d workloads", tc.left, tc.tcp+tc.exec)
			if got := strings.Contains(top.Note, note); got != (tc.left > 0) {
				t.Errorf("note %q: want %q: %v", top.Note, note, tc.left > 0)
			}
			svg, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(string(top.Image), "data:image/svg+xml;base64,"))
			if err != nil {
				t.Fatal(err)
			}
			// What the picture draws: every workload's name is in it.
			if n := strings.Count(string(svg), "tcp[") + strings.Count(string(svg), "hello["); n > 2000 {
				t.Errorf("the picture draws %d workloads, want at most 2,000", n)
			}
			t.Logf("%d workloads drawn, %d KiB", strings.Count(string(svg), "tcp[")+strings.Count(string(svg), "hello["), len(svg)>>10)
		})
	}
}
