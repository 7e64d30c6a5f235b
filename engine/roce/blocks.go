package roce

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"
)

// pcapBlocks reads the records of a classic, uncompressed pcap file in
// large reads straight into a batch's arena: no copy through bufio and
// gopacket's buffer, and no call per frame. It yields the frames, times,
// lengths and errors frameSource's gopacket reader yields for the same
// bytes (TestPcapBlocksSameAsScan, FuzzScanSplit).
type pcapBlocks struct {
	r     io.Reader
	order binary.ByteOrder
	nsf   uint32 // nanoseconds per unit of the time's fraction
	link  int
	carry []byte // the bytes of the next batch's first records
	eof   bool
	// mem, when set, is the whole capture after its file header, in
	// memory (a mapped file): fill cuts it into batches that are views of
	// it, with no copy, and the worker that decodes a batch parses its
	// records (splitWork). pos is where the next batch starts; release
	// unmaps it once the scan is over.
	mem     []byte
	pos     int
	release func()
	name    string // the mapped file's, for the error when it shrinks
	touched int    // how far fillMem has touched mem (touch)
	sum     byte   // what touch read, kept so that the reads stay
}

// readChunk is how much one read asks for.
const readChunk = 64 << 10

// snapMax is the snaplen frameSource gives gopacket: larger records are an error.
const snapMax = 1 << 18

// openSplit returns r's frames: as blocks when r is a classic pcap,
// else through frameSource (pcapng, gzip, and whatever it rejects).
func openSplit(r io.Reader) (frameFunc, *pcapBlocks, error) {
	hdr := make([]byte, 24)
	n, _ := io.ReadFull(r, hdr)
	hdr = hdr[:n]
	if pb := classicPcap(hdr); pb != nil {
		pb.r = r
		return nil, pb, nil
	}
	next, err := frameSource(io.MultiReader(bytes.NewReader(hdr), r))
	return next, nil, err
}

// classicPcap is the block reader of a classic pcap file whose first
// bytes are hdr, without its reader; nil for another format.
func classicPcap(hdr []byte) *pcapBlocks {
	if len(hdr) < 24 {
		return nil
	}
	var pb pcapBlocks
	switch binary.LittleEndian.Uint32(hdr) {
	case 0xa1b2c3d4:
		pb.order, pb.nsf = binary.LittleEndian, 1000
	case 0xd4c3b2a1:
		pb.order, pb.nsf = binary.BigEndian, 1000
	case 0xa1b23c4d:
		pb.order, pb.nsf = binary.LittleEndian, 1
	case 0x4d3cb2a1:
		pb.order, pb.nsf = binary.BigEndian, 1
	}
	if pb.order == nil || pb.order.Uint16(hdr[4:]) != 2 || pb.order.Uint16(hdr[6:]) != 4 {
		return nil
	}
	pb.link = int(pb.order.Uint32(hdr[20:]) & 0xffff)
	return &pb
}

// memSource is the Source of a capture in memory: a classic pcap is read
// in place, as a mapped file is (FileSource); any other format as
// ReaderSource reads it.
func memSource(data []byte) Source {
	return Source{open: func() (frameFunc, *pcapBlocks, func(), error) {
		if pb := classicPcap(data); pb != nil {
			pb.mem = data[24:]
			return nil, pb, func() {}, nil
		}
		next, err := frameSource(bytes.NewReader(data))
		return next, nil, func() {}, err
	}}
}

