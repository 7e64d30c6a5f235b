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
	"time"

	"github.com/pkg/sftp"
	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc"
	"github.com/rlab-dev/rlab/engine/rundir"
	"github.com/rlab-dev/rlab/engine/sshx"
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
		a.sftp, a.sftpErr = a.startSFTP()
		if a.sftpErr != nil {
			a.sftpErr = fmt.Errorf("start sftp: %w", a.sftpErr)
		}
	})
	return a.sftp, a.sftpErr
}

// startSFTP starts the SFTP subsystem in a session of its own. A host
// whose subsystem does not answer in time (a hung sftp-server) is given up
// on for SFTP only: the session is closed and left (sshd keeps a session's
// channel while its process lives, so the read may never end), and the
// connection stays for the agent and the bundle, which then carry what
// SFTP would have (PullWith). Closing the connection, as the first
// version did, lost every later pull from the host, its small files too.
// A session that does not even open is a host that stalled: the
// connection is closed, as for every other session.
func (a *Agent) startSFTP() (*sftp.Client, error) {
	limit := limitOr(a.opts.CallTimeout, sshx.DefaultOpenTimeout)
	sess, err := a.client.OpenSession(context.Background(), limit)
	if err != nil {
		return nil, err
	}
	stdin, err := sess.StdinPipe()
	if err != nil {
		sess.Close()
		return nil, err
	}
	stdout, err := sess.StdoutPipe()
	if err != nil {
		sess.Close()
		return nil, err
	}
	type started struct {
		c   *sftp.Client
		err error
	}
	done := make(chan started, 1)
	go func() {
		if err := sess.RequestSubsystem("sftp"); err != nil {
			done <- started{err: err}
			return
		}
		// MaxPacketUnchecked lets File.ReadAt ask for a whole big read
		// in one request; the client's own WriteTo is never used (it
		// takes a short read for the end of a chunk).
		c, err := sftp.NewClientPipe(stdout, stdin, sftp.MaxPacketUnchecked(sftpBigRead), sftp.UseConcurrentReads(true))
		done <- started{c, err}
	}()
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case r := <-done:
		if r.err != nil {
			sess.Close()
		}
		return r.c, r.err
	case <-t.C:
		go func() {
			sess.Close()
			if r := <-done; r.c != nil {
				r.c.Close()
			}
		}()
		return nil, fmt.Errorf("the host's SFTP subsystem did not answer for %s", rpc.FormatDuration(limit))
	}
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
// A file listed without a sha256 is checked against the one sums gets
// from the host.
func (a *Agent) pullSFTP(ctx context.Context, sc *sftp.Client, f proto.FileInfo, d *dests, land func(int64), sums *hostSums) error {
	src := path.Join(a.Hello.WorkDir, filepath.ToSlash(f.Path))
	dst, err := d.prepare(f.Path)
	if err != nil {
		return err
	}
	// No byte of this file for the idle limit closes the connection: a
	// read the host never answers ends only so.
	// On ctx's end copyAt returns by itself (its reads are left to end
	// with the session); only a wait that does not end closes the
	// connection, CancelGrace later.
	w := a.client.WatchWith(ctx, "sftp read", a.idleLimit(), sshx.WatchOptions{Idle: true, Session: closer(func() {})})
	defer w.Stop()
	fail := func(err error) error { return fmt.Errorf("%s: %w", src, w.Fired(err)) }
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
	defer func() {
		if ctx.Err() != nil {
			// A read the server never answers holds the handle's
			// lock: do not wait for it (the session's end frees it).
			go rf.Close()
			return
		}
		rf.Close()
	}()
	part := dst + ".part"
	lf, err := createPart(part)
	if err != nil {
		return fail(err)
	}
	h := sha256.New()
	out, flush := d.sink(f.Path, lf)
	n, grew, err := copyAt(ctx, rf, f.Size, readSize(sc), io.MultiWriter(out, landWriter(func(n int64) { w.Reset(); land(n) })), h)
	if ferr := flush(); err == nil {
		err = ferr
	}
	if cerr := lf.Close(); err == nil {
		err = cerr
	}
	hostSize := f.Size
	if grew {
		hostSize = f.Size + 1
	}
	// The copy is done: the wait for the host's sum has its own watch.
	if werr := w.Stop(); werr != nil && err == nil {
		err = werr
	}
	if err == nil && f.SHA256 == "" && sums != nil {
		var hs hostSum
		if hs, err = sums.get(ctx, f.Path); err == nil {
			f.SHA256 = hs.sha
			hostSize = max(hostSize, hs.size)
		}
	}
	if err == nil {
		err = verify(f, n, hex.EncodeToString(h.Sum(nil)), hostSize)
	}
	if err == nil {
		err = rundir.Rename(part, dst)
	}
	if err != nil {
		os.Remove(part)
		return fail(err)
	}
	return nil
}

// copyAt copies the first size bytes of r in order to w and to hash, with
// reads of chunk bytes in flight (sftpInFlight in all), and reports whether
// r holds more than size bytes (it is never read past size+1). Writing and
// hashing run side by side on different chunks. A file shorter than size is
// an error.
func copyAt(ctx context.Context, r io.ReaderAt, size int64, chunk int, w io.Writer, hash io.Writer) (written int64, grew bool, err error) {
	n := (size + int64(chunk) - 1) / int64(chunk)
	workers := int64(max(1, min(sftpInFlight/chunk, int(n))))
	type piece struct {
		b   []byte
		err error
	}
	// Worker k reads chunks k, k+workers, ... into buffers from free; the
	// writer takes them in order from each worker's channel in turn, then
	// hands them to the hasher, which frees them. A worker holds at most
	// two buffers (one queued, one in hand), so 2*workers+2 buffers always
	// leave one for the worker whose chunk is next.
	free := make(chan []byte, 2*workers+2)
	for range cap(free) {
		free <- make([]byte, chunk)
	}
	chans := make([]chan piece, workers)
	stop := make(chan struct{})
	defer close(stop)
	for k := range chans {
		chans[k] = make(chan piece, 1)
		go func(k int64, out chan<- piece) {
			for i := k; i < n; i += workers {
				var b []byte
				select {
				case b = <-free:
				case <-stop:
					return
				}
				off := i * int64(chunk)
				b = b[:min(int64(chunk), size-off)]
				var err error
				if ctx.Err() != nil {
					err = ctx.Err()
				} else {
					var got int
					got, err = r.ReadAt(b, off)
					if got == len(b) {
						err = nil
					} else if err == nil || errors.Is(err, io.EOF) {
						err = fmt.Errorf("the file ended at %d bytes, the agent listed %d bytes", off+int64(got), size)
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
		}(int64(k), chans[k])
	}
	toHash := make(chan []byte, workers)
	hashed := make(chan struct{})
	go func() {
		defer close(hashed)
		for b := range toHash {
			hash.Write(b)
			free <- b[:cap(b)]
		}
	}()
	defer func() { close(toHash); <-hashed }()
	for i := int64(0); i < n; i++ {
		var p piece
		select {
		case p = <-chans[i%workers]:
		case <-ctx.Done():
			return written, false, ctx.Err()
		}
		if p.err != nil {
			return written, false, p.err
		}
		k, err := w.Write(p.b)
		written += int64(k)
		if err != nil {
			return written, false, err
		}
		toHash <- p.b
	}
	var one [1]byte
	k, err := r.ReadAt(one[:], size)
	if k > 0 {
		return written, true, nil
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return written, false, err
	}
	return written, false, nil
}
