package main

import (
	"go/parser"
	"go/token"
	"strconv"
	"testing"
)

// TestPlanImportsNoExecutor: rlab plan (--only included) and the progress
// bar read what the plan decided (engine/plan) and never the executor
// (issue 22: select once, in the plan). cmd/rlab as a whole imports
// engine/run for rlab run, so the rule is per file.
func TestPlanImportsNoExecutor(t *testing.T) {
	for _, file := range []string{"plan.go", "progress.go", "onlyflag.go"} {
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if p == "github.com/rlab-dev/rlab/engine/run" {
				t.Errorf("%s imports %s: the plan and its views must not need the executor", file, p)
			}
		}
	}
}
