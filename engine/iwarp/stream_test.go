package iwarp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rlab-dev/rlab/engine/roce"
)

// fpdus frames ULPDUs back to back from an end, as one stream of bytes,
// without sending them.
func (c *conv) fpdus(from int, ulpdus [][]byte) []byte {
	e := c.ends[from]
	save := e.seq
	var all []byte
	for _, u := range ulpdus {
		b := c.fpdu(from, u)
		all = append(all, b...)
		e.seq += uint32(len(b))
	}
	e.seq = save
	return all
}

// sendCut sends stream in segments of the given sizes (the last takes the
// rest): first those named in order (repeats resend), then the rest in
// order; -(i+1) drops segment i (never captured).
func (c *conv) sendCut(from int, stream []byte, sizes []int, order []int) {
	e := c.ends[from]
	type piece struct {
		seq uint32
		b   []byte
	}
	var ps []piece
	off := 0
	for i := 0; off < len(stream); i++ {
		n := len(stream) - off
		if i < len(sizes) && sizes[i] < n {
			n = sizes[i]
		}
		ps = append(ps, piece{e.seq + uint32(off), stream[off : off+n]})
		off += n
	}
	done := map[int]bool{}
	for _, i := range order {
		if i < 0 {
			done[-i-1] = true // dropped
			continue
		}
		if i < len(ps) {
			done[i] = true
			c.add(seg{from: from, flags: tcpACK | tcpPSH, seq: ps[i].seq, payload: ps[i].b})
		}
	}
	for i, p := range ps {
		if !done[i] {
			c.add(seg{from: from, flags: tcpACK | tcpPSH, seq: p.seq, payload: p.b})
		}
	}
	e.seq += uint32(len(stream))
}

// streamULPDUs: seven messages, some longer than a marker interval.
func (c *conv) streamULPDUs(from int) ([][]byte, []uint8) {
	var us [][]byte
	var ops []uint8
	for i, n := range []int{100, 1500, 3, 700, 64, 2000, 11} {
		if i%2 == 0 {
			us = append(us, append(c.untaggedHdr(from, OpSend, true, 0, 0, 0), pattern(n)...))
			ops = append(ops, OpSend)
		} else {
			us = append(us, append(taggedHdr(OpWrite, true, 0x99, uint64(i)<<20), pattern(n)...))
			ops = append(ops, OpWrite)
		}
	}
	return us, ops
}

func markerConv() *conv {
	c := newConv(1, 2, 40010, 4210)
	c.handshake()
	c.mpa(0, false, FlagMarkers|FlagCRC, 1, nil)
	c.mpa(1, true, FlagMarkers|FlagCRC, 1, nil)
	c.ends[0].markers, c.ends[1].markers = true, true
	c.ends[0].crc, c.ends[1].crc = true, true
	return c
}

