package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/engine/results"
	"github.com/rlab-dev/rlab/engine/results/schematest"
)

// TestShowJSON: show --json prints a run of an older rlab (schema 1) in the
// current schema, valid against docs/results.schema.json: every sample with
// its kind, the platforms once; it refuses the flags that lay text out, and
// an incomplete run still exits 2 after printing.
func TestShowJSON(t *testing.T) {
	code, out, errText := execute(t, newShowCmd(), "--json", runFailed)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errText)
	}
	schematest.Validate(t, "show --json", []byte(out))
	var r results.Run
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("show --json does not decode: %v\n%s", err, out)
	}
	if r.Schema != results.SchemaVersion || r.Lab != "nightly" || len(r.Workloads) != 4 || r.Dir != "" {
		t.Errorf("schema %d, lab %q, %d workloads, dir %q", r.Schema, r.Lab, len(r.Workloads), r.Dir)
	}
	tools := 0
	for _, s := range r.Samples {
		switch s.Source {
		case results.SourceTool:
			tools++
		case results.SourceCounter:
		default:
			t.Errorf("sample %s has kind %q", s.Metric, s.Source)
		}
	}
	if tools == 0 {
		t.Error("no tool sample")
	}
	if code, _, errText := execute(t, newShowCmd(), "--json", "--markdown", runFailed); code != exitFail || !strings.Contains(errText, "--json") {
		t.Errorf("--json --markdown: exit %d, %q", code, errText)
	}
}
