package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/engine/remote"
)

// TestJSONOutputsEscapeHostText: promise 37/48 for the -json outputs that
// carry host text (rlab facts, check, provision, run, pcap): encoding/json
// escapes ESC but writes C1 controls (U+009B is CSI), DEL and bidi
// overrides raw, so a host's kernel string or error reached the terminal
// with them. They are \u escapes now, the same JSON value.
func TestJSONOutputsEscapeHostText(t *testing.T) {
	bad := "5.15\u009b2J\u202etxt.exe\x7f\u009d0;pwned\u009c"
	res := []remote.Result{
		{Name: "h0", Facts: &proto.Facts{Kernel: bad, Hostname: bad}},
		{Name: "h1", Err: errors.New("connect: " + bad)},
	}
	tests := []struct {
		name  string
		write func(*bytes.Buffer) error
	}{
		{"facts", func(b *bytes.Buffer) error { return writeFactsJSON(b, res) }},
		{"writeJSON", func(b *bytes.Buffer) error {
			return writeJSON(b, map[string]any{"problems": []string{bad}, "unreachable": []string{bad}})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tt.write(&b); err != nil {
				t.Fatal(err)
			}
			for _, c := range []string{"\u009b", "\u009d", "\u009c", "\u202e", "\x7f", "\x1b"} {
				if strings.Contains(b.String(), c) {
					t.Errorf("raw %q in the JSON output:\n%s", c, b.String())
				}
			}
			var v any
			if err := json.Unmarshal(b.Bytes(), &v); err != nil || !strings.Contains(string(jsonStrings(v)), bad) {
				t.Errorf("the JSON no longer holds the host's value: %v", err)
			}
		})
	}
}

// jsonStrings joins every string a decoded JSON value holds.
func jsonStrings(v any) []byte {
	var out []byte
	switch x := v.(type) {
	case string:
		out = append(out, x...)
	case map[string]any:
		for _, e := range x {
			out = append(out, jsonStrings(e)...)
		}
	case []any:
		for _, e := range x {
			out = append(out, jsonStrings(e)...)
		}
	}
	return out
}
