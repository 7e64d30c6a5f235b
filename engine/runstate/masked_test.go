package runstate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/engine/rundir"
	"github.com/rlab-dev/rlab/steps"
)

// TestStateSignedUnderMasker: a run whose directory masks its sensitive
// values still writes state.json as it signed it, with the host's user,
// address and rxe device as they are, so `rlab down` takes its own run
// and acts on the real names. Masked after signing, down refused the
// user's own run ("not written by your rlab"), and trusted it would log in
// as "(sensitive)" (attack round 15).
func TestStateSignedUnderMasker(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	const user, addr, dev = "alice-s3cr3t", "10.9.8.7", "rxe_s3cr3t"
	dir := t.TempDir()
	defer rundir.Mask(dir, lab.Redactor([]string{user, addr, dev}))()
	j, err := Create(dir, State{Lab: "t", RunID: "r1", Hosts: []Host{{Name: "h", Slug: "h", Address: addr, Port: 22, User: user}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Note(steps.Effect{Host: "h", Type: "rxe", ID: dev, Netdev: "eth1", Created: true}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, File))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{user, addr, dev} {
		if !strings.Contains(string(b), s) {
			t.Errorf("state.json lost %q, which down acts on:\n%s", s, b)
		}
	}
	back, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !back.Signed() {
		t.Error("the run's own state.json does not read as signed by this user's rlab")
	}
}
