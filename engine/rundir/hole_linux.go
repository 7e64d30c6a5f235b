package rundir

import (
	"io"
	"os"
)

// seekHole is Linux's SEEK_HOLE (the standard library names none).
const seekHole = 4

// firstHole is the offset of f's first hole (its size when it has none);
// false when the file system cannot tell. f is left at its start.
func firstHole(f *os.File) (int64, bool) {
	off, err := f.Seek(0, seekHole)
	f.Seek(0, io.SeekStart)
	return off, err == nil
}
