package lab

import (
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

// TestLongLineDiagnosticCombiningMarks: hcl counts a range's columns in
// characters as a reader sees them (grapheme clusters: e and a combining
// acute are one), the window of a long line is cut in code points. With
// many combining marks before the range, the window was placed by the
// column as if it were a code point index, so the range fell outside it
// and the caret stood under other text.
func TestLongLineDiagnosticCombiningMarks(t *testing.T) {
	for _, c := range []struct {
		name string
		n    int // é (e + U+0301) before the range
	}{{"few", 30}, {"many", 2000}} {
		t.Run(c.name, func(t *testing.T) {
			marks := strings.Repeat("e\u0301", c.n)
			line := `  a = ["` + marks + `", nosuch.thing, "` + strings.Repeat("x", 400) + `"]`
			src := []byte("lab \"x\" {}\nhost \"a\" {\n  address = \"192.0.2.1\"\n}\nlocals {\n" + line + "\n}\n")
			_, diags := LoadSource("long.hcl", src, t.TempDir(), LoadOptions{})
			if len(diags) == 0 {
				t.Fatal("no diagnostic")
			}
			files := map[string]*hcl.File{"long.hcl": {Bytes: src}}
			var out strings.Builder
			must(t, WriteDiagnostics(&out, files, diags[:1], 100, false))
			lines := strings.Split(out.String(), "\n")
			for i, ln := range lines {
				if !strings.HasPrefix(ln, "   6: ") {
					continue
				}
				if !strings.Contains(ln, "nosuch.thing") {
					t.Fatalf("the range is not in the window:\n%s", out.String())
				}
				caret := lines[i+1]
				// The caret's column, in characters as shown, is where
				// nosuch.thing starts, in characters as shown.
				shown := []rune(ln)
				at := strings.Index(ln, "nosuch.thing")
				want := shownChars(string(shown[:len([]rune(ln[:at]))]))
				if got := strings.Index(caret, "^"); got != want || !strings.HasPrefix(caret[got:], "^~~~~~~~~~~") {
					t.Errorf("caret at column %d, want %d (under nosuch.thing):\n%s", got, want, out.String())
				}
			}
		})
	}
}

// shownChars counts s's characters as shown: a combining mark joins the
// character before it.
func shownChars(s string) int {
	n := 0
	for _, r := range s {
		if r != '\u0301' {
			n++
		}
	}
	return n
}
