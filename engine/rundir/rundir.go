// Package rundir reads files back from a run directory, which may have come
// from someone else (a student's hand-in, a colleague's archive, a host's
// pulled files): a symlink in it must not make rlab read, and then show or
// embed in report.html, a file of the reader's own (~/.ssh/id_ed25519), and a
// FIFO or device named like a capture must not hang the reader.
//
// Open and ReadFile resolve a path inside the directory with os.Root, so no
// symlink leads out of it (one that stays inside is followed), and open it
// with O_NONBLOCK so that a FIFO returns at once; they then take only a
// regular file. ReadFile reads at most a size bound.
//
// It is also the one writer of a run directory (write.go): every file a
// run writes there is masked by the run's sensitive values on its way.
//
// It is a leaf: it must not import any other rlab package (internal/archtest
// checks it).
package rundir

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// MaxFile bounds ReadFile: results.json, facts, lab files and logs are far
// smaller; a capture is streamed through Open instead.
const MaxFile = 256 << 20

// What a state.json may hold to be read, by `rlab down` (engine/run) and
// the report alike: a class run's holds some 200,000 effects, each a few
// values, and a few package names per host in its provision records.
// StateObjects bounds the objects and, apart, the provision records'
// package names (map members).
const (
	StateValues  = 8_000_000
	StateObjects = 1_000_000
)

// ErrNotRegular is returned for a FIFO, device, socket or directory.
var ErrNotRegular = errors.New("not a regular file")

// ErrOutside is returned for a path that leaves the run directory,
// by ".." or by a symlink.
var ErrOutside = errors.New("leaves the run directory (a symlink or ..); rlab reads a run directory's own files only")

// Open opens rel (slash- or OS-separated, relative to dir) for reading: a
// regular file inside dir, symlinks resolved only within dir.
func Open(dir, rel string) (*os.File, error) {
	rel = filepath.Clean(filepath.FromSlash(rel))
	if filepath.IsAbs(rel) || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil, &fs.PathError{Op: "open", Path: rel, Err: ErrOutside}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if strings.Contains(err.Error(), "escapes") || strings.Contains(err.Error(), "outside") {
			return nil, &fs.PathError{Op: "open", Path: filepath.Join(dir, rel), Err: ErrOutside}
		}
		return nil, err
	}
	return regular(f)
}

// OpenFile opens path for reading, as the user named it (symlinks
// followed), only if it is a regular file: a FIFO or device is refused at
// once instead of blocking the open or the reads.
func OpenFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	return regular(f)
}

func regular(f *os.File) (*os.File, error) {
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: f.Name(), Err: fmt.Errorf("%w (%s)", ErrNotRegular, modeText(st.Mode()))}
	}
	// O_NONBLOCK means nothing for a regular file; clear it anyway so the
	// descriptor behaves as an ordinary one.
	if err := syscall.SetNonblock(int(f.Fd()), false); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func modeText(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m.IsDir():
		return "a directory"
	}
	return m.Type().String()
}

// ReadFile reads rel under dir as Open does, at most MaxFile bytes.
func ReadFile(dir, rel string) ([]byte, error) {
	f, err := Open(dir, rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readAll(f)
}

// ReadPath is ReadFile for a path: its folder is the directory it is
// confined to (a file named directly, such as results.json given as an
// argument, is the user's choice; only a symlink as its last component is
// followed within that folder).
func ReadPath(path string) ([]byte, error) {
	return ReadFile(filepath.Dir(path), filepath.Base(path))
}

func readAll(f *os.File) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(f, MaxFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxFile {
		return nil, fmt.Errorf("read %s: larger than %d MiB, more than a run directory's file holds", f.Name(), MaxFile>>20)
	}
	return b, nil
}

// Files says which files of a run directory were seen already, by
// identity (device and inode, symlinks followed), not by name: a received
// run directory can name one file many times through symlinks inside it
// and hard links (a tar stores each link as a header only), and a reader
// that reads each name once still read that file once per name.
type Files map[[2]uint64]bool

// First reports whether path is a file not seen before (and notes it). A
// path that cannot be stat'ed counts as first: its reader reports why.
func (s Files) First(path string) bool {
	id, ok := FileID(path)
	if !ok {
		return true
	}
	if s[id] {
		return false
	}
	s[id] = true
	return true
}

// FileID is the identity of the file path names (device and inode,
// symlinks followed); false when it cannot be stat'ed.
func FileID(path string) ([2]uint64, bool) {
	fi, err := os.Stat(path)
	if err != nil {
		return [2]uint64{}, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return [2]uint64{}, false
	}
	return [2]uint64{uint64(st.Dev), st.Ino}, true
}

// ErrNotACapture is returned by CheckCapture for a file named like a
// capture that no capture rlab pulled can be.
var ErrNotACapture = errors.New("not a capture rlab pulled")

// sparseMin is the size from which CheckCapture refuses a capture with a
// hole. Below it a hole is kept on purpose (issue 24, round 6): such a file
// reads as at most 16 MiB, the cost of a real capture of its size, while a
// file system may store a real capture's zero blocks as holes (ZFS with
// compression makes an all-zero record one, and a capture of zero-filled
// RDMA payloads has them), so refusing any hole would refuse honest
// captures for no bound gained.
const sparseMin = 16 << 20

// CheckCapture refuses an open file a run directory names as a capture when
// reading it would cost far more than the bytes the directory holds (issue
// 24, attack round 5): a capture is read frame by frame, so the work is the
// bytes read, and a file may read as many more bytes than it stores. A
// gzip member (the decoders read gzipped pcap, which rlab's captures never
// are) inflates up to a thousand times: 1 MB of it is 1 GB of zero-length
// frames, 9 s of `rlab report`; a sparse file (a tar extracts one from a
// few bytes) reads its holes as zeros, terabytes of them. f is left at its
// start.
func CheckCapture(f *os.File) error {
	var magic [2]byte
	n, err := f.ReadAt(magic[:], 0)
	if err != nil && err != io.EOF {
		return err
	}
	if n == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		return &fs.PathError{Op: "read", Path: f.Name(), Err: fmt.Errorf("%w: it is gzip-compressed, which rlab's captures never are (a gzip member may inflate a thousand times); to read it anyway, name the file itself: rlab pcap FILE", ErrNotACapture)}
	}
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	// The first hole, asked of the file system (SEEK_HOLE: the file's
	// end when it has none, or when the file system cannot tell), not
	// its block count, which some file systems (ZFS) update only seconds
	// after a write.
	if fi.Size() >= sparseMin {
		hole, ok := firstHole(f)
		if ok && hole < fi.Size() {
			return &fs.PathError{Op: "read", Path: f.Name(), Err: fmt.Errorf("%w: it is sparse (%d bytes, a hole from byte %d), which a pulled capture never is (holes read as zeros, without end); to read it anyway, name the file itself: rlab pcap FILE", ErrNotACapture, fi.Size(), hole)}
		}
	}
	return nil
}