// TestReassembly: FPDUs that span segments, several in one segment, cut at
// odd places (inside a length field, a marker, a CRC), segments resent and
// out of order: every FPDU decoded once, in order, its CRC good.
func TestReassembly(t *testing.T) {
	cases := []struct {
		name         string
		sizes, order []int
		resent, ooo  int64
	}{
		{name: "aligned cuts", sizes: []int{128, 1536}},
		{name: "odd cuts", sizes: []int{1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233, 377, 610, 987, 1597}},
		{name: "out of order", sizes: []int{500, 500, 500, 500, 500, 500, 500}, order: []int{0, 2, 1, 4, 3}, ooo: 2},
		{name: "resent", sizes: []int{700, 700, 700, 700, 700}, order: []int{0, 1, 1, 2, 0}, resent: 2},
		{name: "resent ahead of a hole", sizes: []int{600, 600, 600, 600}, order: []int{0, 2, 2, 1}, resent: 1, ooo: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := markerConv()
			us, ops := c.streamULPDUs(0)
			c.sendCut(0, c.fpdus(0, us), tc.sizes, tc.order)
			path := filepath.Join(t.TempDir(), "s.pcap")
			writeConv(t, path, c, 0)
			a := NewAnalyzer()
			var got []uint8
			a.OnEvent = func(e *Event) {
				if e.MPA == nil && e.Dir == 0 {
					got = append(got, e.Seg.Opcode) // in stream order
				}
			}
			if _, err := roce.ScanFile(path, func(p *roce.Packet) error { a.Add(p); return nil }); err != nil {
				t.Fatal(err)
			}
			sum := a.Finish()
			if d := cmp.Diff(ops, got); d != "" {
				t.Errorf("opcodes (-sent +decoded):\n%s", d)
			}
			d := sum.Conns[0].Dirs[0]
			if d.CRCChecked != int64(len(ops)) || d.CRCBad != 0 || d.LostSync != 0 || d.Missing != 0 {
				t.Errorf("CRC checked %d bad %d, framing lost %d, missing %d; want %d good, none lost",
					d.CRCChecked, d.CRCBad, d.LostSync, d.Missing, len(ops))
			}
			if d.Retransmits != tc.resent || d.OutOfOrder != tc.ooo {
				t.Errorf("retransmitted %d, out of order %d; want %d, %d", d.Retransmits, d.OutOfOrder, tc.resent, tc.ooo)
			}
			if d.Markers == 0 {
				t.Error("no markers seen")
			}
		})
	}
}

// TestGapResyncs: a segment never captured loses the framing, which is
// found again at the next segment that starts with an FPDU; the bytes are
// said missing.
func TestGapResyncs(t *testing.T) {
	c := newConv(3, 4, 40011, 7174)
	c.handshake()
	c.mpa(0, false, FlagEnhanced, 2, []byte{0, 1, 0, 1})
	c.mpa(1, true, FlagEnhanced, 2, []byte{0, 1, 0, 1})
	us, _ := c.streamULPDUs(0)
	// one FPDU per segment; the third segment is lost in the middle of a
	// long FPDU cut in two.
	for i, u := range us {
		b := c.fpdu(0, u)
		if i == 1 {
			half := len(b) / 2
			c.sendCut(0, b, []int{half}, []int{0, -2}) // the second half never captured
			continue
		}
		c.send(0, b)
	}
	path := filepath.Join(t.TempDir(), "gap.pcap")
	writeConv(t, path, c, 0)
	sum, _ := analyze(t, path)
	d := sum.Conns[0].Dirs[0]
	if d.Missing == 0 || d.FPDUs < int64(len(us))-1 {
		t.Errorf("missing %d bytes, %d FPDUs; want bytes missing and at least %d FPDUs", d.Missing, d.FPDUs, len(us)-1)
	}
}

// TestMidstream: a connection whose SYN and MPA handshake came before the
// capture is said to have begun before it, and its FPDUs are still found
// (tshark decodes none of them: its dissector needs the handshake).
func TestMidstream(t *testing.T) {
	sum, _ := analyze(t, filepath.Join(pcapDir, "iwarp-midstream.pcap"))
	if len(sum.Conns) != 1 {
		t.Fatalf("%d iWARP connections, want 1", len(sum.Conns))
	}
	c := sum.Conns[0]
	if !c.BeganBefore || c.Request != nil || c.Dirs[0].FPDUs+c.Dirs[1].FPDUs != 9 {
		t.Errorf("began before %v, request %v, FPDUs %d+%d; want began before, no request, 9 FPDUs",
			c.BeganBefore, c.Request, c.Dirs[0].FPDUs, c.Dirs[1].FPDUs)
	}
}

// TestNotIWARP: TCP that is not iWARP (a handshake then text) is counted
// as a TCP connection and listed as no iWARP one.
func TestNotIWARP(t *testing.T) {
	c := newConv(5, 6, 40012, 22)
	c.handshake()
	c.send(0, []byte("SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3\r\n"))
	c.send(1, []byte("SSH-2.0-OpenSSH_9.2p1\r\n"))
	m := newConv(7, 8, 40013, 80) // mid-stream bytes that are not FPDUs
	m.ends[0].seq = 1 << 30
	for i := 0; i < 20; i++ {
		m.send(0, []byte("GET / HTTP/1.1\r\nHost: example\r\n\r\n"))
	}
	c.segs = append(c.segs, m.segs...)
	c.ends = [2]*end{c.ends[0], c.ends[1]}
	path := filepath.Join(t.TempDir(), "tcp.pcap")
	writeConvs(t, path, c, m)
	sum, _ := analyze(t, path)
	if len(sum.Conns) != 0 || sum.TCPConns != 2 {
		t.Errorf("%d iWARP connections of %d TCP; want 0 of 2", len(sum.Conns), sum.TCPConns)
	}
}

