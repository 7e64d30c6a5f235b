package remote

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc"
	"github.com/rlab-dev/rlab/engine/sshx"
	"golang.org/x/crypto/ssh"
)

// bundleSession starts `rlab-agent bundle` for req in a second session of
// the agent's connection. It runs as the login user even under become (see
// proto.BundleCommand); a root agent has already given its files to that
// user. ok is false when it cannot start at all (then err, when set, is a
// host that stalled: its connection is closed, and nothing else is tried).
func (a *Agent) bundleSession(ctx context.Context, req proto.BundleRequest) (sess *ssh.Session, out io.Reader, stderr *tailBuffer, ok bool, err error) {
	if a.Installed == nil || a.Installed.Path == "" || a.Hello.WorkDir == "" {
		return nil, nil, nil, false, nil
	}
	b, err := json.Marshal(req)
	if err != nil || len(b) > proto.MaxBundleRequest {
		return nil, nil, nil, false, nil
	}
	limit := limitOr(a.opts.CallTimeout, sshx.DefaultOpenTimeout)
	sess, err = a.client.OpenSession(ctx, limit)
	if err != nil {
		return nil, nil, nil, false, stalled(err)
	}
	stderr = &tailBuffer{max: 8 << 10}
	sess.Stdin = bytes.NewReader(b)
	sess.Stderr = stderr
	out, err = sess.StdoutPipe()
	if err != nil {
		sess.Close()
		return nil, nil, nil, false, nil
	}
	// Only the agent's path (our hash under the host's home) and the work
	// dir its hello reported reach the remote shell, quoted.
	// With become the agent may run from its root-owned copy alone (no
	// upload for it, SECURITY 176): the bundle runs from there, as the
	// user, when the user's copy is not there.
	cmd := "exec " + shellQuote(a.Installed.Path) + " " + proto.BundleCommand + " --work-dir " + shellQuote(a.Hello.WorkDir)
	if a.opts.Become && a.Installed.Hash != "" {
		cmd = "b=" + shellQuote(a.Installed.Path) + "; [ -x \"$b\" ] || b=" + shellQuote(proto.SystemAgentPath(a.Installed.Hash)) + "; exec \"$b\" " + proto.BundleCommand + " --work-dir " + shellQuote(a.Hello.WorkDir)
	}
	if err := a.client.Start(ctx, sess, cmd, limit); err != nil {
		sess.Close()
		return nil, nil, nil, false, stalled(err)
	}
	return sess, out, stderr, true, nil
}

// stalled is err when it is a host that stalled (sshx.StallError: its
// connection is closed), else nil.
func stalled(err error) error {
	var se *sshx.StallError
	if errors.As(err, &se) {
		return err
	}
	return nil
}

// finishWait bounds the wait for the agent's exit once its stream is read:
// a host that keeps the session open does not hold the pull.
const finishWait = 5 * time.Second

// finish lets the agent reach its exit and returns how it ended.
func finish(sess *ssh.Session, out io.Reader) error {
	done := make(chan error, 1)
	go func() {
		io.Copy(io.Discard, io.LimitReader(out, 64<<10))
		done <- sess.Wait()
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(finishWait):
		sess.Close()
		return fmt.Errorf("%s did not exit within %s of its stream's end", proto.BundleCommand, finishWait)
	}
}

// pullBundle pulls files in one bundle stream. fallback is true when no
// bundle could be read at all (an agent without the command, a host that
// allows no second exec): nothing was written and the caller should use
// SFTP.
func (a *Agent) pullBundle(ctx context.Context, files []proto.FileInfo, d *dests, land func(int64)) (written int64, fallback bool, errs []error) {
	sess, out, stderr, ok, serr := a.bundleSession(ctx, proto.BundleRequest{Files: files})
	if serr != nil {
		return 0, false, []error{fmt.Errorf("%s of %d files: %w", proto.BundleCommand, len(files), serr)}
	}
	if !ok {
		return 0, true, nil
	}
	defer sess.Close()
	// A host that stops sending mid-stream is given up on, as an agent
	// that stops answering is (rpc deadlines): no byte for idle closes
	// the connection (closing the session would not end the read: sshd
	// keeps the channel while the bundle process lives).
	idle := a.idleLimit()
	w := a.client.WatchWith(ctx, proto.BundleCommand, idle, sshx.WatchOptions{Idle: true, Session: sess})
	defer w.Stop()
	out = &watchedReader{r: out, w: w}
	written, got, errs := readBundle(out, files, d, land)
	werr := finish(sess, out)
	if ctx.Err() != nil {
		return written, false, append([]error{fmt.Errorf("bundle of %d files: %w", len(files), ctx.Err())}, errs...)
	}
	if w.Err() != nil {
		return written, false, append([]error{fmt.Errorf("host %q: %s of %d files: the host sent nothing for %s: %w", a.Host, proto.BundleCommand, len(files), rpc.FormatDuration(idle), ErrAgentLost)}, errs...)
	}
	if !got && len(errs) > 0 {
		return 0, true, nil
	}
	if len(errs) > 0 && werr != nil {
		if st := strings.TrimSpace(stderr.String()); st != "" {
			errs[0] = fmt.Errorf("%w (agent bundle: %v: %s)", errs[0], werr, truncate(lastLines(st, 5), 1000))
		}
	}
	return written, false, errs
}

