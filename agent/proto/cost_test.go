package proto

import (
	"bytes"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// TestCheckValues: the count is what a decode builds (objects and list
// elements; brackets inside strings are text), and past the bound the text
// is refused before anything is built.
func TestCheckValues(t *testing.T) {
	for _, tc := range []struct {
		doc string
		n   int
	}{
		{`{}`, 1},
		{`{"netdevs":[{},{}],"x":[1,"a]",[]]}`, 6},
		{`{"s":"{[{[\"{"}`, 1},
		{`[ ]`, 0},
		{`[ 1 , 2 ]`, 2},
	} {
		if n, _ := countValues([]byte(tc.doc), 1<<30, -1); n != tc.n {
			t.Errorf("countValues(%s) = %d, want %d", tc.doc, n, tc.n)
		}
	}
	facts := []byte(`{"hostname":"x","netdevs":[` + strings.Repeat("{},", MaxValues) + `{}]}`)
	if err := CheckValues(facts, MaxValues); err == nil {
		t.Errorf("%d empty netdevs accepted", MaxValues+1)
	}
	ok := []byte(`{"hostname":"x","netdevs":[` + strings.Repeat("{},", MaxValues/2) + `{}]}`)
	if err := CheckValues(ok, MaxValues); err != nil {
		t.Errorf("%d netdevs refused: %v", MaxValues/2+1, err)
	}
	var f Facts
	if err := json.Unmarshal(ok, &f); err != nil || len(f.Netdevs) != MaxValues/2+1 {
		t.Fatalf("decode: %d netdevs, %v", len(f.Netdevs), err)
	}
}

// allocated is what f allocates, in bytes (runtime.MemStats.TotalAlloc).
func allocated(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// members is n members "<hex>":val, comma-separated.
func members(n int, val string) string {
	var sb strings.Builder
	for i := range n {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `"%x":%s`, i, val)
	}
	return sb.String()
}

// TestCountMembers: members are counted by their colon outside strings,
// of the outer object alone or of every object.
func TestCountMembers(t *testing.T) {
	for _, tc := range []struct {
		doc        string
		outer, all int
	}{
		{`{}`, 0, 0},
		{`null`, 0, 0},
		{`{"a":1}`, 1, 1},
		{`{"a:b":{"c":[{"d":1},{"e:":"f:"}]},"g\":":2}`, 2, 5},
		{`[{"a":1},{"b":2}]`, 0, 2},
	} {
		if n := CountMembers([]byte(tc.doc), false, 1<<30); n != tc.outer {
			t.Errorf("CountMembers(%s, outer) = %d, want %d", tc.doc, n, tc.outer)
		}
		if n := CountMembers([]byte(tc.doc), true, 1<<30); n != tc.all {
			t.Errorf("CountMembers(%s, all) = %d, want %d", tc.doc, n, tc.all)
		}
	}
}

// TestToolsBounded: a facts reply (or facts.json) whose tools map holds
// more than MaxTools members is refused before the map is built, and so
// costs about its own size: a line of MaxLine bytes of "name":null cost
// 20 times its size (128 MB for 6.4 MB) as a plain map, and CheckValues,
// which counts objects and list elements, passes it.
func TestToolsBounded(t *testing.T) {
	for _, tc := range []struct {
		name  string
		n     int
		val   string
		wantN int // tools decoded; -1: refused; -2: twice, refused
	}{
		{"at the bound", MaxTools, `{"path":"/usr/bin/x"}`, MaxTools},
		{"one past", MaxTools + 1, `null`, -1},
		{"a line of nulls", 500_000, `null`, -1},
		{"null", 0, ``, 0},
		{"tools twice", MaxTools/2 + 1, `null`, -2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := []byte(`{"hostname":"h","tools":{` + members(tc.n, tc.val) + `}}`)
			switch {
			case tc.val == "":
				doc = []byte(`{"hostname":"h","tools":null}`)
			case tc.wantN == -2: // two halves, each within the bound, fill one map
				doc = []byte(`{"tools":{` + members(tc.n, tc.val) + `},"TOOLS":{` + strings.ReplaceAll(members(tc.n, tc.val), `":`, `x":`) + `}}`)
			}
			if err := CheckValues(doc, MaxValues); err != nil && tc.wantN >= 0 {
				t.Fatalf("CheckValues: %v", err)
			}
			var f Facts
			var err error
			cost := allocated(func() { err = json.Unmarshal(doc, &f) })
			t.Logf("%d bytes in, %d bytes allocated", len(doc), cost)
			if tc.wantN < 0 {
				if err == nil || len(f.Tools) > MaxTools {
					t.Fatalf("%d tools decoded (%v), want refused", len(f.Tools), err)
				}
				if tc.wantN == -2 {
					return // the first half is built, within the bound
				}
				// What a refusal may cost: the scan builds nothing; the
				// bound is 2x the text (the plain map took 20x).
				if cost > 2*uint64(len(doc)) {
					t.Errorf("refusing %d bytes allocated %d bytes (%.1fx)", len(doc), cost, float64(cost)/float64(len(doc)))
				}
				return
			}
			if err != nil || len(f.Tools) != tc.wantN {
				t.Fatalf("decoded %d tools, %v; want %d", len(f.Tools), err, tc.wantN)
			}
		})
	}
}

// FuzzCountMembers: on any valid JSON text, CountMembers counts what a
// tokenizing decoder meets as keys: of the outer object alone, or of
// every object.
func FuzzCountMembers(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, `{"a:b":{"c":[{"d":1},{"e:":"f:"}]},"g\":":2}`, `[{"a":{"b":null}}]`, `"x:y"`, `{"\u003a":":"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) {
			return
		}
		outer, all := 0, 0
		d := json.NewDecoder(bytes.NewReader(b))
		var stack []bool // per open container: is an object
		key := false     // the next token is an object's key
		for {
			tok, err := d.Token()
			if err != nil {
				break
			}
			switch tok {
			case json.Delim('{'), json.Delim('['):
				stack = append(stack, tok == json.Delim('{'))
				key = tok == json.Delim('{')
				continue
			case json.Delim('}'), json.Delim(']'):
				stack = stack[:len(stack)-1]
			default:
				if key {
					all++
					if len(stack) == 1 {
						outer++
					}
					key = false
					continue
				}
			}
			// A value ended: in an object, a key comes next.
			key = len(stack) > 0 && stack[len(stack)-1]
		}
		if n := CountMembers(b, false, 1<<30); n != outer {
			t.Errorf("CountMembers(%q, outer) = %d, the decoder met %d keys", b, n, outer)
		}
		if n := CountMembers(b, true, 1<<30); n != all {
			t.Errorf("CountMembers(%q, all) = %d, the decoder met %d keys", b, n, all)
		}
		if n := CountMembers(b, true, 0); all > 0 && n != 1 {
			t.Errorf("CountMembers(%q, all, max 0) = %d, want it to stop at 1", b, n)
		}
	})
}
