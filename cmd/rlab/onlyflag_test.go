package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSplitOnly(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"ana", []string{"ana"}},
		{"ana,bea", []string{"ana", "bea"}},
		{" ana , ,bea,", []string{"ana", "bea"}},
		{`write_bw["ana"]`, []string{`write_bw["ana"]`}},
		{`write_bw["ana"],tcp`, []string{`write_bw["ana"]`, "tcp"}},
		{`write_bw["a,b"],x`, []string{`write_bw["a,b"]`, "x"}},
		{`w["a\",b"],x`, []string{`w["a\",b"]`, "x"}},
		{`w[0],w[1]`, []string{"w[0]", "w[1]"}},
		{"", nil},
		{`w["unterminated,x`, []string{`w["unterminated,x`}},
	} {
		if got := splitOnly(tc.in); !cmp.Equal(got, tc.want) {
			t.Errorf("splitOnly(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func FuzzSplitOnly(f *testing.F) {
	for _, s := range []string{"ana,bea", `write_bw["ana"],tcp`, `w["a\",b"]`, "[[,]]", `"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, p := range splitOnly(s) {
			if p == "" {
				t.Fatalf("empty part from %q", s)
			}
			if len(p) > len(s) {
				t.Fatalf("part %q longer than input %q", p, s)
			}
		}
	})
}
