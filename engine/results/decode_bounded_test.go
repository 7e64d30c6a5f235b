package results

import (
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestDecodeBounded: a received results.json of a few MB listing a million
// empty workloads or samples took gigabytes in rlab show and rlab report
// (30 MB of "{}," workloads: 16 GB and still running after two minutes).
// Decode counts the arrays before it builds them and refuses past the
// limits, within an allocation the size of the file.
func TestDecodeBounded(t *testing.T) {
	doc := func(key, elem string, n int) []byte {
		return []byte(`{"schema": 2, "lab": "x", "` + key + `": [` + strings.TrimSuffix(strings.Repeat(elem+",", n), ",") + `]}`)
	}
	tests := []struct {
		name, key, elem string
		n               int
		refused         bool
	}{
		{"workloads at the limit", "workloads", "{}", MaxWorkloads, false},
		{"workloads past the limit", "workloads", "{}", MaxWorkloads + 1, true},
		{"a million workloads", "workloads", "{}", 1_000_000, true},
		{"samples past the limit", "samples", `{"kind":"tool"}`, MaxSamples + 1, true},
		{"students past the limit", "students", "{}", MaxStudents + 1, true},
		{"artifacts past the limit", "artifacts", `{"path":"a"}`, MaxArtifacts + 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := doc(tt.key, tt.elem, tt.n)
			var m0, m1 runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&m0)
			_, err := Decode(b)
			runtime.ReadMemStats(&m1)
			if !tt.refused {
				if err != nil {
					t.Fatalf("refused %d %s: %v", tt.n, tt.key, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.key) || !strings.Contains(err.Error(), "more than") {
				t.Fatalf("%d %s not refused by name: %v", tt.n, tt.key, err)
			}
			if a := m1.TotalAlloc - m0.TotalAlloc; a > uint64(8*len(b))+(16<<20) {
				t.Errorf("refusing %d bytes allocated %d MiB", len(b), a>>20)
			}
		})
	}
}

// TestDecodeLogsBounded: the workloads' logs lists are bounded all
// together (MaxLogs, counted before they are built: 100 MB of one
// workload's logs took rlab show to 1.2 GB and 44 s) and each workload's
// list holds a path once, cleaned.
func TestDecodeLogsBounded(t *testing.T) {
	r, err := Decode([]byte(`{"schema":2,"lab":"x","workloads":[{"name":"w","logs":["a/b","a/./b","a//b","c",""]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Workloads[0].Logs; !slices.Equal(got, []string{"a/b", "c"}) {
		t.Errorf("logs %q, want [a/b c]", got)
	}
	half := strings.TrimSuffix(strings.Repeat(`"a",`, MaxLogs/2+1), ",")
	b := []byte(`{"schema":2,"lab":"x","workloads":[{"name":"w","logs":[` + half + `]},{"name":"v","logs":[` + half + `]}]}`)
	if _, err := Decode(b); err == nil || !strings.Contains(err.Error(), "logs: more than") {
		t.Errorf("%d logs in two workloads: %v, want refused", MaxLogs+2, err)
	}
}

// TestDecodeNestedBounded: the arrays inside workloads, samples and
// students count too (promise 75 counted only the top-level ones): 15 MB
// of one workload's "expects": [{}, …] took rlab show to 1.2 GB and 77 s.
// countNested counts what a scan of the text sees, the same as a decode.
func TestDecodeNestedBounded(t *testing.T) {
	for _, tc := range []struct {
		doc     string
		n, objs int
	}{
		{`{"workloads":[{"logs":["a","b"],"expects":[{},{"x":[1,2]}]},{}],"samples":[{"metadata":{"hosts":[],"devices":[ "d" ]}}]}`, 7, 2},
		{`{"workloads":[{"logs":["[\"x\", {", "]"]}]}`, 2, 0},
		{`{"a":[[1,2],[3]]}`, 3, 0},
		{`[]`, 0, 0},
	} {
		if n, objs := countNested([]byte(tc.doc)); n != tc.n || objs != tc.objs {
			t.Errorf("countNested(%s) = %d, %d; want %d, %d", tc.doc, n, objs, tc.n, tc.objs)
		}
	}
	for _, tc := range []struct {
		name, list string
	}{
		{"expects", strings.Repeat("{},", MaxNestedObjects) + "{}"},
		{"logs", strings.Repeat(`"a",`, MaxNested) + `"a"`},
	} {
		b := []byte(`{"schema":2,"lab":"x","workloads":[{"name":"w","` + tc.name + `":[` + tc.list + `]}]}`)
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		_, err := Decode(b)
		runtime.ReadMemStats(&m1)
		if err == nil || !strings.Contains(err.Error(), "more than") {
			t.Errorf("%s past the limit: %v, want refused", tc.name, err)
		}
		if a := m1.TotalAlloc - m0.TotalAlloc; a > uint64(8*len(b))+(16<<20) {
			t.Errorf("refusing %d bytes of %s allocated %d MiB", len(b), tc.name, a>>20)
		}
	}
}
