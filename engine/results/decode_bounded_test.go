package results

import (
	"fmt"
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

// mapMembers is n members "<hex>":val, comma-separated.
func mapMembers(n int, val string) string {
	var sb strings.Builder
	for i := range n {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `"%x":%s`, i, val)
	}
	return sb.String()
}

// TestDecodeMapsBounded: the members of results.json's maps (platforms,
// a workload's thresholds, a sample's extra; every member of a version 1
// document's samples, read as maps) are counted before they are built,
// with a key spelled twice or in another case counted each time: 6.4 MB
// of "h":null platforms took Decode 330 MB (51 times the text), 5 MB of
// one sample's extra 150 MB, of a version 1 sample's members 257 MB.
func TestDecodeMapsBounded(t *testing.T) {
	many := MaxMapMembers + 1
	for _, tc := range []struct {
		name string
		doc  string
		ok   bool
	}{
		{"platforms at the bound", `{"schema":2,"platforms":{` + mapMembers(MaxPlatforms, `{}`) + `}}`, true},
		{"platforms", `{"schema":2,"platforms":{` + mapMembers(MaxPlatforms+1, `null`) + `}}`, false},
		{"platforms twice", `{"schema":2,"platforms":{` + mapMembers(MaxPlatforms/2+1, `null`) + `},"PLATFORMS":{` + mapMembers(MaxPlatforms/2+1, `null`) + `}}`, false},
		{"extra in many samples", `{"schema":2,"samples":[` + strings.Repeat(`{"kind":"tool","metadata":{"extra":{`+mapMembers(5, `""`)+`}}},`, many/5) + `{"kind":"tool","metadata":{"extra":{"a":"","b":""}}}]}`, false},
		{"thresholds", `{"schema":2,"workloads":[{"name":"w","thresholds":{` + mapMembers(many, `0`) + `}}]}`, false},
		{"thresholds behind a type error", `{"schema":2,"workloads":[1,{"name":"w","thresholds":{` + mapMembers(many, `0`) + `}}]}`, false},
		{"version 1 members", `{"samples":[{` + mapMembers(many, `0`) + `}]}`, false},
		{"version 1 top level", `{` + mapMembers(many, `0`) + `}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := []byte(tc.doc)
			var m0, m1 runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&m0)
			_, err := Decode(b)
			runtime.ReadMemStats(&m1)
			a := m1.TotalAlloc - m0.TotalAlloc
			t.Logf("%d bytes in, %d bytes allocated (%.1fx): %v", len(b), a, float64(a)/float64(len(b)), err)
			if tc.ok {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "more than") {
				t.Fatalf("%v, want refused", err)
			}
			// The scans build nothing; the decode of the document's
			// skeleton copies it a few times (the maps took 20 to 80).
			if a > uint64(6*len(b))+(4<<20) {
				t.Errorf("refusing %d bytes allocated %d MiB", len(b), a>>20)
			}
		})
	}
}
