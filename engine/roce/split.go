package roce

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/rlab-dev/rlab/engine/rundir"
)

// Why a split by flow beside ScanParallel's in-order pipeline: handing every
// packet back to one goroutine in file order costs about what decoding on
// two cores gains (BENCHMARKS.md, "pcap on every core"). What a summary
// keeps in order is per flow (a RoCE flow's highest PSN, a TCP stream's
// reassembly); the rest are counts, sums and time bins that add up in any
// order. So ScanSplit decodes each batch on one worker, as ScanParallel
// does, and then every worker accounts the packets of the flows it owns,
// batch after batch: a flow's packets reach one worker in file order, and
// the workers' summaries merge at the end (Merge, iwarp.Merge,
// iograph.Merge) into what one Scan would have made.

// splitBatch is one batch of a split scan: decoded by worker seq%n, then
// read by every worker for the packets it owns.
type splitBatch struct {
	batch
	seq   int
	owner []uint8 // the worker that accounts each packet
	refs  atomic.Int32
}

// Source is one capture file of a split scan, opened when the scan reaches it.
type Source struct {
	name string // for errors; "" for a reader
	open func() (frameFunc, *pcapBlocks, func(), error)
}

// ReaderSource is the Source of one open reader (a pcap, pcapng or gzipped pcap).
func ReaderSource(r io.Reader) Source {
	return Source{open: func() (frameFunc, *pcapBlocks, func(), error) {
		next, pb, err := openSplit(r)
		return next, pb, func() {}, err
	}}
}

// FileSource is the Source of the capture file at path; its errors name it
// as ScanFile's do.
func FileSource(path string) Source {
	return Source{name: path, open: func() (frameFunc, *pcapBlocks, func(), error) {
		f, err := rundir.OpenFile(path) // a FIFO named *.pcap must not hang
		if err != nil {
			return nil, nil, nil, fmt.Errorf("read capture: %w", err)
		}
		next, pb, err := openSplit(f)
		if err != nil {
			f.Close()
			return nil, nil, nil, fmt.Errorf("read capture %q: %w", path, err)
		}
		return next, pb, func() { f.Close() }, nil
	}}
}

// ScanSplit reads the sources one after another as one capture (Packet.Ord
// counts across them, Number restarts at each) and calls fn on workers
// goroutines at once: fn(w, p) with every packet p of the flows worker w
// owns, in file order. A RoCEv2 flow (source, destination, destination QP)
// and a TCP connection (both directions) belong to one worker; every other
// frame to worker 0. fn must keep what it needs per worker (p and its
// Payload are valid until fn returns) and must not fail. With an error the
// frames before it have been handed to fn. workers < 1 means 1.
func ScanSplit(sources []Source, workers int, fn func(w int, p *Packet)) (ScanResult, error) {
	workers = max(1, min(workers, 255))
	depth := 2*workers + 2
	free := make(chan *splitBatch, depth)
	for i := 0; i < depth; i++ {
		free <- &splitBatch{batch: batch{frames: make([]rawFrame, 0, batchFrames), pkts: make([]Packet, batchFrames)},
			owner: make([]uint8, batchFrames)}
	}
	in := make([]chan *splitBatch, workers)
	for i := range in {
		in[i] = make(chan *splitBatch, depth)
	}
	var res ScanResult
	var readErr error
	go func() { // the reader
		defer func() {
			for _, c := range in {
				close(c)
			}
		}()
		seq, ord := 0, 0
		for _, src := range sources {
			next, blocks, closeSrc, err := src.open()
			if err != nil {
				readErr = err
				return
			}
			n, done := 0, false
			for !done {
				b := <-free
				b.arena, b.frames, b.first, b.seq = b.arena[:0], b.frames[:0], n+1, seq
				b.done = make(chan struct{})
				var err error
				if blocks != nil {
					err = blocks.fill(&b.batch)
					n += len(b.frames)
				} else {
					var added int
					added, err = b.fillFrom(next)
					n += added
				}
				if len(b.frames) > 0 {
					b.pkts[0].ord = int64(ord + 1) // the batch's first ord, for its decoder
					ord += len(b.frames)
					b.refs.Store(int32(workers))
					seq++
					for _, c := range in {
						c <- b
					}
				} else {
					free <- b
				}
				if err != nil {
					done = true
					switch {
					case err == io.EOF:
					case errors.Is(err, io.ErrUnexpectedEOF):
						res.CutShort = true
					default:
						readErr = fmt.Errorf("frame %d: %w", n+1, err)
					}
				}
			}
			closeSrc()
			res.Frames += n
			if readErr != nil {
				if src.name != "" {
					readErr = fmt.Errorf("read capture %q: %w", src.name, readErr)
				}
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range in[w] {
				if b.seq%workers == w {
					first := b.pkts[0].ord
					for j, f := range b.frames {
						p := &b.pkts[j]
						p.Number, p.Time = b.first+j, f.ts
						Decode(f.link, b.arena[f.off:f.off+f.n:f.off+f.n], f.wire, p)
						p.ord = first + int64(j)
						b.owner[j] = uint8(flowOwner(p, workers))
					}
					close(b.done)
				} else {
					<-b.done
				}
				own := uint8(w)
				for j := range b.frames {
					if b.owner[j] == own {
						fn(w, &b.pkts[j])
					}
				}
				if b.refs.Add(-1) == 0 {
					free <- b
				}
			}
		}()
	}
	wg.Wait()
	return res, readErr
}

// ScanFilesSplit is ScanSplit of the capture files at paths, read in the
// order given as one capture; errors name the file as ScanFile's do.
func ScanFilesSplit(paths []string, workers int, fn func(w int, p *Packet)) (ScanResult, error) {
	sources := make([]Source, len(paths))
	for i, p := range paths {
		sources[i] = FileSource(p)
	}
	return ScanSplit(sources, workers, fn)
}

// flowOwner is the worker that accounts p: the one of its RoCEv2 flow (as
// Summary.Add keys flows) or of its TCP connection (as engine/iwarp keys
// them, both directions alike); 0 for every other frame, which only adds
// to counts.
func flowOwner(p *Packet, n int) int {
	if n == 1 {
		return 0
	}
	var h uint64
	switch {
	case p.Proto == ProtoRoCE && p.Problem != ProblemMalformed && p.HasBTH:
		h = mixAddr(mixAddr(uint64(p.BTH.DestQP)*0x9e3779b97f4a7c15, p.Src), p.Dst)
	case p.Proto == ProtoTCP && p.Problem == ProblemNone:
		a := mixAddr(uint64(p.SrcPort)+1, p.Src)
		b := mixAddr(uint64(p.DstPort)+1, p.Dst)
		h = a ^ b // the same both ways
		h ^= h >> 29
		h *= 0xbf58476d1ce4e5b9
	default:
		return 0
	}
	h ^= h >> 32
	return int(h % uint64(n))
}

func mixAddr(h uint64, a netip.Addr) uint64 {
	if a.Is4() {
		v := a.As4()
		h ^= uint64(binary.LittleEndian.Uint32(v[:]))
	} else {
		v := a.As16()
		h ^= binary.LittleEndian.Uint64(v[:8])*0x100000001b3 ^ binary.LittleEndian.Uint64(v[8:])
	}
	h *= 0x9e3779b97f4a7c15
	return h ^ h>>31
}
