package main

import (
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/templates"
)

// TestInitList: `rlab init --list` names every template `--template` takes,
// and writes nothing.
func TestInitList(t *testing.T) {
	out, errOut, code := rlab(t, "init", "--list")
	if code != 0 {
		t.Fatalf("init --list: exit %d: %s", code, errOut)
	}
	for _, name := range templates.InitNames() {
		if !strings.Contains(out, name) {
			t.Errorf("init --list lacks %s:\n%s", name, out)
		}
	}
}
