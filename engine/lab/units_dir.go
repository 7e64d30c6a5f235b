package lab

import (
	"os"
	"path/filepath"
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// Units splits a path into the labs it holds: a file is one lab; a folder is
// one lab made of all its *.hcl files, unless it holds several files that
// each declare their own lab block (an examples folder such as labs/), in
// which case each file is a lab of its own.
func Units(path string) ([][]string, hcl.Diagnostics) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Cannot read lab", Detail: "Could not read " + path + ": " + err.Error() + ". Give a lab file or a folder of *.hcl files."}}
	}
	if !st.IsDir() {
		return [][]string{{path}}, nil
	}
	files, _ := filepath.Glob(filepath.Join(path, "*.hcl"))
	sort.Strings(files)
	if len(files) < 2 {
		return [][]string{{path}}, nil
	}
	each := true
	for _, f := range files {
		if labBlocks(f) != 1 {
			each = false
			break
		}
	}
	if !each {
		return [][]string{{path}}, nil
	}
	out := make([][]string, len(files))
	for i, f := range files {
		out[i] = []string{f}
	}
	return out, nil
}

// labBlocks counts the top-level lab blocks of a file (-1 if it does not
// parse; Load reports why).
func labBlocks(path string) int {
	src, err := os.ReadFile(path)
	if err != nil || len(src) > MaxFileBytes || tooDeep(src) >= 0 {
		return -1
	}
	f, diags := hclsyntax.ParseConfig(src, path, hcl.InitialPos)
	if diags.HasErrors() {
		return -1
	}
	n := 0
	for _, b := range f.Body.(*hclsyntax.Body).Blocks {
		if b.Type == "lab" {
			n++
		}
	}
	return n
}
