package roce

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/rlab-dev/rlab/engine/rundir"
)

// Why a split by flow beside ScanParallel's in-order pipeline: handing every
// packet back to one goroutine in file order costs about what decoding on
// two cores gains (BENCHMARKS.md, "pcap on every core"). What a summary
// keeps in order is per flow (a RoCE flow's highest PSN, a TCP stream's
// reassembly); the rest are counts, sums and time bins that add up in any
// order. So in a split scan the workers take turns reading batches, each
// decodes the batch it read, and then every worker accounts the packets of
// the flows it owns, batch after batch: a flow's packets reach one worker
// in file order, and the workers' summaries merge at the end (Merge,
// iwarp.Merge, iograph.Merge) into what one Scan would have made.
// ScanSplitSummaries goes further: the decoding worker counts every frame
// itself, and only what needs the flow's order crosses to the owner.

// splitBatch is one batch of a split scan: read and decoded by the worker
// that took it from the pool, then read by every worker for what it owns.
// Which worker decodes changes nothing but the speed: the one whose flows
// take less accounting runs ahead and decodes more, so a capture of one
// flow still shares the decoding.
//
// A frame that must cross whole goes as a liteRec (128 bytes), not the
// 592-byte Packet: the owner, often on the other core, reads it back into
// a Packet of its own that stays in its cache. Handing over whole Packets
// moved ~0.9 GB between the cores for 1.5 M frames.
type splitBatch struct {
	batch
	firstOrd int64 // Packet.Ord of the batch's first frame
	n        int   // frames in the batch
	// blocks, when set, says the arena holds n pcap records as the file
	// does (pcapBlocks.fill), parsed by the decoding worker; else frames
	// lists them.
	blocks *pcapBlocks
	recs   []liteRec // the frames handed over whole, by index in the batch
	full   []Packet  // the frames a liteRec cannot hold (liteRec.full)
	segs   []tcpSeg  // the TCP segments handed over (handRec.key keyTCP)
	// hand lists what the owners of the frames' flows must see of the
	// frames (all but those the decoding worker owned and did inline),
	// in file order; keys are the RoCEv2 flows of handRecs that carry
	// only a PSN.
	hand []handRec
	keys []FlowKey
	refs atomic.Int32
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

// handRec is one frame a worker hands to the owner of its flow (owner):
// the index j of the frame in its batch and, for a RoCEv2 request whose
// PSN is all the owner needs (Summary.ordered), the PSN and its flow (key:
// index in splitBatch.keys); key -1 (keyWhole) says the whole frame is in
// recs[j], key -2 (keyTCP) that a TCP segment is in segs[psn].
// One list for all owners, each reading it through: appending to a local
// slice costs less than to one of several in the batch.
type handRec struct {
	j     int32
	key   int32
	psn   uint32
	owner uint8
}

const (
	keyWhole = -1
	keyTCP   = -2
)

// splitCfg is what a split scan does with the frames: all, ScanSplit's
// fn, on the owner of every frame's flow; or (ScanSplitSummaries) the
// counts of every frame into the summary of the worker that decodes it,
// each on that worker too, and the order-dependent rest on the owner.
type splitCfg struct {
	all       func(w int, p *Packet)
	sums      []*Summary
	each, tcp func(w int, p *Packet)
}

// ScanSplit reads the sources one after another as one capture (Packet.Ord
// counts across them, Number restarts at each) and calls fn on workers
// goroutines at once: fn(w, p) with every packet p of the flows worker w
// owns, in file order. A RoCEv2 flow (source, destination, destination QP)
// and a TCP connection (both directions) belong to one worker; every other
// frame to worker 0. fn must keep what it needs per worker (p and its
// Payload are valid until fn returns), must not change p and must not
// fail. With an error the frames before it have been handed to fn.
// workers < 1 means 1.
func ScanSplit(sources []Source, workers int, fn func(w int, p *Packet)) (ScanResult, error) {
	return scanSplit(sources, workers, &splitCfg{all: fn})
}

// ScanSplitSummaries reads the sources as ScanSplit does, on len(sums)
// workers (at most 255), but hands over between them only what must be
// seen in a flow's order. Worker w counts every frame it decodes into
// sums[w], whatever its flow (Summary.count: totals, the flow's and the
// opcode's counts, NAKs), and calls each(w, p) with it (nil: not at all):
// on one worker these frames come in file order, across workers in any.
// The worker that owns a flow does the rest of Summary.Add for it in file
// order (Summary.ordered: the PSNs of its requests, its CM messages), with
// a record of a few bytes per request when another worker decoded it, and
// calls tcp(w, p) (nil: not at all) with every TCP frame without a problem
// of the connections it owns, in file order. Of p, tcp may read only what
// a TCP stream's reassembly needs (a tcpSeg): Number, Ord, Time, WireLen,
// Proto, Problem, Src, Dst, SrcPort, DstPort, L4Payload, TCP and Payload;
// the other fields may be zero. Merge makes the summary one Add of every
// frame would have made from sums.
func ScanSplitSummaries(sources []Source, sums []*Summary, each, tcp func(w int, p *Packet)) (ScanResult, error) {
	return scanSplit(sources, len(sums), &splitCfg{sums: sums, each: each, tcp: tcp})
}

func scanSplit(sources []Source, workers int, cfg *splitCfg) (ScanResult, error) {
	workers = max(1, min(workers, 255))
	depth := 2*workers + 2
	rd := &splitReader{sources: sources, free: make(chan *splitBatch, depth), in: make([]chan *splitBatch, workers)}
	for i := 0; i < depth; i++ {
		rd.free <- &splitBatch{batch: batch{frames: make([]rawFrame, 0, batchFrames)},
			recs: make([]liteRec, batchFrames)}
	}
	for i := range rd.in {
		rd.in[i] = make(chan *splitBatch, depth) // never full: depth batches in all
	}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			splitLoop(w, workers, rd, cfg)
		}()
	}
	wg.Wait()
	if rd.closeSrc != nil {
		rd.closeSrc() // a worker stopped early cannot leave it open
	}
	return rd.res, rd.err
}

