package run

import (
	"os"
	"path/filepath"
	"testing"
)

// TestManySmallFilesPulled: a workload that fills its host's work dir with
// 90k small files (whose listing, one answer, was over the protocol's
// 8 MiB line: nothing of the host was pulled, not even the workload's
// stdout) is listed in pages and pulled whole.
func TestManySmallFilesPulled(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 200k files")
	}
	const n = 90000
	res, _ := runLab(t, twoHosts+`
workload "litter" {
  tool = "exec"
  host = host.a
  command = ["sh", "-c", "mkdir d && cd d && seq 1 90000 | xargs touch && echo littered"]
}`, Options{})
	if res.Code != ExitOK {
		t.Fatalf("code %d: %v", res.Code, res.Err)
	}
	logs := filepath.Join(res.Dir, "hosts", "a", "logs")
	if b, err := os.ReadFile(filepath.Join(logs, "wl.litter.exec.r0.stdout")); err != nil || string(b) != "littered\n" {
		t.Fatalf("the workload's stdout: %q, %v", b, err)
	}
	ents, err := os.ReadDir(filepath.Join(logs, "d"))
	if err != nil || len(ents) != n {
		t.Fatalf("pulled %d of the %d small files: %v", len(ents), n, err)
	}
}
