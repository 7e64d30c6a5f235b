package run

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkRunNoop50 is the engine's own cost per run: 50 hosts, one no-op
// exec workload each, on in-process agents (no SSH): run directory, journal,
// events, connect+facts, preflight, the workload DAG, fetch, expects,
// results, teardown and manifest (report.html off). bench/run measures the
// same lab over real SSH against `rlab facts`.
func BenchmarkRunNoop50(b *testing.B) {
	var src strings.Builder
	src.WriteString("lab \"bench\" {}\n")
	for i := range 50 {
		fmt.Fprintf(&src, "host \"h%d\" { address = \"127.0.0.1\" }\nworkload \"w%d\" {\n  tool = \"exec\"\n  host = host.h%d\n  command = [\"true\"]\n}\n", i, i, i)
	}
	l := loadLab(b, src.String())
	root := b.TempDir()
	b.ResetTimer()
	for i := range b.N {
		bed := newPipeBed(b)
		res := Run(context.Background(), l, Options{Connector: bed, Out: filepath.Join(root, fmt.Sprint(i)), NoReport: os.Getenv("RLAB_BENCH_REPORT") == ""})
		if res.Code != ExitOK {
			b.Fatalf("code %d: %v", res.Code, res.Err)
		}
	}
}
