package roce

import (
	"encoding/binary"
	"fmt"
	"io"
)

// maxFrame bounds the bytes of one captured frame (tcpdump's largest
// snaplen); maxBlock bounds one pcapng block.
const (
	maxFrame = 1 << 18
	maxBlock = 1 << 24
)

// ngGuard sits between a pcapng file and pcapgo's NgReader, which sizes its
// frame buffer from the interface snaplen and the block's capture length
// as written in the file: a damaged or hostile file could make it allocate
// gigabytes. The guard passes whole blocks through, refuses a capture
// length larger than its block, and caps an interface's snaplen (0 means
// "unlimited" in pcapng) at maxFrame.
type ngGuard struct {
	r     io.Reader
	buf   []byte
	pos   int
	order binary.ByteOrder
	err   error
	hdr   [12]byte // a field, not a local: io.ReadFull would move it to the heap per block
}

func newNgGuard(r io.Reader) *ngGuard { return &ngGuard{r: r, order: binary.LittleEndian} }

func (g *ngGuard) Read(p []byte) (int, error) {
	if g.pos == len(g.buf) {
		if g.err != nil {
			return 0, g.err
		}
		g.err = g.next()
		if g.err != nil && g.err != io.EOF && g.err != io.ErrUnexpectedEOF {
			g.buf = g.buf[:0] // a refused block is not passed on
		}
		if g.pos == len(g.buf) {
			return 0, g.err
		}
	}
	n := copy(p, g.buf[g.pos:])
	g.pos += n
	return n, nil
}

// next reads and checks one block into buf.
func (g *ngGuard) next() error {
	g.buf, g.pos = g.buf[:0], 0
	hdr := g.hdr[:]
	n, err := io.ReadFull(g.r, hdr[:8])
	if err != nil {
		g.buf = append(g.buf, hdr[:n]...)
		return err
	}
	typ := binary.LittleEndian.Uint32(hdr[0:4])
	if typ == 0x0a0d0d0a { // section header: the byte order comes next
		if n, err := io.ReadFull(g.r, hdr[8:12]); err != nil {
			g.buf = append(g.buf, hdr[:8+n]...)
			return err
		}
		switch {
		case binary.LittleEndian.Uint32(hdr[8:12]) == 0x1a2b3c4d:
			g.order = binary.LittleEndian
		case binary.BigEndian.Uint32(hdr[8:12]) == 0x1a2b3c4d:
			g.order = binary.BigEndian
		default:
			return fmt.Errorf("pcapng section header: bad byte-order magic")
		}
	} else {
		typ = g.order.Uint32(hdr[0:4])
	}
	total := int(g.order.Uint32(hdr[4:8]))
	if total < 12 || total > maxBlock || total%4 != 0 {
		return fmt.Errorf("pcapng block of type %d: bad length %d", typ, total)
	}
	if cap(g.buf) < total {
		g.buf = make([]byte, 0, total)
	}
	g.buf = g.buf[:total]
	have := 8
	if typ == 0x0a0d0d0a {
		have = 12
	}
	copy(g.buf, hdr[:have])
	if _, err := io.ReadFull(g.r, g.buf[have:]); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		g.buf = g.buf[:8]
		return err
	}
	body := g.buf[8 : total-4]
	switch typ {
	case 1: // interface description: link type, reserved, snaplen
		if len(body) >= 8 {
			if s := g.order.Uint32(body[4:8]); s == 0 || s > maxFrame {
				g.order.PutUint32(body[4:8], maxFrame)
			}
		}
		// pcapgo divides by the timestamp resolution: a resolution of
		// 2^-64 or 10^-64 and finer would be a division by zero.
		for o := body[min(8, len(body)):]; len(o) >= 4; {
			code, n := g.order.Uint16(o[0:2]), int(g.order.Uint16(o[2:4]))
			if code == 0 || 4+n > len(o) {
				break
			}
			if code == 9 && n >= 1 && o[4]&0x7f > 30 {
				return fmt.Errorf("pcapng interface: timestamp resolution exponent %d out of range", o[4]&0x7f)
			}
			o = o[min(len(o), 4+(n+3)&^3):]
		}
	case 2, 6: // (obsolete) packet block, enhanced packet block
		if len(body) < 20 || int(g.order.Uint32(body[12:16])) > len(body)-20 {
			return fmt.Errorf("pcapng packet block: capture length beyond its block")
		}
	case 3: // simple packet block
		if len(body) < 4 {
			return fmt.Errorf("pcapng simple packet block too short")
		}
	}
	return nil
}
