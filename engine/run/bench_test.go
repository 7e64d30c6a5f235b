package run

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/engine/plan"
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
		res := runPlanned(context.Background(), b, l, plan.Options{}, Options{Connector: bed, Out: filepath.Join(root, fmt.Sprint(i)), NoReport: os.Getenv("RLAB_BENCH_REPORT") == ""})
		if res.Code != ExitOK {
			b.Fatalf("code %d: %v", res.Code, res.Err)
		}
	}
}

// BenchmarkRunStudents compares the same 100-host lab of one no-op exec
// workload per host written without for_each (flat) and as a class of 100
// students (class): the difference is the cost of the per-student table,
// students.json and the 100 hand-back folders (hard links).
func BenchmarkRunStudents(b *testing.B) {
	const n = 100
	var flat, class strings.Builder
	flat.WriteString("lab \"bench\" {}\n")
	for i := range n {
		fmt.Fprintf(&flat, "host \"h%d\" { address = \"127.0.0.1\" }\nworkload \"w%d\" {\n  tool = \"exec\"\n  host = host.h%d\n  command = [\"true\"]\n}\n", i, i, i)
	}
	class.WriteString("lab \"bench\" {}\nlocals {\n  students = toset([for i in range(100) : format(\"s%03d\", i)])\n}\n")
	class.WriteString("host \"h\" {\n  for_each = local.students\n  address  = \"127.0.0.1\"\n}\nworkload \"w\" {\n  for_each = local.students\n  tool     = \"exec\"\n  host     = host.h[each.key]\n  command  = [\"true\"]\n}\n")
	for _, c := range []struct{ name, src string }{{"flat", flat.String()}, {"class", class.String()}} {
		b.Run(c.name, func(b *testing.B) {
			l := loadLab(b, c.src)
			root := b.TempDir()
			for i := range b.N {
				res := runPlanned(context.Background(), b, l, plan.Options{}, Options{Connector: newPipeBed(b), Out: filepath.Join(root, fmt.Sprint(i)), NoReport: true})
				if res.Code != ExitOK || (c.name == "class") != (len(res.Students) == n) {
					b.Fatalf("code %d, %d students: %v", res.Code, len(res.Students), res.Err)
				}
				if c.name == "class" {
					for _, e := range readEvents(b, res.Dir) {
						if e.Type == "step.end" && e.Step == "students" {
							b.ReportMetric(e.Seconds*1000, "students-ms/op")
						}
					}
				}
			}
		})
	}
}
