package run

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/engine/plan"
)

// TestWorkDirRemovedNetns: once a host's files are pulled, the run removes
// its work dir on the host (real sshd, become); with --keep it stays.
func TestWorkDirRemovedNetns(t *testing.T) {
	_, hosts := netnsBed(t, 1)
	l := loadLab(t, `lab "workdir" {}
`+hosts+`
workload "out" {
  tool = "exec"
  host = host.h0
  command = ["sh", "-c", "echo pulled; echo left > left.txt"]
}`)
	for _, tt := range []struct {
		name string
		keep bool
	}{{"removed", false}, {"kept with --keep", true}} {
		t.Run(tt.name, func(t *testing.T) {
			res := runPlanned(context.Background(), t, l, plan.Options{}, Options{Connector: sshConnector(t), Out: filepath.Join(t.TempDir(), "run"), Keep: tt.keep, NoReport: true})
			if res.Code != ExitOK {
				t.Fatalf("code %d: %v", res.Code, res.Err)
			}
			if b, err := os.ReadFile(filepath.Join(res.Dir, "hosts", "h0", "logs", "wl.out.exec.r0.stdout")); err != nil || string(b) != "pulled\n" {
				t.Fatalf("pulled stdout %q, %v", b, err)
			}
			wd := readState(t, res.Dir).Hosts[0].WorkDir
			if wd == "" {
				t.Fatal("state.json names no work dir")
			}
			_, err := os.Stat(wd)
			switch {
			case tt.keep && err != nil:
				t.Errorf("--keep: the host's work dir %s: %v", wd, err)
			case !tt.keep && !os.IsNotExist(err):
				t.Errorf("the host's work dir %s is still there (%v) after everything was pulled", wd, err)
			case !tt.keep:
				if _, err := os.Stat(filepath.Dir(wd)); !os.IsNotExist(err) {
					t.Errorf("the run's folder %s is still there (%v)", filepath.Dir(wd), err)
				}
			}
			// rlab down removes what the run kept, says so, and leaves no
			// work dir of its own.
			down, err := Down(context.Background(), res.Dir, DownOptions{Connector: sshConnector(t)})
			if err != nil {
				t.Fatalf("down: %v", err)
			}
			got := strings.Join(down.Undone, "\n")
			t.Logf("down:\n%s", got)
			line := "h0: work dir " + wd + " ("
			if tt.keep != strings.Contains(got, line) || strings.Contains(got, "work dir "+wd+" (already gone)") {
				t.Errorf("down's undone lines:\n%s\nwant %q listed with what it held: %v", got, line, tt.keep)
			}
			if _, err := os.Stat(wd); !os.IsNotExist(err) {
				t.Errorf("after down, the host's work dir %s: %v", wd, err)
			}
			if !readState(t, res.Dir).Hosts[0].WorkDirRemoved {
				t.Error("state.json does not record the work dir removed")
			}
			own := filepath.Join(filepath.Dir(filepath.Dir(wd)), filepath.Base(filepath.Dir(wd))+"-down")
			if _, err := os.Stat(own); !os.IsNotExist(err) {
				t.Errorf("down's own work dir %s: %v", own, err)
			}
			again, err := Down(context.Background(), res.Dir, DownOptions{Connector: sshConnector(t)})
			if err != nil || strings.Contains(strings.Join(again.Undone, "\n"), "work dir") {
				t.Errorf("a second down: %v, %q", err, again.Undone)
			}
		})
	}
}