// splitReader is the capture of a split scan, read a batch at a time by
// the worker that will decode the batch: the bytes a read brings into a
// core's cache are decoded there, not on the core of a reader goroutine
// (reading on another core cost about a quarter more CPU on 2 cores:
// every line of the file crossed between the cores). mu orders the reads
// and what they publish: every batch goes to every worker's in, in file
// order. Whoever holds mu never waits.
type splitReader struct {
	mu       sync.Mutex
	sources  []Source
	src      int // the source being read, or the next to open
	next     frameFunc
	blocks   *pcapBlocks
	closeSrc func() // of the open source; nil: none open
	n        int    // frames read of the open source
	ord      int
	finished bool        // in are closed
	over     atomic.Bool // finished, for reading without mu
	res      ScanResult
	err      error
	free     chan *splitBatch
	in       []chan *splitBatch
}

// read fills b with the next frames of the capture and hands it to every
// worker (ok), or at the end closes the workers' in and says !ok (b not
// used). Call it with mu held.
func (rd *splitReader) read(b *splitBatch) (ok bool) {
	for !rd.finished {
		if rd.closeSrc == nil {
			if rd.src == len(rd.sources) {
				rd.finish()
				break
			}
			var err error
			rd.next, rd.blocks, rd.closeSrc, err = rd.sources[rd.src].open()
			if err != nil {
				rd.closeSrc, rd.err = nil, err
				rd.finish()
				break
			}
			rd.n = 0
		}
		b.arena, b.frames, b.first = b.arena[:0], b.frames[:0], rd.n+1
		var err error
		b.blocks = rd.blocks
		if rd.blocks != nil {
			b.n, err = rd.blocks.fill(&b.batch)
		} else {
			b.n, err = b.fillFrom(rd.next)
		}
		rd.n += b.n
		if err != nil {
			switch {
			case err == io.EOF:
			case errors.Is(err, io.ErrUnexpectedEOF):
				rd.res.CutShort = true
			default:
				rd.err = fmt.Errorf("frame %d: %w", rd.n+1, err)
				if name := rd.sources[rd.src].name; name != "" {
					rd.err = fmt.Errorf("read capture %q: %w", name, rd.err)
				}
			}
			rd.closeSrc()
			rd.closeSrc = nil
			rd.res.Frames += rd.n
			rd.src++
			if rd.err != nil {
				rd.src = len(rd.sources) // the frames before it are handed out, no more
			}
		}
		if b.n > 0 {
			b.firstOrd = int64(rd.ord + 1)
			rd.ord += b.n
			b.done = make(chan struct{})
			b.refs.Store(int32(len(rd.in)))
			for _, c := range rd.in {
				c <- b
			}
			return true
		}
	}
	return false
}

