package server

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/rlab-dev/rlab/agent/proto"
)

// Bundle writes the requested files of workDir to w as one tar stream, the
// answer of `rlab-agent bundle` (see proto.BundleCommand). It runs as the
// login user, so it reads only what that user could read over SFTP; it
// still refuses a work dir that is a symlink or that another user owns, as
// serve refuses to take one over. A file it cannot send becomes an entry
// carrying proto.BundleError; an error returned means the stream itself is
// broken (w failed, ctx ended) and the reader must not trust what follows.
func Bundle(ctx context.Context, workDir string, req proto.BundleRequest, w io.Writer) error {
	fi, err := os.Lstat(workDir)
	if err != nil {
		return fmt.Errorf("bundle: work dir: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok {
		return fmt.Errorf("bundle: work dir %q is not a directory (a symlink is not followed)", workDir)
	}
	if int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("bundle: work dir %q belongs to uid %d, not to this user (uid %d): refusing it", workDir, st.Uid, os.Geteuid())
	}
	root, err := os.OpenRoot(workDir)
	if err != nil {
		return fmt.Errorf("bundle: open work dir %q: %w", workDir, err)
	}
	defer root.Close()
	tw := tar.NewWriter(w)
	buf := make([]byte, 64<<10)
	for _, f := range req.Files {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := bundleOne(root, tw, f, buf, req.HashOnly); err != nil {
			return fmt.Errorf("bundle %q: %w", f.Path, err)
		}
	}
	return tw.Close()
}

// bundleOne writes one entry. Only errors of the stream are returned; a
// file that cannot be sent is an entry saying why.
func bundleOne(root *os.Root, tw *tar.Writer, f proto.FileInfo, buf []byte, hashOnly bool) error {
	fail := func(why string) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.Path, Mode: 0o600, Format: tar.FormatPAX,
			PAXRecords: map[string]string{proto.BundleError: why}})
	}
	if f.Path == "" || !filepath.IsLocal(f.Path) {
		return fail("not a path inside the work dir")
	}
	if f.Size < 0 {
		return fail("negative size requested")
	}
	lfi, err := root.Lstat(f.Path)
	if err != nil {
		return fail(rootErr(err).Error())
	}
	if !lfi.Mode().IsRegular() {
		return fail(fmt.Sprintf("not a regular file (%s); refusing it", lfi.Mode().Type()))
	}
	file, err := root.OpenFile(f.Path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return fail(rootErr(err).Error())
	}
	defer file.Close()
	fi, err := file.Stat()
	if err != nil {
		return fail(err.Error())
	}
	if !fi.Mode().IsRegular() || !os.SameFile(fi, lfi) {
		return fail("replaced while being opened; refusing it")
	}
	size := fi.Size()
	send := min(size, f.Size) // grown since the listing: cut at the listed size
	if hashOnly {
		h := sha256.New()
		src := &readErrs{r: io.LimitReader(file, send)}
		n, _ := io.CopyBuffer(h, src, buf)
		if src.err != nil || n != send {
			return fail(fmt.Sprintf("read %d of %d bytes: %v", n, send, src.err))
		}
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.Path, Mode: 0o600, ModTime: fi.ModTime(), Format: tar.FormatPAX,
			PAXRecords: map[string]string{proto.BundleSize: strconv.FormatInt(size, 10), proto.BundleSHA256: hex.EncodeToString(h.Sum(nil))}})
	}
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: f.Path, Size: send, Mode: 0o600, ModTime: fi.ModTime(), Format: tar.FormatPAX,
		PAXRecords: map[string]string{proto.BundleSize: strconv.FormatInt(size, 10)}}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	src := &readErrs{r: io.LimitReader(file, send)}
	n, err := io.CopyBuffer(tw, src, buf)
	if err != nil && src.err == nil {
		return err
	}
	// Shrunk (or unreadable) mid-way: the entry must still hold send bytes
	// for the stream to stay readable; zeros fail the reader's sha256.
	clear(buf)
	for n < send {
		k, err := tw.Write(buf[:min(int64(len(buf)), send-n)])
		n += int64(k)
		if err != nil {
			return err
		}
	}
	return nil
}

// readErrs keeps a failed read of the file (which the entry's zeros report)
// apart from a failed write of the stream (which ends it).
type readErrs struct {
	r   io.Reader
	err error
}

func (r *readErrs) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && err != io.EOF {
		r.err = err
	}
	return n, err
}
