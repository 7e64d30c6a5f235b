package remote

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"

	"github.com/pkg/sftp"
	"github.com/rlab-dev/rlab/agent/proto"
)

// SFTP read sizes. Every server serves 32 KiB reads; OpenSSH's sftp-server
// serves up to 255 KiB (SFTP_MAX_READ_LENGTH, 256 KiB less 1 KiB, what its
// limits@openssh.com extension reports), and eight times fewer requests is
// most of the difference to scp. A server may still answer any read short
// (pkg/sftp's own server sends 32 KiB whatever is asked): the reads below
// ask again for the rest, so a short read never becomes a hole or an end.
const (
	sftpSmallRead = 32 << 10
	sftpBigRead   = 255 << 10
	// Reads in flight per file: 2 MiB, the SSH channel window x/crypto
	// grants, is what the server may send ahead anyway.
	sftpInFlight = 2 << 20
)

// sftpReadSize, when set, forces the read size (tests: big reads against
// a server that answers them short).
var sftpReadSize int

func (a *Agent) sftpClient() (*sftp.Client, error) {
	a.sftpOnce.Do(func() {
		// MaxPacketUnchecked lets File.ReadAt ask for a whole big read in
		// one request; the client's own WriteTo is never used (it takes a
		// short read for the end of a chunk).
		a.sftp, a.sftpErr = sftp.NewClient(a.client.Client, sftp.MaxPacketUnchecked(sftpBigRead), sftp.UseConcurrentReads(true))
		if a.sftpErr != nil {
			a.sftpErr = fmt.Errorf("start sftp: %w", a.sftpErr)
		}
	})
	return a.sftp, a.sftpErr
}

func readSize(sc *sftp.Client) int {
	if sftpReadSize > 0 {
		// Never above the client's maxPacket: File.ReadAt splits bigger
		// reads itself and takes their short answers for the end.
		return min(sftpReadSize, sftpBigRead)
	}
	if _, ok := sc.HasExtension("limits@openssh.com"); ok {
		return sftpBigRead
	}
	return sftpSmallRead
}

// pullSFTP copies one file by SFTP into d, verified, through .part.
func (a *Agent) pullSFTP(ctx context.Context, sc *sftp.Client, f proto.FileInfo, d *dests, land func(int64)) error {
	src := path.Join(a.Hello.WorkDir, filepath.ToSlash(f.Path))
	fail := func(err error) error { return fmt.Errorf("%s: %w", src, err) }
	dst, err := d.prepare(f.Path)
	if err != nil {
		return err
	}
	st, err := sc.Lstat(src)
	if err != nil {
		return fail(err)
	}
	if !st.Mode().IsRegular() {
		return fail(fmt.Errorf("not a regular file (%s); refusing it", st.Mode().Type()))
	}
	rf, err := sc.Open(src)
	if err != nil {
		return fail(err)
	}
	defer rf.Close()
	part := dst + ".part"
	lf, err := createPart(part)
	if err != nil {
		return fail(err)
	}
	h := sha256.New()
	n, grew, err := copyAt(ctx, rf, f.Size, readSize(sc), io.MultiWriter(lf, h, landWriter(land)))
	if cerr := lf.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		hostSize := f.Size
		if grew {
			hostSize = f.Size + 1
		}
		err = verify(f, n, hex.EncodeToString(h.Sum(nil)), hostSize)
	}
	if err == nil {
		err = os.Rename(part, dst)
	}
	if err != nil {
		os.Remove(part)
		return fail(err)
	}
	return nil
}

// copyAt copies the first size bytes of r to w in order, with reads of
// chunk bytes in flight (sftpInFlight in all), and reports whether r holds
// more than size bytes (it is never read past size+1). A file shorter than
// size is an error.
func copyAt(ctx context.Context, r io.ReaderAt, size int64, chunk int, w io.Writer) (written int64, grew bool, err error) {
	workers := max(1, min(sftpInFlight/chunk, int((size+int64(chunk)-1)/int64(chunk))))
	type piece struct {
		b   []byte
		err error
	}
	// Worker k reads chunks k, k+workers, ...; the writer takes them in
	// order from each worker's channel in turn.
	chans := make([]chan piece, workers)
	stop := make(chan struct{})
	defer close(stop)
	for k := range chans {
		chans[k] = make(chan piece, 1)
		go func(k int, out chan<- piece) {
			// One buffer waits in the channel, one is being written, one
			// is being read into.
			bufs := [3][]byte{make([]byte, chunk), make([]byte, chunk), make([]byte, chunk)}
			for i, turn := int64(k), 0; i*int64(chunk) < size; i, turn = i+int64(workers), (turn+1)%3 {
				off := i * int64(chunk)
				b := bufs[turn][:min(int64(chunk), size-off)]
				var err error
				if ctx.Err() != nil {
					err = ctx.Err()
				} else {
					var n int
					n, err = r.ReadAt(b, off)
					if n == len(b) {
						err = nil
					} else if err == nil || errors.Is(err, io.EOF) {
						err = fmt.Errorf("the file ended at %d bytes, the agent listed %d bytes", off+int64(n), size)
					}
				}
				select {
				case out <- piece{b, err}:
				case <-stop:
					return
				}
				if err != nil {
					return
				}
			}
		}(k, chans[k])
	}
	for i := int64(0); i*int64(chunk) < size; i++ {
		p := <-chans[i%int64(workers)]
		if p.err != nil {
			return written, false, p.err
		}
		n, err := w.Write(p.b)
		written += int64(n)
		if err != nil {
			return written, false, err
		}
	}
	var one [1]byte
	n, err := r.ReadAt(one[:], size)
	if n > 0 {
		return written, true, nil
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return written, false, err
	}
	return written, false, nil
}
