package proto

import (
	"encoding/json"
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
