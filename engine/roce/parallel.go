package roce

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// ScanParallel hands every packet back in file order, for callers that
// need that order across flows (a ladder draws the first N packets of the
// file). Decoding (headers, the CM, every ICRC recomputed) is the part that
// parallelises; the reading and the accounting stay in file order, so the
// result is the same as Scan's, packet for packet, but the hand-off costs
// about what the second core gains. A summary, whose order matters only
// within a flow, reads faster with ScanSplit (split.go).

// batchFrames is how many frames one batch carries between the stages,
// batchBytes how many captured bytes at most (and one frame more): frames
// of up to 256 KiB must not make the batches in flight hold gigabytes.
const (
	batchFrames = 512
	batchBytes  = 2 << 20
)

type rawFrame struct {
	off, n     int
	wire, link int
	ts         time.Time
}

type batch struct {
	arena  []byte
	frames []rawFrame
	pkts   []Packet
	first  int // number of the first frame
	done   chan struct{}
}

// fillFrom appends frames read with next until b holds batchFrames frames
// or batchBytes bytes, and says how many it added and next's error (io.EOF
// at the end of the capture).
func (b *batch) fillFrom(next frameFunc) (int, error) {
	added := 0
	for len(b.frames) < batchFrames && len(b.arena) < batchBytes {
		data, ts, wire, link, err := next()
		if err != nil {
			return added, err
		}
		b.frames = append(b.frames, rawFrame{off: len(b.arena), n: len(data), wire: wire, link: link, ts: ts})
		b.arena = append(b.arena, data...)
		added++
	}
	return added, nil
}

// ScanParallel is Scan with the frames decoded by workers goroutines: one
// goroutine reads the file into batches of frames, the workers decode
// them, and fn is called on the calling goroutine with every packet in
// file order, as Scan calls it (the Packet and its Payload are valid until
// fn returns). workers < 1 means Scan.
func ScanParallel(r io.Reader, workers int, fn func(*Packet) error) (ScanResult, error) {
	if workers < 1 {
		return Scan(r, fn)
	}
	next, err := frameSource(r)
	if err != nil {
		return ScanResult{}, err
	}
	// Batches are recycled: at most depth are in flight, so memory stays
	// bounded whatever the file's size.
	depth := 2*workers + 2
	free := make(chan *batch, depth)
	for i := 0; i < depth; i++ {
		free <- &batch{frames: make([]rawFrame, 0, batchFrames), pkts: make([]Packet, batchFrames), done: make(chan struct{})}
	}
	work := make(chan *batch, depth)
	ordered := make(chan *batch, depth)
	stop := make(chan struct{})
	var res ScanResult
	var readErr error
	go func() { // the reader
		defer close(work)
		defer close(ordered)
		n := 0
		for {
			var b *batch
			select {
			case b = <-free:
			case <-stop:
				return
			}
			b.arena, b.frames, b.first = b.arena[:0], b.frames[:0], n+1
			b.done = make(chan struct{})
			added, err := b.fillFrom(next)
			n += added
			if len(b.frames) > 0 {
				work <- b
				ordered <- b
			}
			if err != nil {
				switch {
				case err == io.EOF:
				case errors.Is(err, io.ErrUnexpectedEOF):
					res.CutShort = true
				default:
					readErr = fmt.Errorf("frame %d: %w", n+1, err)
				}
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range work {
				for j, f := range b.frames {
					p := &b.pkts[j]
					p.Number, p.Time = b.first+j, f.ts
					Decode(f.link, b.arena[f.off:f.off+f.n:f.off+f.n], f.wire, p)
					p.ord = int64(p.Number)
				}
				close(b.done)
			}
		}()
	}
	var fnErr error
	for b := range ordered {
		<-b.done
		if fnErr == nil {
			for j := range b.frames {
				res.Frames++
				if fnErr = fn(&b.pkts[j]); fnErr != nil {
					close(stop)
					break
				}
			}
		}
		free <- b
	}
	wg.Wait()
	if fnErr != nil {
		return res, fnErr
	}
	return res, readErr
}
