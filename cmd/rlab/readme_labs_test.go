package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/engine/lab"
)

// TestReadmeLabsValid: every whole lab README.md shows (an ```hcl block
// with a lab block: the front page's quickstart, the stock cloud pair)
// loads without a diagnostic, so a reader can paste it. HCL's one-line
// blocks take one argument only; both once had two.
func TestReadmeLabsValid(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	n := 0
	for {
		i := strings.Index(doc, "```hcl\n")
		if i < 0 {
			break
		}
		doc = doc[i+len("```hcl\n"):]
		end := strings.Index(doc, "```")
		if end < 0 {
			t.Fatal("README.md: an ```hcl block does not end")
		}
		code := doc[:end]
		doc = doc[end+3:]
		if !strings.Contains(code, "lab \"") {
			continue // a fragment
		}
		n++
		p := filepath.Join(t.TempDir(), "readme.hcl")
		if err := os.WriteFile(p, []byte(code), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, diags := lab.Load([]string{p}, lab.LoadOptions{}); diags.HasErrors() {
			t.Errorf("README.md lab %d does not load:\n%s\n%s", n, diags.Error(), code)
		}
	}
	if n < 2 {
		t.Errorf("found %d whole labs in README.md, want the quickstart and the stock cloud pair", n)
	}
}
