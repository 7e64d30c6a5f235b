package report

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/engine/rundir"
)

// TestStateOfManyValuesRefused: the report reads a received state.json's
// provision records within the bounds rlab down reads it with (it read it
// whole: 9 MB of empty hosts took about 2 GB, 12 MB of "pkg":null
// members of one host's provision.for some 300 MB), says so in a warning,
// and a real-sized record still reads.
func TestStateOfManyValuesRefused(t *testing.T) {
	var names strings.Builder
	for i := range rundir.StateObjects + 1 {
		if i > 0 {
			names.WriteByte(',')
		}
		fmt.Fprintf(&names, `"%x":null`, i)
	}
	for _, tc := range []struct {
		name, doc string
		ok        bool
	}{
		{"empty hosts", `{"hosts":[` + strings.TrimSuffix(strings.Repeat("{},", rundir.StateObjects+1), ",") + `]}`, false},
		{"package names", `{"hosts":[{"slug":"h","provision":{"for":{` + names.String() + `}}}]}`, false},
		{"real size", `{"hosts":[{"slug":"h","provision":{"family":"debian","packages":["perftest"],"installed":["perftest"],"for":{"perftest":["ib_write_bw"]},"done":true}}]}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "state.json"), []byte(tc.doc), 0o600); err != nil {
				t.Fatal(err)
			}
			b := &builder{dir: dir, d: &Data{}}
			var m0, m1 runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&m0)
			got := b.provisions()
			runtime.ReadMemStats(&m1)
			a := m1.TotalAlloc - m0.TotalAlloc
			t.Logf("%d bytes, %d allocated (%.1fx); warnings %q", len(tc.doc), a, float64(a)/float64(len(tc.doc)), b.d.Warnings)
			if tc.ok {
				if p := got["h"]; p == nil || len(p.Installed) != 1 || p.Installed[0].For != "ib_write_bw" {
					t.Fatalf("provisions %+v, want perftest for ib_write_bw", got)
				}
				return
			}
			if got != nil || !strings.Contains(strings.Join(b.d.Warnings, "\n"), "refusing to decode") {
				t.Fatalf("provisions %d, warnings %q; want refused", len(got), b.d.Warnings)
			}
			// The file is read (its size) and the text scanned; the
			// skeleton decode builds little (the whole decode: 20-100x).
			if a > 4*uint64(len(tc.doc))+(16<<20) {
				t.Errorf("refusing %d bytes allocated %d MiB", len(tc.doc), a>>20)
			}
		})
	}
}
