package kinds

import (
	"strings"
	"testing"
)

// FuzzMarked: the one reader of the NUL format loses and adds nothing
// (its pieces joined are the element), a placeholder's name holds no
// mark, and only the last piece can be broken.
func FuzzMarked(f *testing.F) {
	f.Add(SelfRef("server_address") + "self.port" + SelfRef("size"))
	f.Add("a\x00mtu\x00b\x00")
	f.Add("{server.gid}\x00\x00")
	f.Fuzz(func(t *testing.T, a string) {
		ps := marked(a)
		var b strings.Builder
		for i, p := range ps {
			b.WriteString(p.text)
			if strings.Contains(p.ref, selfMark) {
				t.Fatalf("%q: piece %d's name %q holds a mark", a, i, p.ref)
			}
			if p.mark != (p.ref != "" || p.text == selfMark+selfMark) || p.mark && p.broken {
				t.Fatalf("%q: piece %d %+v: mark wrong", a, i, p)
			}
			if p.mark && p.text != selfMark+p.ref+selfMark {
				t.Fatalf("%q: piece %d %q is not its name %q marked", a, i, p.text, p.ref)
			}
			if p.broken && i != len(ps)-1 {
				t.Fatalf("%q: broken piece %d is not the last", a, i)
			}
		}
		if b.String() != a {
			t.Fatalf("%q read as %q", a, b.String())
		}
	})
}
