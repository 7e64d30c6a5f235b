// Package termsafe neutralises text that came from a host (agent stderr, tool
// output, error texts, names and facts a host reports) before it reaches a
// terminal or a file a terminal will show (summary.md), and so does every
// output of text from a lab (a course repository's) or a run directory
// received from someone else (plan, validate, graph, runs, compare). A hostile
// host, lab or run must not be able to rewrite the user's screen, set its
// title, write the clipboard (OSC 52), hide text with bidi overrides, or fake
// lines of rlab's own output.
//
// Every control character is escaped, not dropped, so the user still sees
// that something was there: C0 controls (ESC included, which starts every CSI
// and OSC sequence), DEL, C1 controls (U+0080–U+009F, among them the one-byte
// CSI and OSC), Unicode bidi controls and the line/paragraph separators, and
// bytes that are not UTF-8. Printable text, backslashes included, is kept as it
// is, so escaping is idempotent.
//
// It is a leaf: it must not import any other rlab package (internal/archtest
// checks it).
package termsafe

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Line returns s safe to print as one line: newlines and tabs are escaped too,
// so a host cannot fake further lines of rlab's output.
func Line(s string) string { return escape(s, false) }

// Block returns s safe to print as a block of lines: newlines and tabs are
// kept, every other control character is escaped.
func Block(s string) string { return escape(s, true) }

// Safe reports whether s prints as itself in a block (Block(s) == s).
func Safe(s string) bool { return firstUnsafe(s, true) < 0 }

func escape(s string, block bool) string {
	i := firstUnsafe(s, block)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case !unsafeRune(r, block):
			b.WriteString(s[i : i+n])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		i += n
	}
	return b.String()
}

// firstUnsafe is the byte offset of the first character escape would change,
// or -1.
func firstUnsafe(s string, block bool) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7f {
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n <= 1) || unsafeRune(r, block) {
			return i
		}
		i += n
	}
	return -1
}

func unsafeRune(r rune, block bool) bool {
	switch {
	case r == '\n' || r == '\t':
		return !block
	case r < 0x20, r == 0x7f:
		return true
	case r >= 0x80 && r <= 0x9f: // C1: 0x9b is CSI, 0x9d OSC on terminals that take 8-bit controls
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, // arabic letter mark, LRM, RLM
		r >= 0x202a && r <= 0x202e, // LRE, RLE, PDF, LRO, RLO
		r >= 0x2066 && r <= 0x2069, // LRI, RLI, FSI, PDI
		r == 0x2028, r == 0x2029,   // line and paragraph separators
		r == 0xfffe, r == 0xffff: // noncharacters, which XML (an SVG of host facts) forbids
		return true
	}
	return false
}

// JSON returns JSON text (as encoding/json writes it) with every character
// Block would escape written as a \u escape instead: encoding/json escapes
// C0 controls but leaves DEL, C1 controls (among them the one-byte CSI and
// OSC), bidi controls and U+FFFE/U+FFFF raw. Such characters occur only
// inside JSON strings, where \u escapes mean the same value, so the JSON
// decodes to what it did. Invalid UTF-8 is replaced by U+FFFD.
func JSON(b []byte) []byte {
	s := string(b)
	i := firstUnsafe(s, true)
	if i < 0 {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	out = append(out, s[:i]...)
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			out = append(out, `\ufffd`...)
		case unsafeRune(r, true):
			out = fmt.Appendf(out, `\u%04x`, r)
		default:
			out = append(out, s[i:i+n]...)
		}
		i += n
	}
	return out
}
