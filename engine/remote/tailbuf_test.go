package remote

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// sizeReader hands out src and records the largest buffer it was given.
type sizeReader struct {
	src     io.Reader
	largest int
}

func (r *sizeReader) Read(p []byte) (int, error) {
	r.largest = max(r.largest, len(p))
	return r.src.Read(p)
}

// TestTailBufferCopy: io.Copy into a tailBuffer (as x/crypto/ssh copies a
// session's stderr) keeps the same tail and passes on the same bytes as
// writing it whole, through a small buffer: the 32 KiB io.Copy would
// allocate lived as long as the agent's session, one per host.
func TestTailBufferCopy(t *testing.T) {
	for _, n := range []int{0, 1, 1000, 1 << 10, 5000, 70 << 10} {
		src := strings.Repeat("agent log line\n", n/15+1)[:n]
		var gotAlso, wantAlso bytes.Buffer
		got := &tailBuffer{max: 4 << 10, also: &gotAlso}
		want := &tailBuffer{max: 4 << 10, also: &wantAlso}
		want.Write([]byte(src))
		r := &sizeReader{src: strings.NewReader(src)}
		if k, err := io.Copy(got, r); err != nil || k != int64(n) {
			t.Errorf("%d bytes: io.Copy = %d, %v", n, k, err)
		}
		if got.String() != want.String() || gotAlso.String() != wantAlso.String() {
			t.Errorf("%d bytes: copied tail %q (also %d bytes), written whole %q (also %d bytes)",
				n, got.String(), gotAlso.Len(), want.String(), wantAlso.Len())
		}
		if r.largest > 1<<10 {
			t.Errorf("%d bytes: read with a %d-byte buffer, want at most 1 KiB", n, r.largest)
		}
	}
}
