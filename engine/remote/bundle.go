package remote

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/engine/rundir"
)

// bundleEntryOverhead bounds what one entry adds to the stream besides its
// bytes (PAX and ustar headers, padding) for paths up to a few KiB; a stream
// longer than its files allow is cut off.
const bundleEntryOverhead = 16 << 10

// errStream marks an error of the bundle stream itself: the host sent
// something no agent sends, so nothing after it is read.
var errStream = errors.New("bundle stream refused")

// readBundle reads a bundle (proto.BundleCommand) of files into d. The
// files must already be confined (ConfinedPath) and their sizes checked
// against the cap. Every file ends up either written (verified against its
// listed size and sha256, through a .part file) or with an error in errs;
// entries must be regular files named as requested, each at most once and
// no longer than listed, or the stream is refused from there on. land is
// told of every byte written. got says whether any entry was read at all.
func readBundle(r io.Reader, files []proto.FileInfo, d *dests, land func(int64)) (written int64, got bool, errs []error) {
	want := make(map[string]int, len(files))
	budget := int64(2 << 10) // the two zero blocks at the end
	for i, f := range files {
		want[f.Path] = i
		budget += f.Size + bundleEntryOverhead
	}
	lr := &limitedReader{r: r, left: budget}
	tr := tar.NewReader(lr)
	done := make([]bool, len(files))
	fail := func(err error) (int64, bool, []error) {
		errs = append(errs, err)
		for i, f := range files {
			if !done[i] {
				errs = append(errs, fmt.Errorf("%s: not received: %w", f.Path, errStream))
			}
		}
		return written, got, errs
	}
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			if lr.over {
				err = fmt.Errorf("longer than the %d listed files allow (%d bytes)", len(files), budget)
			}
			return fail(fmt.Errorf("read bundle: %w: %w", err, errStream))
		}
		got = true
		i, ok := want[hdr.Name]
		switch {
		case !ok:
			return fail(fmt.Errorf("bundle entry %q: not a file we asked for: %w", truncate(hdr.Name, 200), errStream))
		case done[i]:
			return fail(fmt.Errorf("bundle entry %q: sent twice: %w", hdr.Name, errStream))
		case hdr.Typeflag != tar.TypeReg:
			return fail(fmt.Errorf("bundle entry %q: not a regular file (tar type %q); refusing links and devices: %w", hdr.Name, hdr.Typeflag, errStream))
		case hdr.Size < 0 || hdr.Size > files[i].Size:
			return fail(fmt.Errorf("bundle entry %q: %d bytes, more than the %d listed: %w", hdr.Name, hdr.Size, files[i].Size, errStream))
		}
		done[i] = true
		f := files[i]
		if why := hdr.PAXRecords[proto.BundleError]; why != "" {
			errs = append(errs, fmt.Errorf("%s: the host could not send it: %s", f.Path, truncate(why, 500)))
			continue
		}
		n, err := d.write(f, tr, hdr, land)
		written += n
		if err != nil {
			if errors.Is(err, errStream) {
				return fail(err)
			}
			errs = append(errs, err)
		}
	}
	for i, f := range files {
		if !done[i] {
			errs = append(errs, fmt.Errorf("%s: missing from the bundle", f.Path))
		}
	}
	return written, got, errs
}

// write copies one entry to its .part file, checks it and renames it.
func (d *dests) write(f proto.FileInfo, r io.Reader, hdr *tar.Header, land func(int64)) (int64, error) {
	dst, err := d.prepare(f.Path)
	if err != nil {
		return 0, err
	}
	part := dst + ".part"
	lf, err := createPart(part)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", f.Path, err)
	}
	h := sha256.New()
	out, flush := d.sink(f.Path, lf)
	n, err := io.Copy(io.MultiWriter(out, h, landWriter(land)), r)
	if ferr := flush(); err == nil {
		err = ferr
	}
	if cerr := lf.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(part)
		if n < hdr.Size {
			// The stream broke inside an entry.
			return n, fmt.Errorf("%s: read bundle: %w: %w", f.Path, err, errStream)
		}
		return n, fmt.Errorf("%s: %w", f.Path, err)
	}
	if err := verify(f, n, hex.EncodeToString(h.Sum(nil)), paxSize(hdr, n)); err != nil {
		os.Remove(part)
		return n, fmt.Errorf("%s: %w", f.Path, err)
	}
	if err := rundir.Rename(part, dst); err != nil {
		os.Remove(part)
		return n, fmt.Errorf("%s: %w", f.Path, err)
	}
	return n, nil
}

// paxSize is the file's size on the host when the agent opened it.
func paxSize(hdr *tar.Header, n int64) int64 {
	if s, ok := hdr.PAXRecords[proto.BundleSize]; ok {
		if v, err := strconv.ParseInt(s, 10, 64); err == nil {
			return v
		}
		return -1
	}
	return n
}

// verify checks what was written against the listing: n bytes with sha256
// sum, from a file that was hostSize bytes on the host (-1: unknown).
func verify(f proto.FileInfo, n int64, sum string, hostSize int64) error {
	switch {
	case hostSize > f.Size:
		return fmt.Errorf("grew to %d bytes after the listing (%d bytes): cut at the listed size, not verified", hostSize, f.Size)
	case n != f.Size || (f.SHA256 != "" && sum != f.SHA256):
		return fmt.Errorf("got %d bytes with sha256 %s, the agent listed %d bytes with sha256 %s", n, sum, f.Size, f.SHA256)
	case hostSize != f.Size:
		return fmt.Errorf("the host says it was %d bytes, the agent listed %d", hostSize, f.Size)
	}
	return nil
}

// limitedReader fails (rather than ending quietly) past its budget.
type limitedReader struct {
	r    io.Reader
	left int64
	over bool
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.left <= 0 {
		l.over = true
		return 0, errors.New("bundle stream too long")
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}

type landWriter func(int64)

func (w landWriter) Write(p []byte) (int, error) {
	if w != nil {
		w(int64(len(p)))
	}
	return len(p), nil
}