func writeConvs(t *testing.T, path string, cs ...*conv) {
	t.Helper()
	// Each conv is written alone and the frames joined: simplest is one
	// capture per conv appended; the analyzer keys by addresses and ports.
	var all []byte
	for i, c := range cs {
		p := path + itoa(i)
		c2 := *c
		c2.segs = nil
		for _, s := range c.segs {
			if s.from < 2 {
				c2.segs = append(c2.segs, s)
			}
		}
		writeConv(t, p, &c2, 0)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			b = b[24:] // the file header once
		}
		all = append(all, b...)
	}
	if err := os.WriteFile(path, all, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSnaplenLosesFraming: at rlab's default snaplen (128) a segment that
// carries several FPDUs shows only the first header; the framing is lost,
// said so with what to do, and not guessed at (tshark's summary reads a
// "length" inside the next segment's FPDU body there).
func TestSnaplenLosesFraming(t *testing.T) {
	file := filepath.Join(pcapDir, "iwarp-mpav2-coalesced-snaplen128.pcap")
	sum, _ := analyze(t, file)
	d := sum.Conns[0].Dirs[0]
	if d.FPDUs != 1 || d.LostSync != 1 || d.NotCaptured == 0 || d.CRCChecked != 0 {
		t.Errorf("FPDUs %d, framing lost %d, not captured %d, CRC checked %d; want 1, 1, >0, 0",
			d.FPDUs, d.LostSync, d.NotCaptured, d.CRCChecked)
	}
	var b strings.Builder
	if err := WriteText(&b, sum, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "capture with a larger snaplen to count every one") {
		t.Errorf("text does not say how to count every FPDU:\n%s", b.String())
	}
}

// TestPortsReused: a connection closed and opened again on the same ports
// is two connections, each with its own handshake and FPDUs.
func TestPortsReused(t *testing.T) {
	c := newConv(1, 2, 40020, 7174)
	for i := 0; i < 2; i++ {
		c.ends[0].seq, c.ends[1].seq = uint32(1000+i*7777777), uint32(500000+i*3333333)
		c.ends[0].msn, c.ends[1].msn = [3]uint32{}, [3]uint32{}
		c.handshake()
		c.mpa(0, false, FlagEnhanced, 2, []byte{0, 1, 0, 1})
		c.mpa(1, true, FlagEnhanced, 2, []byte{0, 1, 0, 1})
		c.ops()
		c.add(seg{from: 0, flags: tcpFIN | tcpACK, seq: c.ends[0].seq})
		c.add(seg{from: 1, flags: tcpFIN | tcpACK, seq: c.ends[1].seq})
	}
	path := filepath.Join(t.TempDir(), "reuse.pcap")
	writeConv(t, path, c, 0)
	sum, _ := analyze(t, path)
	if len(sum.Conns) != 2 {
		t.Fatalf("%d iWARP connections, want 2", len(sum.Conns))
	}
	for i, cn := range sum.Conns {
		if cn.Request == nil || cn.Reply == nil || cn.Dirs[0].FPDUs != 5 || cn.Dirs[1].FPDUs != 4 || cn.Dirs[0].LostSync != 0 {
			t.Errorf("connection %d: request %v reply %v FPDUs %d/%d lost %d; want both frames, 5/4 FPDUs", i,
				cn.Request != nil, cn.Reply != nil, cn.Dirs[0].FPDUs, cn.Dirs[1].FPDUs, cn.Dirs[0].LostSync)
		}
	}
}
