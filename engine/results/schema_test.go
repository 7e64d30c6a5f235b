package results

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rlab-dev/rlab/engine/results/schematest"
)

// olderRuns are results.json files rlab wrote before this version (schema
// 1: platforms in every sample, no kind, tcp's bytes as text), kept as
// fixtures: every rlab must still read them.
var olderRuns = []string{
	"../../testdata/runs/nightly/2026-11-20T020000Z",
	"../../testdata/runs/nightly/2026-11-21T020000Z",
	"../../testdata/runs/nightly/2026-11-22T020000Z",
	"../../testdata/runs/nightly/2026-11-23T020000Z",
	"../../testdata/report/run",
	"../../testdata/report/lossy",
}

// TestSchemaFollowsTheType: docs/results.schema.json names exactly the
// members the Go type writes, object by object (the schema forbids any
// other, so a member added to one and not the other fails here, and a
// written file carrying it fails TestWrittenRunsValidate).
func TestSchemaFollowsTheType(t *testing.T) {
	b, err := os.ReadFile(schematest.Path())
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Defs       map[string]struct {
			Properties map[string]json.RawMessage `json:"properties"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	keys := func(m map[string]json.RawMessage) []string {
		var out []string
		for k := range m {
			out = append(out, k)
		}
		sort.Strings(out)
		return out
	}
	for _, c := range []struct {
		def string
		typ any
	}{
		{"", Run{}}, {"workload", Workload{}}, {"expect", Expect{}}, {"counter_note", CounterNote{}},
		{"parse_note", ParseNote{}}, {"platform", Platform{}}, {"sample", Sample{}}, {"metadata", Meta{}},
		{"student", Student{}}, {"expect_fields", StudentExpect{}},
		{"artifact", Artifact{}},
	} {
		props := doc.Properties
		if c.def != "" {
			props = doc.Defs[c.def].Properties
		}
		if d := cmp.Diff(jsonMembers(reflect.TypeOf(c.typ)), keys(props)); d != "" {
			t.Errorf("schema %q against Go %T (-go +schema):\n%s", c.def, c.typ, d)
		}
	}
}

// jsonMembers are the member names encoding/json writes for a struct type,
// embedded structs flattened.
func jsonMembers(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		switch {
		case name == "-" || !f.IsExported():
		case f.Anonymous && name == "":
			out = append(out, jsonMembers(f.Type)...)
		case name == "":
			out = append(out, f.Name)
		default:
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// TestWrittenRunsValidate: what WriteRun writes validates against
// docs/results.schema.json, for every older fixture read back (upgraded to
// the current schema on read) and for a run with every optional member set.
func TestWrittenRunsValidate(t *testing.T) {
	for _, dir := range olderRuns {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			r, err := ReadRun(dir)
			if err != nil {
				t.Fatal(err)
			}
			out := t.TempDir()
			if err := WriteRun(out, r); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(out, ResultsFile))
			if err != nil {
				t.Fatal(err)
			}
			schematest.Validate(t, dir, b)
		})
	}
	t.Run("every member", func(t *testing.T) {
		rep, loss := 0, 1.5
		val := "bw_avg_gbps = 0.07"
		x := Expect{Condition: "result.bw_avg_gbps > 1", Message: "m", Held: false, Skipped: true, Size: 4096, Repeat: &rep, Value: &val, Error: "e"}
		gid := 1
		r := &Run{Lab: "l", Description: "d", ID: "2026-11-27T000000Z", Status: RunFailed, Error: "e", Duration: 1.5, Check: true, CompleteMarker: true,
			Workloads: []Workload{{Name: "w", Tool: "tcp", Status: StatusOK, Error: "e", Hosts: []string{"server", "client"}, Devices: []string{"rxe0"},
				Duration: 1, Expects: []Expect{x}, Thresholds: map[string]float64{"tcp_bw": 10}, Logs: []string{"l"}, Captures: []string{"c"},
				CounterNotes: []CounterNote{{Host: "server", Device: "rxe0", Source: "hw_counters", Counter: "x", Problem: "reset", Reason: "r"}},
				Parse:        []ParseNote{{Size: 1, Repeat: 0, Unread: []string{"u"}, Notes: []string{"n"}, More: 1, Bidirectional: true}}, RDMA: "RoCE (rxe)", Group: "g"}},
			Platforms: map[string]Platform{"server": {Virtualization: "kvm", Vendor: "v", Product: "p", Version: "1", CPUModel: "c", Kernel: "k", Distro: "d", RDMACore: "r"}, "client": {}},
			Samples: []Sample{{Metric: "tcp_bw", Value: 1, Unit: "Gb/s", Meta: Meta{Workload: "w", Tool: "tcp", Size: 1, Iterations: 1, Repeat: 0,
				Hosts: []string{"server", "client"}, Devices: []string{"rxe0"}, GIDIndex: &gid, MTU: 1024, Transport: "RC", QPs: 1, ToolVersion: "1",
				Interval: 1, Bytes: 10, ServerBytes: 10, ImpairLoss: &loss, Extra: map[string]string{"source": "json"}}}},
			Students: []Student{{Key: "a", Folder: "students/a", Hosts: []string{"server"}, Workloads: []string{"w"}, OK: 0, Failed: 1, Status: StudentFailed,
				Reason: "r", FailedExpects: []StudentExpect{{Workload: "w", Expect: x}}}},
		}
		r.Artifacts = []Artifact{{Host: "server", Path: "hosts/server/captures/cap.roce.pcap", Type: ArtifactCapture, Size: 24, SHA256: strings.Repeat("0", 64)}}
		r.Workloads[0].Started = mustTime(t, "2026-11-27T00:00:00Z")
		r.Workloads[0].Finished = mustTime(t, "2026-11-27T00:00:01.5Z")
		r.Started, r.Finished = r.Workloads[0].Started, r.Workloads[0].Finished
		out := t.TempDir()
		if err := WriteRun(out, r); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(out, ResultsFile))
		if err != nil {
			t.Fatal(err)
		}
		schematest.Validate(t, "the run with every member", b)
		// The schema can fail: a number as text, a sample without its kind,
		// a time that is not RFC 3339 and platforms in a sample are refused.
		for _, bad := range []struct{ from, to string }{
			{`"bytes": 10`, `"bytes": "10"`},
			{`"kind": "tool",`, ``},
			{`"started": "2026-11-27T00:00:00Z"`, `"started": "2026-11-27 00:00:00"`},
			{`"tool_version": "1",`, `"tool_version": "1", "platforms": [],`},
		} {
			if !strings.Contains(string(b), bad.from) {
				t.Fatalf("written run lacks %s", bad.from)
			}
			if schematest.Check([]byte(strings.Replace(string(b), bad.from, bad.to, 1))) == nil {
				t.Errorf("the schema accepts %s", bad.to)
			}
		}
	})
}

// TestReadOlderRun: a results.json of schema 1 (the loss sweep recorded on
// two TCG VMs, testdata/report/lossy) reads as the current Run: the
// platforms once per host, each sample's kind, tcp's bytes and the loss as
// numbers; written again it is at least 40 % smaller.
func TestReadOlderRun(t *testing.T) {
	const dir = "../../testdata/report/lossy"
	old, err := os.ReadFile(filepath.Join(dir, ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(old), `"schema": 1`) {
		t.Fatal("the fixture is no longer of schema 1: keep one that is")
	}
	r, err := ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if r.Schema != SchemaVersion {
		t.Errorf("schema %d after reading, want %d", r.Schema, SchemaVersion)
	}
	if got := r.Platforms["server"]; got.Kernel != "6.1.0-56-amd64" || got.Distro != "debian 12" || got.RDMACore != "44.0" {
		t.Errorf("platform of server %+v", got)
	}
	kinds := map[string]int{}
	var tcp *Sample
	for i, s := range r.Samples {
		kinds[s.Source]++
		for _, h := range s.Meta.Hosts {
			if _, ok := r.Platforms[h]; !ok {
				t.Errorf("sample %s names host %q, which platforms lacks", s.Metric, h)
			}
		}
		if s.Metric == "tcp_bw" && s.Meta.Workload == `tcp["0"]` {
			tcp = &r.Samples[i]
		}
	}
	if d := cmp.Diff(map[string]int{SourceCounter: 254, SourceTool: 14}, kinds); d != "" {
		t.Errorf("sample kinds (-want +got):\n%s", d)
	}
	if tcp == nil {
		t.Fatal(`no tcp_bw sample of tcp["0"]`)
	}
	if tcp.Meta.Bytes != 14417920 || tcp.Meta.ServerBytes != 14417920 || tcp.Meta.ImpairLoss == nil || *tcp.Meta.ImpairLoss != 0 {
		t.Errorf("tcp sample's numbers: bytes %d, server_bytes %d, impair_loss %v", tcp.Meta.Bytes, tcp.Meta.ServerBytes, tcp.Meta.ImpairLoss)
	}
	if _, ok := tcp.Meta.Extra["bytes"]; ok {
		t.Errorf("bytes left in extra: %v", tcp.Meta.Extra)
	}
	out := t.TempDir()
	if err := WriteRun(out, r); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(out, ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("results.json of the loss sweep: %d bytes in schema 1, %d in schema %d (%.0f %% smaller)", len(old), len(b), SchemaVersion, 100*(1-float64(len(b))/float64(len(old))))
	if len(b) > len(old)*60/100 {
		t.Errorf("results.json is %d bytes, was %d: want at least 40 %% smaller", len(b), len(old))
	}
	// Read back, the current schema gives the same run.
	again, err := ReadRun(out)
	if err != nil {
		t.Fatal(err)
	}
	again.Dir, again.Incomplete, r.Dir, r.Incomplete = "", "", "", ""
	if d := cmp.Diff(r, again); d != "" {
		t.Errorf("schema %d read back differs (-first +again):\n%s", SchemaVersion, d)
	}
}

// TestDecodeRefusesNewer: a results.json of a newer schema, or with a
// sample of a kind this rlab does not know, is an error naming it, not a
// run read wrongly.
func TestDecodeRefusesNewer(t *testing.T) {
	_, err := Decode([]byte(`{"schema": 3, "samples": [{"metric": "x", "value": "not a number"}]}`))
	if err == nil || !strings.Contains(err.Error(), "schema 3") || !strings.Contains(err.Error(), "up to 2") {
		t.Errorf("err %v", err)
	}
	if _, err := Decode([]byte(`{"schema": 2, "samples": [{"metric": "x", "kind": "guess", "metadata": {}}]}`)); err == nil || !strings.Contains(err.Error(), `kind "guess"`) {
		t.Errorf("a sample of an unknown kind: err %v", err)
	}
	if r, err := Decode([]byte(`{}`)); err != nil || len(r.Samples) != 0 {
		t.Errorf("an empty document: %v, %+v", err, r)
	}
	if !slices.Contains(olderRuns, "../../testdata/report/lossy") {
		t.Error("the loss sweep fixture left olderRuns")
	}
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestReadSchema2: a results.json of schema 2 as this rlab wrote it
// (testdata/results/v2, frozen) reads with its platforms once, each sample's
// kind and the numbers as numbers, and validates while 2 is current.
func TestReadSchema2(t *testing.T) {
	const dir = "../../testdata/results/v2"
	b, err := os.ReadFile(filepath.Join(dir, ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	if SchemaVersion == 2 {
		schematest.Validate(t, dir, b)
	}
	r, err := ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if r.Lab != "lossy" || len(r.Workloads) != 4 || len(r.Samples) != 22 || len(r.Platforms) != 2 {
		t.Fatalf("lab %q, %d workloads, %d samples, %d platforms", r.Lab, len(r.Workloads), len(r.Samples), len(r.Platforms))
	}
	if p := r.Platforms["client"]; p.Kernel != "6.1.0-56-amd64" || p.Virtualization != "qemu" {
		t.Errorf("client platform %+v", p)
	}
	kinds := map[string]int{}
	for _, s := range r.Samples {
		kinds[s.Source]++
		if s.Metric == "tcp_bw" && s.Meta.Workload == `tcp["1"]` {
			if s.Meta.Bytes <= 0 || s.Meta.ImpairLoss == nil || *s.Meta.ImpairLoss != 1 {
				t.Errorf("tcp[\"1\"]: bytes %d, impair_loss %v", s.Meta.Bytes, s.Meta.ImpairLoss)
			}
		}
	}
	if d := cmp.Diff(map[string]int{SourceCounter: 8, SourceTool: 14}, kinds); d != "" {
		t.Errorf("sample kinds (-want +got):\n%s", d)
	}
}
