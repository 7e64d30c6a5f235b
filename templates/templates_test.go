package templates

import (
	"bytes"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "copy the labs/ sources over their templates/init copies")

// sources maps each starter file of `rlab init` that is a copy of an
// example lab to that lab: labs/ is the source (validated, planned and
// run by the tests); the copies here exist because go:embed cannot reach
// outside this folder.
var sources = map[string]string{
	"init/quickstart/lab.hcl": "../labs/quickstart.hcl",
	"init/class/lab.hcl":      "../labs/class.hcl",
}

// variants are template files that differ from their labs/ twin on purpose.
var variants = map[string]string{
	"init/class/class-terraform-output.json": "three students, not the example's thirty: a starter to edit",
}

// TestInitCopiesMatchLabs fails when a template has drifted from its
// source in labs/, and says how to bring it back.
func TestInitCopiesMatchLabs(t *testing.T) {
	for tmpl, src := range sources {
		want, err := os.ReadFile(src)
		if err != nil {
			t.Fatalf("source of %s: %v", tmpl, err)
		}
		if *update {
			if err := os.WriteFile(tmpl, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(tmpl)
		if err != nil {
			t.Fatalf("template %s: %v", tmpl, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("templates/%s differs from %s, its source. Edit the lab in labs/, then copy it here with: go test ./templates -update", tmpl, filepath.Clean(filepath.Join("templates", src)))
		}
	}
}

// TestInitFilesHaveSources: every file of a template with a labs/ twin is
// in sources or variants, so a new copy cannot drift unnoticed.
func TestInitFilesHaveSources(t *testing.T) {
	for _, name := range InitNames() {
		sub, ok := Init(name)
		if !ok {
			t.Fatalf("Init(%q) not found", name)
		}
		fs.WalkDir(sub, ".", func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			key := "init/" + name + "/" + p
			if _, listed := sources[key]; listed {
				return nil
			}
			if _, variant := variants[key]; variant {
				return nil
			}
			twin := "../labs/" + name + filepath.Ext(p)
			if p != "lab.hcl" {
				twin = "../labs/" + p
			}
			if _, err := os.Stat(twin); err == nil {
				t.Errorf("templates/%s has a twin in labs/ (%s) but is in neither sources nor variants (templates_test.go): add it to sources, so the two cannot drift", key, filepath.Base(twin))
			}
			return nil
		})
	}
}
