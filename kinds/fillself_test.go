package kinds

import "testing"

// TestFillSelfLiteralBetween: a lab's literal text "self.port" between two
// self.* references is text, as ExpandSelf reads it left to right.
// FillSelf replaces each name everywhere in map order, so the closing NUL
// of the first and the opening NUL of the second, with the text between,
// read as SelfRef("port") in some orders: the argv is then corrupt.
func TestFillSelfLiteralBetween(t *testing.T) {
	argv := []string{SelfRef("server_address") + "self.port" + SelfRef("size")}
	vals := map[string]string{"server_address": "10.0.0.1", "port": "20000", "size": "64"}
	want, err := ExpandSelf(argv, vals)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 200; i++ {
		if got := FillSelf(argv, vals); got[0] != want[0] {
			t.Fatalf("FillSelf gives %q, ExpandSelf %q", got[0], want[0])
		}
	}
}
