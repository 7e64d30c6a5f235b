package remote

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sync"

	"github.com/pkg/sftp"
	"github.com/rlab-dev/rlab/agent/proto"
)

func (a *Agent) sftpClient() (*sftp.Client, error) {
	a.sftpOnce.Do(func() {
		a.sftp, a.sftpErr = sftp.NewClient(a.client.Client, sftp.UseConcurrentReads(true))
		if a.sftpErr != nil {
			a.sftpErr = fmt.Errorf("host %q: start sftp: %w", a.Host, a.sftpErr)
		}
	})
	return a.sftp, a.sftpErr
}

// Pull copies files from the agent's work dir into dstDir, each to a .part
// file first, verified against the size and sha256 the agent listed, then
// renamed. A path that is not local (absolute, "..", empty) is refused, as
// is anything on the host that is not a regular file (a symlink out). It
// returns the bytes pulled; the first error wins but every file is tried.
func (a *Agent) Pull(ctx context.Context, files []proto.FileInfo, dstDir string) (int64, error) {
	sc, err := a.sftpClient()
	if err != nil {
		return 0, err
	}
	var (
		mu    sync.Mutex
		total int64
		first error
		wg    sync.WaitGroup
		sem   = make(chan struct{}, 4)
	)
	for _, f := range files {
		wg.Add(1)
		sem <- struct{}{}
		go func(f proto.FileInfo) {
			defer func() { <-sem; wg.Done() }()
			n, err := a.pullOne(ctx, sc, f, dstDir)
			mu.Lock()
			total += n
			if err != nil && first == nil {
				first = err
			}
			mu.Unlock()
		}(f)
	}
	wg.Wait()
	return total, first
}

// ConfinedPath returns where a host-reported path lands under dstDir, or an
// error when it would land anywhere else.
func ConfinedPath(dstDir, p string) (string, error) {
	if !filepath.IsLocal(p) {
		return "", fmt.Errorf("refusing path %q from the host: not a local relative path", p)
	}
	dst := filepath.Join(dstDir, p)
	rel, err := filepath.Rel(dstDir, dst)
	if err != nil || !filepath.IsLocal(rel) {
		return "", fmt.Errorf("refusing path %q from the host: it leaves %s", p, dstDir)
	}
	return dst, nil
}

func (a *Agent) pullOne(ctx context.Context, sc *sftp.Client, f proto.FileInfo, dstDir string) (int64, error) {
	dst, err := ConfinedPath(dstDir, f.Path)
	if err != nil {
		return 0, fmt.Errorf("host %q: pull: %w", a.Host, err)
	}
	src := path.Join(a.Hello.WorkDir, filepath.ToSlash(f.Path))
	fail := func(err error) (int64, error) {
		return 0, fmt.Errorf("host %q: pull %s: %w", a.Host, src, err)
	}
	st, err := sc.Lstat(src)
	if err != nil {
		return fail(err)
	}
	if !st.Mode().IsRegular() {
		return fail(fmt.Errorf("not a regular file (%s); refusing it", st.Mode().Type()))
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return fail(err)
	}
	// Refuse a local symlink planted where a parent folder should be.
	if rp, err := filepath.EvalSymlinks(filepath.Dir(dst)); err == nil {
		if base, err := filepath.EvalSymlinks(dstDir); err == nil {
			if rel, err := filepath.Rel(base, rp); err != nil || !(rel == "." || filepath.IsLocal(rel)) {
				return fail(fmt.Errorf("destination %s leaves %s", dst, dstDir))
			}
		}
	}
	rf, err := sc.Open(src)
	if err != nil {
		return fail(err)
	}
	defer rf.Close()
	stop := context.AfterFunc(ctx, func() { rf.Close() })
	defer stop()
	part := dst + ".part"
	lf, err := os.OpenFile(part, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fail(err)
	}
	h := sha256.New()
	// rf.WriteTo keeps sftp's concurrent reads (io.Copy would pick it too);
	// wrapping rf in another reader would silently lose them.
	n, err := rf.WriteTo(io.MultiWriter(lf, h))
	a.pulled.Add(n)
	if cerr := lf.Close(); err == nil {
		err = cerr
	}
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	if err != nil {
		os.Remove(part)
		return fail(err)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if n != f.Size || (f.SHA256 != "" && sum != f.SHA256) {
		os.Remove(part)
		return fail(fmt.Errorf("got %d bytes with sha256 %s, the agent listed %d bytes with sha256 %s", n, sum, f.Size, f.SHA256))
	}
	if err := os.Rename(part, dst); err != nil {
		os.Remove(part)
		return fail(err)
	}
	return n, nil
}
