package lab

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"syscall"
	"time"
)

// pipeIdle bounds how long a file named on the command line (a lab file, a
// -var-file) may go without a byte: a pipe such as -var-file <(cmd) is read
// as its command writes, but a FIFO nobody writes (or whose writer stalls)
// would hold `rlab validate` and `rlab run` for good.
var pipeIdle = 30 * time.Second

// errPipeIdle is a named file that went pipeIdle without a byte.
var errPipeIdle = errors.New("nothing was written to it")

// readBounded reads at most MaxFileBytes+1 bytes of path (a pipe such as
// -var-file <(cmd) included), giving up once pipeIdle passes with no
// progress: its open waiting for a writer, or its read for a byte.
func readBounded(path string) ([]byte, error) {
	var progress atomic.Int64 // bytes read, +1 once opened
	var opened atomic.Pointer[os.File]
	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		f, err := os.Open(path)
		if err != nil {
			done <- result{nil, err}
			return
		}
		opened.Store(f)
		progress.Add(1)
		b, err := io.ReadAll(io.LimitReader(countingReader{f, &progress}, MaxFileBytes+1))
		f.Close()
		done <- result{b, err}
	}()
	tick := time.NewTicker(pipeIdle)
	defer tick.Stop()
	last := int64(-1)
	for {
		select {
		case r := <-done:
			return r.b, r.err
		case <-tick.C:
		}
		if n := progress.Load(); n != last {
			last = n
			continue
		}
		// Stalled: end the reader's wait. A read of a pipe ends when the
		// file closes; an open of a FIFO waiting for a writer ends when one
		// comes, so be that writer for a moment (it writes nothing).
		if f := opened.Load(); f != nil {
			f.Close()
		} else {
			unblockFIFOOpen(path)
		}
		return nil, fmt.Errorf("%w for %s (a FIFO is read only while something writes it, as <(cmd) does)", errPipeIdle, pipeIdle)
	}
}

// unblockFIFOOpen opens path for writing, without waiting and without
// writing, when it is a FIFO, so a reader blocked opening it returns (and
// reads end of file).
func unblockFIFOOpen(path string) {
	if st, err := os.Lstat(path); err != nil || st.Mode().Type() != os.ModeNamedPipe {
		return
	}
	f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return
	}
	f.Close()
}

type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}
