package remote

import (
	"fmt"
	"io"
	"time"

	"github.com/pkg/sftp"
	"github.com/rlab-dev/rlab/engine/sshx"
)

// Every SSH wait on a host has a limit and ends with its context: the
// watch (sshx.Watch) closes the host's connection, which is what ends a
// read with OpenSSH (closing a session is not: sshd keeps the channel
// while the remote process lives). StartOptions.CallTimeout
// ($RLAB_AGENT_TIMEOUT) replaces each limit.
const (
	// sshIdle bounds the silence of the install's session (probe,
	// upload, verify), of the SFTP install and of a command's output.
	sshIdle = 60 * time.Second
	// installWhole bounds the agent's install in all, in limits on one
	// wait (10 minutes by default: a 4 MB gzip'd agent at 7 KB/s).
	installWhole = 10
	// outputMax bounds the stdout of a command run for its output (the
	// SFTP install's hash check prints one line).
	outputMax = 64 << 10
	// installOutMax bounds what the install's session prints in all:
	// junk a login script prints and the probe (maxJunkBytes each), the
	// status line.
	installOutMax = 4 * maxJunkBytes
	// sftpCloseWait bounds the wait for an SFTP client's reader when it
	// is closed; past it the connection is closed under it.
	sftpCloseWait = 5 * time.Second
)

// limitOr is $RLAB_AGENT_TIMEOUT (or ct, when set), else def.
func limitOr(ct, def time.Duration) time.Duration {
	if ct > 0 {
		return ct
	}
	if d, err := callTimeout(StartOptions{}); err == nil && d > 0 {
		return d
	}
	return def
}

// watchedReader renews w on every byte read and cuts the host off past
// max bytes (0: no cap).
type watchedReader struct {
	r   io.Reader
	w   *sshx.Watch
	max int64
	n   int64
}

func (r *watchedReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if n > 0 {
		r.n += int64(n)
		if r.max > 0 && r.n > r.max {
			r.w.Cut(fmt.Sprintf("printed more than %s", human(r.max)))
			return n, fmt.Errorf("more than %d bytes", r.max)
		}
		r.w.Reset()
	}
	return n, err
}

// boundedBuffer keeps up to max bytes; one more byte cuts the host off
// (w.Cut) and fails the write.
type boundedBuffer struct {
	buf []byte
	max int
	w   *sshx.Watch
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	if len(b.buf)+len(p) > b.max {
		b.w.Cut(fmt.Sprintf("printed more than %s of output", human(int64(b.max))))
		return 0, fmt.Errorf("output over %d bytes", b.max)
	}
	b.buf = append(b.buf, p...)
	b.w.Reset()
	return len(p), nil
}

// closer is a func as an io.Closer (sshx.WatchOptions.Session).
type closer func()

func (f closer) Close() error { f(); return nil }

// closeSFTP closes an SFTP client, which waits for its reader: one the
// host never answers is ended by closing the connection (abort: c.Abort).
func closeSFTP(sc *sftp.Client, abort func()) {
	done := make(chan struct{})
	go func() {
		sc.Close()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(sftpCloseWait):
		abort()
		select {
		case <-done:
		case <-time.After(sftpCloseWait):
		}
	}
}
