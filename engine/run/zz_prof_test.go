package run

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/engine/plan"
)

func TestZZClassProf(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("ZZ_STUDENTS"))
	if n == 0 {
		t.Skip("ZZ_STUDENTS")
	}
	var class strings.Builder
	fmt.Fprintf(&class, "lab \"bench\" {}\nlocals {\n  students = toset([for i in range(%d) : format(\"s%%03d\", i)])\n}\n", n)
	class.WriteString(`host "server" {
  for_each = local.students
  address  = "127.0.0.1"
}
host "client" {
  for_each = local.students
  address  = "127.0.0.1"
}
workload "hello" {
  for_each = local.students
  tool     = "exec"
  host     = host.server[each.key]
  command  = ["true"]
}
workload "hello2" {
  for_each = local.students
  tool     = "exec"
  host     = host.client[each.key]
  command  = ["true"]
}
`)
	l := loadLab(t, class.String())
	root := t.TempDir()
	t0 := time.Now()
	res := runPlanned(context.Background(), t, l, plan.Options{}, Options{Connector: newPipeBed(t), Out: filepath.Join(root, "x"), NoReport: os.Getenv("ZZ_REPORT") == "", Parallel: 64})
	if res.Code != ExitOK {
		t.Fatalf("code %d: %v", res.Code, res.Err)
	}
	t.Logf("%d students: %v", n, time.Since(t0))
	for _, e := range readEvents(t, res.Dir) {
		if e.Type == "step.end" && e.Host == "" && e.Workload == "" {
			t.Logf("phase %s %.2fs", e.Step, e.Seconds)
		}
	}
}
