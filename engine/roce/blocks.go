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
	big   bool   // order is big-endian (u32 reads without the interface call)
	nsf   uint32 // nanoseconds per unit of the time's fraction
	link  int
	carry []byte // the bytes of the next batch's first records
	eof   bool
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
	if n == 24 {
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
		if pb.order != nil && pb.order.Uint16(hdr[4:]) == 2 && pb.order.Uint16(hdr[6:]) == 4 {
			pb.r, pb.link, pb.big = r, int(pb.order.Uint32(hdr[20:])&0xffff), pb.order == binary.BigEndian
			return nil, &pb, nil
		}
	}
	next, err := frameSource(io.MultiReader(bytes.NewReader(hdr), r))
	return next, nil, err
}

// fill puts the next whole records into b's arena from its start, as
// the file holds them (header and data): at most batchFrames, and reading
// on until the arena holds readChunk bytes, so that a batch ends where a
// read did and only the part of a record after it is carried to the next
// batch. It returns how many, and what frameSource's reader returns at
// the record after the last one put in: io.EOF at a clean end,
// io.ErrUnexpectedEOF inside a record, or a bad record's error; nil when
// there are more. The worker that decodes the batch parses the records
// (record); this goroutine only checks them, as gopacket's reader does.
func (pb *pcapBlocks) fill(b *batch) (int, error) {
	b.arena = append(b.arena[:0], pb.carry...)
	pb.carry = pb.carry[:0]
	off, n := 0, 0
	for {
		for n < batchFrames {
			rest := b.arena[off:]
			if len(rest) < 16 {
				break
			}
			capLen, wire := pb.u32(rest[8:]), pb.u32(rest[12:])
			if capLen > snapMax {
				return n, fmt.Errorf("capture length exceeds snap length: %d > %d", capLen, snapMax)
			}
			if capLen > wire {
				return n, fmt.Errorf("capture length exceeds original packet length: %d > %d", capLen, wire)
			}
			if len(rest) < 16+int(capLen) {
				break
			}
			off += 16 + int(capLen)
			n++
		}
		rest := b.arena[off:]
		if n == batchFrames || n > 0 && len(b.arena) >= readChunk {
			pb.carry = append(pb.carry, rest...)
			b.arena = b.arena[:off]
			return n, nil
		}
		if pb.eof {
			// As gopacket's reader: a record cut inside its header or its
			// data is an unexpected end, but one cut right after its
			// header reads as a clean end (io.ReadFull of nothing).
			switch {
			case len(rest) == 0, len(rest) == 16:
				return n, io.EOF
			default:
				return n, io.ErrUnexpectedEOF
			}
		}
		b.arena = slices.Grow(b.arena, readChunk)
		n, err := pb.r.Read(b.arena[len(b.arena) : len(b.arena)+readChunk])
		b.arena = b.arena[:len(b.arena)+n]
		switch {
		case errors.Is(err, io.EOF):
			pb.eof = true
		case err != nil:
			return n, err
		}
	}
}

// record is the frame of the record at the start of h (checked by fill):
// its captured bytes, time and length on the wire, and the record's length.
func (pb *pcapBlocks) record(h []byte) (data []byte, ts time.Time, wire, size int) {
	capLen := int(pb.u32(h[8:]))
	ts = time.Unix(int64(pb.u32(h[0:])), int64(pb.u32(h[4:])*pb.nsf)).UTC()
	return h[16 : 16+capLen : 16+capLen], ts, int(pb.u32(h[12:])), 16 + capLen
}

// u32 is pb.order.Uint32(b), inlined: through the interface it was a call
// per field, 4 % of the split scan's CPU.
func (pb *pcapBlocks) u32(b []byte) uint32 {
	if pb.big {
		return binary.BigEndian.Uint32(b)
	}
	return binary.LittleEndian.Uint32(b)
}
