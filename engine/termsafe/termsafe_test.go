package termsafe

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEscape(t *testing.T) {
	tests := []struct {
		name, in, line, block string
	}{
		{"plain", "ib_write_bw: 12.5 Gb/s", "ib_write_bw: 12.5 Gb/s", "ib_write_bw: 12.5 Gb/s"},
		{"unicode kept", "größe µs → ✓", "größe µs → ✓", "größe µs → ✓"},
		{"backslash kept", `C:\x1b`, `C:\x1b`, `C:\x1b`},
		{"newline and tab", "a\n\tb", `a\n\tb`, "a\n\tb"},
		{"carriage return", "ok\rFAIL", `ok\rFAIL`, `ok\rFAIL`},
		{"title (OSC 0, BEL)", "\x1b]0;pwned\x07x", `\x1b]0;pwned\x07x`, `\x1b]0;pwned\x07x`},
		{"title (OSC 0, ST)", "\x1b]0;pwned\x1b\\", `\x1b]0;pwned\x1b\`, `\x1b]0;pwned\x1b\`},
		{"clear screen (CSI)", "\x1b[2J\x1b[H", `\x1b[2J\x1b[H`, `\x1b[2J\x1b[H`},
		{"clipboard (OSC 52)", "\x1b]52;c;cm0gLXJmIH4=\x07", `\x1b]52;c;cm0gLXJmIH4=\x07`, `\x1b]52;c;cm0gLXJmIH4=\x07`},
		{"C1 CSI", "\u009b2J", `\u009b2J`, `\u009b2J`},
		{"C1 OSC", "\u009d0;t\u009c", `\u009d0;t\u009c`, `\u009d0;t\u009c`},
		{"DEL and NUL", "a\x7fb\x00c", `a\x7fb\x00c`, `a\x7fb\x00c`},
		{"backspace overwrite", "ok\b\bFAIL", `ok\x08\x08FAIL`, `ok\x08\x08FAIL`},
		{"invalid UTF-8", "a\xffb\xc3", `a\xffb\xc3`, `a\xffb\xc3`},
		{"raw 8-bit CSI byte", "a\x9b2J", `a\x9b2J`, `a\x9b2J`},
		{"bidi override", "file\u202egnp.exe", `file\u202egnp.exe`, `file\u202egnp.exe`},
		{"bidi isolate", "\u2066x\u2069", `\u2066x\u2069`, `\u2066x\u2069`},
		{"line separator", "a\u2028b", `a\u2028b`, `a\u2028b`},
		{"empty", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Line(tt.in); got != tt.line {
				t.Errorf("Line(%q) = %q, want %q", tt.in, got, tt.line)
			}
			if got := Block(tt.in); got != tt.block {
				t.Errorf("Block(%q) = %q, want %q", tt.in, got, tt.block)
			}
			if Safe(tt.in) != (tt.block == tt.in) {
				t.Errorf("Safe(%q) = %v", tt.in, Safe(tt.in))
			}
		})
	}
}

// FuzzEscape: whatever a host sends, the result holds no control character,
// no bidi control and no invalid UTF-8, escaping again changes nothing, and
// safe text passes unchanged.
func FuzzEscape(f *testing.F) {
	for _, s := range []string{"", "plain", "\x1b]52;c;eA==\x07", "\x1b[2J", "\u009b", "\xff\xfe", "a\u202eb", "a\n\tb\r"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, block := range []bool{false, true} {
			out := escape(s, block)
			if !utf8.ValidString(out) {
				t.Fatalf("escape(%q, %v) = %q: not UTF-8", s, block, out)
			}
			for _, r := range out {
				if unsafeRune(r, block) {
					t.Fatalf("escape(%q, %v) = %q: holds %U", s, block, out, r)
				}
			}
			if again := escape(out, block); again != out {
				t.Fatalf("not idempotent: %q then %q", out, again)
			}
			if firstUnsafe(s, block) < 0 && out != s {
				t.Fatalf("safe %q changed to %q", s, out)
			}
			if !block && strings.ContainsAny(out, "\n\t") {
				t.Fatalf("Line(%q) = %q keeps a newline or tab", s, out)
			}
		}
	})
}

// TestJSON: JSON with hostile strings is printable after JSON and decodes
// to the same value.
func TestJSON(t *testing.T) {
	in := map[string]string{"a": "\x1b]0;t\x07\u009b2J\u202eevil\u0085\x7f\ufffe ok é"}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	out := JSON(b)
	if !Safe(string(out)) {
		t.Errorf("JSON left a control character: %q", out)
	}
	var back map[string]string
	if err := json.Unmarshal(out, &back); err != nil || back["a"] != in["a"] {
		t.Errorf("JSON changed the value: %q, %v", back, err)
	}
}
