package perftest

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestLenient: the reader of perftest's broken pre-2024 --out_json (bare
// keys and values, trailing commas) takes what perftest wrote and rejects
// the rest.
func TestLenient(t *testing.T) {
	tests := []struct {
		in   string
		want any
		bad  bool
	}{
		{in: `{a: 1, b: two words, c: "q",}`, want: map[string]any{"a": 1.0, "b": "two words", "c": "q"}},
		{in: `{x: [1, 2,], y: {z: ON,},}`, want: map[string]any{"x": []any{1.0, 2.0}, "y": map[string]any{"z": "ON"}}},
		{in: "{sl: 0,\nMsgSize: 2\n}", want: map[string]any{"sl": 0.0, "MsgSize": 2.0}},
		{in: `{a: }`, bad: true},
		{in: `{a 1}`, bad: true},
		{in: `{a: 1} x`, bad: true},
		{in: strings.Repeat("[", 100), bad: true},
		{in: `{"a": "unterminated}`, bad: true},
	}
	for _, tc := range tests {
		got, err := parseLenient(tc.in)
		if tc.bad {
			if err == nil {
				t.Errorf("parseLenient(%q) = %v, want error", tc.in, got)
			}
			continue
		}
		if err != nil {
			t.Errorf("parseLenient(%q): %v", tc.in, err)
			continue
		}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("parseLenient(%q) (-want +got):\n%s", tc.in, d)
		}
	}
}
