package down

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/engine/runstate"
)

// TestDownStateTmpNotFollowed: rlab down writes state.json through a
// temporary file beside it. A received run directory holding
// state.json.tmp as a symlink to a file of the reader's (~/.bashrc) had
// down truncate and overwrite that file with the state's JSON, whose
// string values a shell then expands ("$(...)": code execution at the
// reader's next login). The temporary file is made anew, never opened
// through a symlink, and the file outside stays as it was.
func TestDownStateTmpNotFollowed(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	for _, name := range []string{runstate.File + ".tmp"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			st := runstate.State{Lab: "t", RunID: "t-1", Started: time.Now(), Hosts: []runstate.Host{{Name: "a", Slug: "a", Address: "127.0.0.1", Port: 22}}}
			if _, err := runstate.Create(dir, st); err != nil {
				t.Fatal(err)
			}
			victim := filepath.Join(t.TempDir(), "bashrc")
			const was = "# the reader's own file\n"
			if err := os.WriteFile(victim, []byte(was), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(victim, filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
			res, err := Run(context.Background(), dir, Options{})
			if b, _ := os.ReadFile(victim); string(b) != was {
				t.Fatalf("rlab down wrote through %s into a file outside the run directory:\n%s", name, b)
			}
			b, rerr := os.ReadFile(filepath.Join(dir, runstate.File))
			if err != nil || rerr != nil || len(b) == 0 {
				t.Fatalf("down of a run with nothing left: %+v, %v (state.json: %v)", res, err, rerr)
			}
		})
	}
}
