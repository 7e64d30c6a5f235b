package report

import (
	"strings"
	"testing"
)

// TestLabHeaderRefusesWhatLoadRefuses: a received run directory's lab/
// file is parsed for its name only within Load's bounds (lab.Unparsable):
// 250 KB of `[` or `!` crashed rlab report at Go's stack limit (attack
// round 17, labs); a plain header is read. Both cases are valid HCL, so
// only the bounds keep them from the parser.
func TestLabHeaderRefusesWhatLoadRefuses(t *testing.T) {
	head := "lab \"ok\" {\n  description = \"d\"\n}\n"
	if name, desc := labHeader("f.hcl", []byte(head)); name != "ok" || desc != "d" {
		t.Fatalf("labHeader of a plain lab = %q, %q", name, desc)
	}
	for name, tail := range map[string]string{
		"brackets": "locals {\n  x = " + strings.Repeat("[", 200) + "1" + strings.Repeat("]", 200) + "\n}\n",
		"bangs":    "locals {\n  x = " + strings.Repeat("!", 1000) + "true\n}\n",
	} {
		if n, _ := labHeader("f.hcl", []byte(head+tail)); n != "" {
			t.Errorf("%s: labHeader parsed it (name %q)", name, n)
		}
	}
}
