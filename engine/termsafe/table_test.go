package termsafe

import (
	"strings"
	"testing"
)

// TestTableCellsCut: a Table cuts each cell to MaxCell runes, so one long
// cell no longer pads every row of its column (SECURITY 121); short cells
// are aligned as tabwriter aligns them.
func TestTableCellsCut(t *testing.T) {
	var b strings.Builder
	tw := NewTable(&b, 0, 0, 2, ' ', 0)
	tw.Write([]byte(strings.Repeat("é", 100_000) + "\tx\n"))
	for range 10_000 {
		tw.Write([]byte("k\tx\n"))
	}
	if err := tw.Flush(); err != nil {
		t.Fatal(err)
	}
	if b.Len() > 10_000*(MaxCell+8)+2*MaxCell+16 {
		t.Errorf("%d bytes written", b.Len())
	}
	first, _, _ := strings.Cut(b.String(), "\n")
	if want := strings.Repeat("é", MaxCell) + "…  x"; first != want {
		t.Errorf("first row %q…, want the cell cut to %d runes", first[:40], MaxCell)
	}
	b.Reset()
	tw = NewTable(&b, 0, 0, 2, ' ', 0)
	tw.Write([]byte("NAME\tN\nalpha\t1\n"))
	tw.Write([]byte("b\t22\n"))
	tw.Flush()
	if want := "NAME   N\nalpha  1\nb      22\n"; b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}
