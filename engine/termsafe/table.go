package termsafe

import (
	"io"
	"text/tabwriter"
	"unicode/utf8"
)

// MaxCell is the most runes of one cell a Table writes; a longer cell is
// cut and ends in "…". tabwriter pads every cell of a column to the
// column's widest and keeps the whole table until Flush, so one long cell
// over many rows multiplied them: a received results.json of one 100 KB
// student key beside 10,000 others (1 MB) made `rlab show --students`
// print 1 GB with 2.1 GB of memory (SECURITY 121).
const MaxCell = 200

// Table is a tabwriter.Writer whose cells are cut to MaxCell runes. Each
// Write is read as whole cells (tab-separated, lines ended by newlines),
// as fmt.Fprintf of a row writes them; a cell split over two writes is
// cut in each part.
type Table struct {
	tw  *tabwriter.Writer
	buf []byte
}

// NewTable is tabwriter.NewWriter with cells cut to MaxCell runes.
func NewTable(output io.Writer, minwidth, tabwidth, padding int, padchar byte, flags uint) *Table {
	return &Table{tw: tabwriter.NewWriter(output, minwidth, tabwidth, padding, padchar, flags)}
}

// Write writes p's cells, each cut to MaxCell runes.
func (t *Table) Write(p []byte) (int, error) {
	t.buf = t.buf[:0]
	start := 0
	for i := 0; i <= len(p); i++ {
		if i < len(p) && p[i] != '\t' && p[i] != '\n' {
			continue
		}
		t.buf = append(t.buf, cutCell(p[start:i])...)
		if i < len(p) {
			t.buf = append(t.buf, p[i])
		}
		start = i + 1
	}
	if _, err := t.tw.Write(t.buf); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes the table out, as tabwriter.Writer.Flush.
func (t *Table) Flush() error { return t.tw.Flush() }

func cutCell(c []byte) []byte {
	if len(c) <= MaxCell {
		return c
	}
	n, i := 0, 0
	for i < len(c) && n < MaxCell {
		_, size := utf8.DecodeRune(c[i:])
		i += size
		n++
	}
	if i == len(c) {
		return c
	}
	return append(c[:i:i], "…"...)
}
