package run

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestParallelBoundsWorkloads: --parallel N (Options.Parallel) is how many
// workloads run at once, as labs/README.md and the flag's help say: three
// independent workloads on three hosts each note how many others were
// running when they started (a marker file per running workload); with 1
// none saw another, with 3 all three were running together (each waits,
// up to 5 s, for the other two).
func TestParallelBoundsWorkloads(t *testing.T) {
	for _, tc := range []struct {
		parallel int
		want     string // what each workload saw, sorted
	}{
		{1, "0 0 0"},
		{3, "3 3 3"},
	} {
		t.Run(fmt.Sprint(tc.parallel), func(t *testing.T) {
			run, seen := t.TempDir(), t.TempDir()
			script := `touch ` + run + `/$$; i=0; `
			if tc.parallel == 1 {
				script = `ls ` + run + ` | wc -l > ` + seen + `/$$; touch ` + run + `/$$; sleep 0.2; rm ` + run + `/$$`
			} else {
				script += `while [ $(ls ` + run + ` | wc -l) -lt 3 ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done; ls ` + run + ` | wc -l > ` + seen + `/$$`
			}
			src := `
lab "t" {}
host "a" { address = "127.0.0.1" }
host "b" { address = "127.0.0.1" }
host "c" { address = "127.0.0.1" }
`
			for _, h := range []string{"a", "b", "c"} {
				src += fmt.Sprintf("workload %q {\n  tool = \"exec\"\n  host = host.%s\n  command = [\"sh\", \"-c\", %q]\n}\n", h, h, script)
			}
			res, _ := runLab(t, src, Options{Parallel: tc.parallel})
			if res.Code != ExitOK {
				t.Fatalf("code %d: %v", res.Code, res.Err)
			}
			files, _ := filepath.Glob(filepath.Join(seen, "*"))
			var got []string
			for _, f := range files {
				b, _ := os.ReadFile(f)
				got = append(got, strings.TrimSpace(string(b)))
			}
			slices.Sort(got)
			if g := strings.Join(got, " "); g != tc.want {
				t.Errorf("--parallel %d: workloads saw %q running, want %q", tc.parallel, g, tc.want)
			}
		})
	}
}