// fillMem is fill of a capture in memory: b's records are a view of mem,
// parsed by the worker that decodes them. It checks every record as fill does, so it stops at
// the same record with the same error.
func (pb *pcapBlocks) fillMem(b *batch) (int, error) {
	start, off, n := pb.pos, pb.pos, 0
	var err error
	for n < batchFrames && (n == 0 || off-start < batchBytes) {
		for off+16 > pb.touched && pb.touched < len(pb.mem) {
			pb.touch()
		}
		rest := pb.mem[off:]
		if len(rest) < 16 {
			err = io.ErrUnexpectedEOF
			if len(rest) == 0 {
				err = io.EOF
			}
			break
		}
		capLen, wire := pb.order.Uint32(rest[8:]), pb.order.Uint32(rest[12:])
		if capLen > snapMax {
			err = fmt.Errorf("capture length exceeds snap length: %d > %d", capLen, snapMax)
			break
		}
		if capLen > wire {
			err = fmt.Errorf("capture length exceeds original packet length: %d > %d", capLen, wire)
			break
		}
		if len(rest) < 16+int(capLen) {
			err = io.ErrUnexpectedEOF
			if len(rest) == 16 { // as fill: cut right after a header reads as the end
				err = io.EOF
			}
			break
		}
		off += 16 + int(capLen)
		n++
	}
	pb.pos = off
	b.view, b.lazy = pb.mem[start:off], pb
	return n, err
}

// touch reads one byte of every cache line of mem's next touchWindow
// bytes. Walking from record header to record header waits on memory at
// every step (the next offset is in the header); the independent reads of
// touch bring the window in at the memory's speed first, and the walk then
// finds it in the cache: a third of the CPU of the walk alone, and less
// than read(2) copying the same bytes.
func (pb *pcapBlocks) touch() {
	end := min(pb.touched+touchWindow, len(pb.mem))
	s := pb.sum
	for i := pb.touched; i < end; i += 64 {
		s += pb.mem[i]
	}
	pb.sum, pb.touched = s, end
}

const touchWindow = 64 << 10

// time is the time of the record whose header is h.
func (pb *pcapBlocks) time(h []byte) time.Time {
	return time.Unix(int64(pb.order.Uint32(h[0:])), int64(pb.order.Uint32(h[4:])*pb.nsf)).UTC()
}

// fill puts the next whole records into b (at most batchFrames, and
// reading on until batchBytes), after the frames numbered before it. err
// is what frameSource's reader returns at the record after the last one
// put in: io.EOF at a clean end, io.ErrUnexpectedEOF inside a record, or a
// bad record's error; nil when there are more.
func (pb *pcapBlocks) fill(b *batch) (int, error) {
	if pb.mem != nil {
		return pb.fillMem(b)
	}
	b.arena = append(b.arena[:0], pb.carry...)
	pb.carry = pb.carry[:0]
	off := 0
	for {
		for len(b.frames) < batchFrames {
			rest := b.arena[off:]
			if len(rest) < 16 {
				break
			}
			capLen, wire := pb.order.Uint32(rest[8:]), pb.order.Uint32(rest[12:])
			if capLen > snapMax {
				return len(b.frames), fmt.Errorf("capture length exceeds snap length: %d > %d", capLen, snapMax)
			}
			if capLen > wire {
				return len(b.frames), fmt.Errorf("capture length exceeds original packet length: %d > %d", capLen, wire)
			}
			if len(rest) < 16+int(capLen) {
				break
			}
			b.frames = append(b.frames, rawFrame{off: off + 16, n: int(capLen), wire: int(wire), link: pb.link, ts: pb.time(rest)})
			off += 16 + int(capLen)
		}
		rest := b.arena[off:]
		if len(b.frames) == batchFrames || len(b.frames) > 0 && len(b.arena) >= batchBytes {
			pb.carry = append(pb.carry, rest...)
			return len(b.frames), nil
		}
		if pb.eof {
			// As gopacket's reader: a record cut inside its header or its
			// data is an unexpected end, but one cut right after its
			// header reads as a clean end (io.ReadFull of nothing).
			switch {
			case len(rest) == 0, len(rest) == 16:
				return len(b.frames), io.EOF
			default:
				return len(b.frames), io.ErrUnexpectedEOF
			}
		}
		b.arena = slices.Grow(b.arena, readChunk)
		n, err := pb.r.Read(b.arena[len(b.arena) : len(b.arena)+readChunk])
		b.arena = b.arena[:len(b.arena)+n]
		switch {
		case errors.Is(err, io.EOF):
			pb.eof = true
		case err != nil:
			return len(b.frames), err
		}
	}
}