// finish closes the workers' in: no batch comes after.
func (rd *splitReader) finish() {
	rd.finished = true
	rd.over.Store(true)
	for _, c := range rd.in {
		close(c)
	}
}

// splitLoop is worker w of a split scan: the batches of its in, in file
// order, each accounted (accountBatch) once decoded. When the batch at
// the front of its queue is not decoded yet (another worker reads and
// decodes it) or there is none, w reads the next batch itself and decodes
// it: as it is decoded, what w owns of it is done at once when w has
// accounted every earlier batch (inline), else written down for when w
// reaches it. So neither core waits while there is a batch to read.
// (Waiting is dear: the idle core's scheduler spins and sleeps in the
// kernel to steal the woken goroutine.)
func splitLoop(w, workers int, rd *splitReader, cfg *splitCfg) {
	var dec, own, seg Packet // this worker's, in its cache
	var queue []*splitBatch
	in := rd.in[w]
	open := true
	take := func(nb *splitBatch, ok bool) {
		if ok {
			queue = append(queue, nb)
		} else {
			open = false
		}
	}
	drain := func() {
		for open {
			select {
			case nb, ok := <-in:
				take(nb, ok)
				continue
			default:
			}
			return
		}
	}
	for {
		drain()
		if len(queue) > 0 && isClosed(queue[0].done) {
			b := queue[0]
			accountBatch(w, b, &own, &seg, cfg)
			queue[0] = nil
			queue = queue[1:]
			if b.refs.Add(-1) == 0 {
				rd.free <- b
			}
			continue
		}
		if !open && len(queue) == 0 {
			return
		}
		// Nothing to account yet: read and decode the next batch, given
		// a free one; else wait for one of these.
		var fb *splitBatch
		var free <-chan *splitBatch
		if !rd.over.Load() {
			free = rd.free
		}
		select {
		case fb = <-free:
		default:
		}
		if fb == nil {
			var front <-chan struct{}
			if len(queue) > 0 {
				front = queue[0].done
			}
			var inc <-chan *splitBatch
			if open {
				inc = in
			}
			select {
			case <-front:
				continue
			case nb, ok := <-inc:
				take(nb, ok)
				continue
			case fb = <-free:
			}
		}
		rd.mu.Lock()
		drain() // every batch read before this one
		inline := len(queue) == 0
		ok := rd.read(fb)
		rd.mu.Unlock()
		if !ok {
			rd.free <- fb
			continue
		}
		decodeBatch(w, workers, fb, inline, &dec, cfg)
	}
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// decodeBatch decodes b (into dec): with inline, what w owns of each
// frame done as it is decoded and what other workers own written down
// for them (b.hand); without, all of it written down.
func decodeBatch(w, workers int, b *splitBatch, inline bool, dec *Packet, cfg *splitCfg) {
	b.full, b.keys, b.segs = b.full[:0], b.keys[:0], b.segs[:0]
	hand := b.hand[:0]
	var memo ownerMemo
	var keyFlow *Flow // the flow of b.keys' last
	var sum *Summary
	if cfg.sums != nil {
		sum = cfg.sums[w]
	}
	for j, off := 0, 0; j < b.n; j++ {
		if pb := b.blocks; pb != nil {
			data, ts, wire, size := pb.record(b.arena[off:])
			dec.Number, dec.Time = b.first+j, ts
			Decode(pb.link, data, wire, dec)
			off += size
		} else {
			f := &b.frames[j]
			dec.Number, dec.Time = b.first+j, f.ts
			Decode(f.link, b.arena[f.off:f.off+f.n:f.off+f.n], f.wire, dec)
		}
		dec.ord = b.firstOrd + int64(j)
		if cfg.all != nil {
			if o := memo.owner(dec, workers); inline && o == w {
				cfg.all(w, dec)
			} else {
				hand = b.handFull(hand, o, j, dec)
			}
			continue
		}
		f := sum.count(dec)
		if cfg.each != nil {
			cfg.each(w, dec)
		}
		switch {
		case f != nil: // RoCEv2 with a BTH: its PSN and CM message in flow order
			// The flow's owner, kept in w's Flow: the frames of a
			// conversation's two directions come in turn.
			if f.owner == 0 {
				f.owner = flowOwner(dec, workers) + 1
			}
			o := f.owner - 1
			mine := inline && o == w
			cm := dec.CM.Attr != 0
			switch {
			case !cm && !psnOrdered(dec):
			case mine:
				sum.ordered(dec, f)
			case cm:
				hand = b.handFull(hand, o, j, dec)
			default:
				if f != keyFlow {
					b.keys = append(b.keys, FlowKey{f.Src, f.Dst, f.DestQP})
					keyFlow = f
				}
				hand = append(hand, handRec{j: int32(j), key: int32(len(b.keys) - 1), psn: dec.BTH.PSN, owner: uint8(o)})
			}
		case cfg.tcp != nil && dec.Proto == ProtoTCP && dec.Problem == ProblemNone:
			if o := memo.owner(dec, workers); inline && o == w {
				cfg.tcp(w, dec)
			} else {
				hand = b.handTCP(hand, o, j, dec)
			}
		}
	}
	b.hand = hand
	close(b.done)
}

// handFull hands frame j, decoded in p, whole to worker o: hand with it.
func (b *splitBatch) handFull(hand []handRec, o, j int, p *Packet) []handRec {
	if !b.recs[j].set(p, b.arena) {
		b.full = append(b.full, *p)
		b.recs[j].full = int32(len(b.full))
	}
	return append(hand, handRec{j: int32(j), key: keyWhole, owner: uint8(o)})
}

// handTCP hands TCP segment j, decoded in p, to worker o as a tcpSeg (or
// whole when it does not fit one): hand with it.
func (b *splitBatch) handTCP(hand []handRec, o, j int, p *Packet) []handRec {
	b.segs = append(b.segs, tcpSeg{})
	if !b.segs[len(b.segs)-1].set(p, b.arena) {
		b.segs = b.segs[:len(b.segs)-1]
		return b.handFull(hand, o, j, p)
	}
	return append(hand, handRec{j: int32(j), key: keyTCP, psn: uint32(len(b.segs) - 1), owner: uint8(o)})
}

// accountBatch does what w owns of the frames of b that another worker
// decoded (or w ahead of its turn): whole frames read back into own, TCP
// segments into seg.
func accountBatch(w int, b *splitBatch, own, seg *Packet, cfg *splitCfg) {
	var sum *Summary
	if cfg.sums != nil {
		sum = cfg.sums[w]
	}
	me := uint8(w)
	// The flow of the last PSN record: a batch's records come in runs of
	// one flow (b.keys has one entry a run), and a pointer to a Flow
	// stays valid (Summary.flows holds pointers).
	lastKey, lastFlow := int32(-1), (*Flow)(nil)
	for i := range b.hand {
		h := &b.hand[i]
		if h.owner != me {
			continue
		}
		j := int(h.j)
		switch h.key {
		case keyWhole:
		case keyTCP:
			b.segs[h.psn].packet(seg, b.first+j, b.firstOrd+int64(j), b.arena)
			cfg.tcp(w, seg)
			continue
		default:
			if h.key != lastKey {
				lastKey, lastFlow = h.key, sum.flow(b.keys[h.key], time.Time{})
			}
			lastFlow.trackPSN(h.psn)
			continue
		}
		p := own
		if r := &b.recs[j]; r.full != 0 {
			p = &b.full[r.full-1]
		} else {
			r.packet(own, b.first+j, b.firstOrd+int64(j), b.arena)
		}
		switch {
		case cfg.all != nil:
			cfg.all(w, p)
		case p.Proto == ProtoTCP:
			cfg.tcp(w, p)
		default:
			sum.ordered(p, sum.flow(FlowKey{p.Src, p.Dst, p.BTH.DestQP}, p.Time))
		}
	}
}

// liteRec is a decoded frame as the worker that decoded it hands it to
// the one that accounts it (splitWork): every field of the Packet Decode
// made, in 128 bytes, for the frames that need no more — IPv4 or no
// address, no extended header but an AETH, not on QP1 (no CM), lengths
// under 2 GiB. Any other frame goes over whole (full: its index+1 in
// splitBatch.full).
type liteRec struct {
	time                                   time.Time
	capLen, wireLen, l4Payload, payloadLen int32
	payOff, payLen                         int32 // Payload in the batch's arena; payLen -1: nil
	src, dst                               [4]byte
	tcp                                    TCPHeader
	bth                                    BTH
	aeth                                   AETH
	icrc                                   uint32
	vlan, srcPort, dstPort                 uint16
	headers                                Header
	proto                                  Proto
	problem                                Problem
	flags                                  uint8 // lite*
	full                                   int32
}

const (
	liteTruncated = 1 << iota
	liteHasVLAN
	liteHasBTH
	liteHasICRC
	liteICRCChecked
	liteICRCValid
	liteSrc4 // Src is an IPv4 address (else none)
	liteDst4
)

// set makes r hold p, whose Payload (if any) lies in arena; false when p
// is not a frame a liteRec holds.
func (r *liteRec) set(p *Packet, arena []byte) bool {
	if p.Headers&^(HdrAETH|HdrCNPPad) != 0 || p.HasBTH && p.BTH.DestQP == 1 ||
		p.Src.IsValid() && !p.Src.Is4() || p.Dst.IsValid() && !p.Dst.Is4() ||
		!fits32(p.CapLen) || !fits32(p.WireLen) || !fits32(p.L4Payload) || !fits32(p.PayloadLen) {
		return false
	}
	var f uint8
	if p.Truncated {
		f |= liteTruncated
	}
	if p.HasVLAN {
		f |= liteHasVLAN
	}
	if p.HasBTH {
		f |= liteHasBTH
	}
	if p.HasICRC {
		f |= liteHasICRC
	}
	if p.ICRCChecked {
		f |= liteICRCChecked
	}
	if p.ICRCValid {
		f |= liteICRCValid
	}
	var src, dst [4]byte
	if p.Src.IsValid() {
		f |= liteSrc4
		src = p.Src.As4()
	}
	if p.Dst.IsValid() {
		f |= liteDst4
		dst = p.Dst.As4()
	}
	payOff, payLen, ok := arenaSpan(p.Payload, arena)
	if !ok {
		return false
	}
	// Field by field: a composite literal would be built aside and copied.
	r.time, r.capLen, r.wireLen = p.Time, int32(p.CapLen), int32(p.WireLen)
	r.l4Payload, r.payloadLen, r.payOff, r.payLen = int32(p.L4Payload), int32(p.PayloadLen), payOff, payLen
	r.src, r.dst, r.tcp, r.bth, r.aeth, r.icrc = src, dst, p.TCP, p.BTH, p.AETH, p.ICRC
	r.vlan, r.srcPort, r.dstPort, r.headers = p.VLAN, p.SrcPort, p.DstPort, p.Headers
	r.proto, r.problem, r.flags, r.full = p.Proto, p.Problem, f, 0
	return true
}

// packet makes q the Packet r holds, frame number and ord given. Only
// packet writes q (fn must not change the Packet it is handed), so the
// fields a liteRec never holds are still zero: it sets the others one by
// one instead of clearing the whole Packet (a composite literal would
// build all 592 bytes aside and copy them).
func (r *liteRec) packet(q *Packet, number int, ord int64, arena []byte) {
	f := r.flags
	q.Number, q.Time, q.CapLen, q.WireLen = number, r.time, int(r.capLen), int(r.wireLen)
	q.Proto, q.Problem, q.Truncated = r.proto, r.problem, f&liteTruncated != 0
	q.VLAN, q.HasVLAN, q.SrcPort, q.DstPort = r.vlan, f&liteHasVLAN != 0, r.srcPort, r.dstPort
	q.L4Payload, q.TCP, q.BTH, q.HasBTH = int(r.l4Payload), r.tcp, r.bth, f&liteHasBTH != 0
	q.Headers, q.AETH, q.PayloadLen, q.ICRC = r.headers, r.aeth, int(r.payloadLen), r.icrc
	q.HasICRC, q.ICRCChecked, q.ICRCValid, q.ord = f&liteHasICRC != 0, f&liteICRCChecked != 0, f&liteICRCValid != 0, ord
	q.Src, q.Dst, q.Payload = netip.Addr{}, netip.Addr{}, nil
	if f&liteSrc4 != 0 {
		q.Src = netip.AddrFrom4(r.src)
	}
	if f&liteDst4 != 0 {
		q.Dst = netip.AddrFrom4(r.dst)
	}
	if r.payLen >= 0 {
		q.Payload = arena[r.payOff : r.payOff+r.payLen : r.payOff+r.payLen]
	}
}

func fits32(n int) bool { return n >= 0 && n <= math.MaxInt32 }

// arenaSpan is where pay lies in arena (len -1: pay is nil); false when
// it does not lie there whole, as a full slice expression made it.
func arenaSpan(pay, arena []byte) (off, n int32, ok bool) {
	if pay == nil {
		return 0, -1, true
	}
	o := int(uintptr(unsafe.Pointer(unsafe.SliceData(pay))) - uintptr(unsafe.Pointer(unsafe.SliceData(arena))))
	if o < 0 || o+len(pay) > len(arena) || cap(pay) != len(pay) {
		return 0, 0, false
	}
	return int32(o), int32(len(pay)), true
}

// tcpSeg is a TCP segment as the worker that decoded it hands it to the
// owner of its connection: what iwarp.Analyzer reads of it (the fields
// ScanSplitSummaries promises tcp), in 64 bytes against a liteRec's 128
// (a third of the benchmark capture's frames are TCP, half of them
// decoded on the other worker). The payload stays in the batch's arena:
// the owner reads its bytes only while the stream may be iWARP (a stream
// the analysis took for plain TCP reads none), so only then do they
// cross between the cores. IPv4 only; any other segment goes as a
// liteRec or whole.
type tcpSeg struct {
	time               time.Time
	seq, ack           uint32
	wireLen, l4Payload int32
	payOff, payLen     int32 // Payload in the batch's arena; payLen -1: nil
	src, dst           [4]byte
	srcPort, dstPort   uint16
	window             uint16
	flags              uint8
}

// set makes s hold TCP segment p, whose Payload (if any) lies in arena;
// false when p is not one a tcpSeg holds.
func (s *tcpSeg) set(p *Packet, arena []byte) bool {
	if !p.Src.Is4() || !p.Dst.Is4() || !fits32(p.WireLen) || !fits32(p.L4Payload) {
		return false
	}
	payOff, payLen, ok := arenaSpan(p.Payload, arena)
	if !ok {
		return false
	}
	s.time, s.seq, s.ack, s.wireLen, s.l4Payload = p.Time, p.TCP.Seq, p.TCP.Ack, int32(p.WireLen), int32(p.L4Payload)
	s.payOff, s.payLen, s.src, s.dst = payOff, payLen, p.Src.As4(), p.Dst.As4()
	s.srcPort, s.dstPort, s.window, s.flags = p.SrcPort, p.DstPort, p.TCP.Window, p.TCP.Flags
	return true
}

// packet makes q the segment s holds, frame number and ord given: the
// fields tcp may read. Only packet writes q, so the others stay zero.
func (s *tcpSeg) packet(q *Packet, number int, ord int64, arena []byte) {
	q.Number, q.Time, q.WireLen, q.Proto, q.Problem = number, s.time, int(s.wireLen), ProtoTCP, ProblemNone
	q.Src, q.Dst, q.SrcPort, q.DstPort = netip.AddrFrom4(s.src), netip.AddrFrom4(s.dst), s.srcPort, s.dstPort
	q.L4Payload, q.ord = int(s.l4Payload), ord
	q.TCP = TCPHeader{Seq: s.seq, Ack: s.ack, Flags: s.flags, Window: s.window}
	q.Payload = nil
	if s.payLen >= 0 {
		q.Payload = arena[s.payOff : s.payOff+s.payLen : s.payOff+s.payLen]
	}
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

// ownerMemo is flowOwner of the last flow seen: frames come in runs of
// one flow, and comparing the key costs less than hashing it.
type ownerMemo struct {
	proto      Proto // of the flow held; 0: none
	qp         uint32
	sp, dp     uint16
	src, dst   netip.Addr
	ownerOfKey int
}

// owner is flowOwner(p, n), from m when p is of the flow it holds.
func (m *ownerMemo) owner(p *Packet, n int) int {
	switch {
	case n == 1:
		return 0
	case p.Proto == ProtoRoCE && p.Problem != ProblemMalformed && p.HasBTH:
		if m.proto == ProtoRoCE && m.qp == p.BTH.DestQP && m.src == p.Src && m.dst == p.Dst {
			return m.ownerOfKey
		}
		m.proto, m.qp, m.src, m.dst = ProtoRoCE, p.BTH.DestQP, p.Src, p.Dst
	case p.Proto == ProtoTCP && p.Problem == ProblemNone:
		if m.proto == ProtoTCP && m.sp == p.SrcPort && m.dp == p.DstPort && m.src == p.Src && m.dst == p.Dst {
			return m.ownerOfKey
		}
		m.proto, m.sp, m.dp, m.src, m.dst = ProtoTCP, p.SrcPort, p.DstPort, p.Src, p.Dst
	default:
		return 0
	}
	m.ownerOfKey = flowOwner(p, n)
	return m.ownerOfKey
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
