package lab

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// Split splits a path into the labs it holds: a file is one lab; a folder is
// one lab made of all its *.hcl files, unless it holds several files that
// each declare their own lab block (an examples folder such as labs/), in
// which case each file is a lab of its own.
func Split(path string) ([][]string, hcl.Diagnostics) {
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
// parse or cannot be read; Load reports why).
func labBlocks(path string) int {
	// Read as Load reads a file it found in a folder (readInFolder): a
	// FIFO named *.hcl must not hang validate, and a symlink out of the
	// folder is not read (SECURITY 174, 192), so the folder stays one lab
	// and Load refuses the symlink, naming it.
	src, err := readInFolder(path)
	if err != nil || Unparsable(path, src) {
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

// SeveralLabsSummary is the summary of the diagnostic LoadOne gives for a
// folder of labs.
const SeveralLabsSummary = "Folder holds several labs"

// LoadOne loads the one lab a path names, for the commands that act on one
// lab (plan, run, check, facts, graph): a file, or a folder whose *.hcl files
// together hold one lab. A folder of labs (several files that each declare
// their own lab block, like labs/) is an error that lists them, rather than
// one lab merged from all of them.
func LoadOne(path string, opts LoadOptions) (*Lab, hcl.Diagnostics) {
	labs, diags := Split(path)
	if diags.HasErrors() {
		return nil, diags
	}
	if len(labs) != 1 {
		names := make([]string, len(labs))
		for i, u := range labs {
			names[i] = filepath.Base(u[0])
		}
		return nil, append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  SeveralLabsSummary,
			Detail: fmt.Sprintf("%s holds %d labs (%s), each file with its own lab block; give one of its files, e.g. %s. (rlab validate checks a folder of labs file by file.)",
				path, len(labs), strings.Join(names, ", "), filepath.Join(path, names[0])),
		})
	}
	l, more := Load(labs[0], opts)
	return l, append(diags, more...)
}