// bundleIdle bounds the silence of a bundle stream (StartOptions.CallTimeout
// replaces it).
const bundleIdle = 2 * time.Minute

func (a *Agent) idleLimit() time.Duration {
	if a.opts.CallTimeout > 0 {
		return a.opts.CallTimeout
	}
	return bundleIdle
}

// hostSum is what the host says of one file: its size and the sha256 of
// its first listed bytes, or why it could not say.
type hostSum struct {
	size int64
	sha  string
	err  error
}

// hostSums are the sums of big files listed without one, asked of the host
// (a hash-only bundle) while the files are copied.
type hostSums struct {
	done chan struct{}
	sums map[string]hostSum
	err  error
}

func (a *Agent) startHostSums(ctx context.Context, files []proto.FileInfo) *hostSums {
	h := &hostSums{done: make(chan struct{})}
	go func() {
		defer close(h.done)
		sess, out, stderr, ok, serr := a.bundleSession(ctx, proto.BundleRequest{Files: files, HashOnly: true})
		if !ok {
			h.err = fmt.Errorf("could not start %s to ask the host for it", proto.BundleCommand)
			if serr != nil {
				h.err = fmt.Errorf("%s: %w", proto.BundleCommand, serr)
			}
			return
		}
		defer sess.Close()
		// The host hashes each file before it sends its entry: the
		// silence allowed grows with the biggest file (at 4 MiB/s, slow
		// for any disk), on top of the idle limit.
		var biggest int64
		for _, f := range files {
			biggest = max(biggest, f.Size)
		}
		limit := a.idleLimit() + time.Duration(biggest/(4<<20))*time.Second
		w := a.client.WatchWith(ctx, proto.BundleCommand+" (sums)", limit, sshx.WatchOptions{Idle: true, Session: sess})
		defer w.Stop()
		h.sums, h.err = readSums(&watchedReader{r: out, w: w}, files)
		if werr := w.Err(); werr != nil {
			h.err = werr
			return
		}
		if werr := finish(sess, out); h.err != nil && werr != nil {
			h.err = fmt.Errorf("%w (agent %s: %v: %s)", h.err, proto.BundleCommand, werr, truncate(lastLines(strings.TrimSpace(stderr.String()), 5), 1000))
		}
	}()
	return h
}

// get waits for the host's answer about one file.
func (h *hostSums) get(ctx context.Context, p string) (hostSum, error) {
	select {
	case <-h.done:
	case <-ctx.Done():
		return hostSum{}, ctx.Err()
	}
	if s, ok := h.sums[p]; ok {
		return s, s.err
	}
	if h.err != nil {
		return hostSum{}, fmt.Errorf("no sha256 from the host: %w", h.err)
	}
	return hostSum{}, fmt.Errorf("no sha256 from the host")
}

// readSums reads a hash-only bundle: one empty entry per file, each named
// as asked and at most once, carrying the size and sha256 of the file.
func readSums(r io.Reader, files []proto.FileInfo) (map[string]hostSum, error) {
	want := make(map[string]bool, len(files))
	for _, f := range files {
		want[f.Path] = true
	}
	lr := &limitedReader{r: r, left: int64(len(files)+1) * bundleEntryOverhead}
	tr := tar.NewReader(lr)
	sums := map[string]hostSum{}
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return sums, nil
		}
		if err != nil {
			if lr.over {
				err = fmt.Errorf("longer than %d sums allow", len(files))
			}
			return sums, fmt.Errorf("read sums: %w", err)
		}
		switch _, dup := sums[hdr.Name]; {
		case !want[hdr.Name]:
			return sums, fmt.Errorf("sum for %q: not a file we asked for", truncate(hdr.Name, 200))
		case dup:
			return sums, fmt.Errorf("sum for %q: sent twice", hdr.Name)
		case hdr.Typeflag != tar.TypeReg || hdr.Size != 0:
			return sums, fmt.Errorf("sum for %q: not an empty regular entry", hdr.Name)
		}
		if why := hdr.PAXRecords[proto.BundleError]; why != "" {
			sums[hdr.Name] = hostSum{err: fmt.Errorf("the host could not hash it: %s", truncate(why, 500))}
			continue
		}
		sha := hdr.PAXRecords[proto.BundleSHA256]
		size, err := strconv.ParseInt(hdr.PAXRecords[proto.BundleSize], 10, 64)
		if b, herr := hex.DecodeString(sha); herr != nil || len(b) != 32 || err != nil || size < 0 {
			sums[hdr.Name] = hostSum{err: fmt.Errorf("the host sent a malformed sum (%q, size %q)", truncate(sha, 80), truncate(hdr.PAXRecords[proto.BundleSize], 40))}
			continue
		}
		sums[hdr.Name] = hostSum{size: size, sha: sha}
	}
}
