package iwarp

import (
	"encoding/binary"
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rlab-dev/rlab/engine/roce"
)

// FuzzParseMPAFrame: any bytes give a frame or an error, never a panic;
// a frame's flags and lengths are the bytes' own.
func FuzzParseMPAFrame(f *testing.F) {
	f.Add(mpaFrame(false, FlagMarkers|FlagCRC, 1, []byte("x")))
	f.Add(mpaFrame(true, FlagEnhanced, 2, []byte{0x80, 1, 0x40, 2}))
	f.Add([]byte("MPA ID Req Fram"))
	f.Fuzz(func(t *testing.T, b []byte) {
		pd := b[min(len(b), MPAHeaderLen):]
		m, err := ParseMPAFrame(b, pd)
		if err != nil {
			return
		}
		if _, ok := IsMPAKey(b); !ok || len(b) < MPAHeaderLen {
			t.Fatalf("parsed %q without a key and a header", b)
		}
		if m.Flags != b[16] || m.Rev != b[17] || m.PDLen != binary.BigEndian.Uint16(b[18:]) ||
			m.Markers != (b[16]&FlagMarkers != 0) || m.CRC != (b[16]&FlagCRC != 0) {
			t.Fatalf("frame %+v from header % x", m, b[:MPAHeaderLen])
		}
		if m.HasIRDORD && (m.IRD > 0x3fff || m.ORD > 0x3fff || m.Rev != 2 || len(pd) < 4) {
			t.Fatalf("IRD/ORD %+v", m)
		}
	})
}

// FuzzParseSegment: any ULPDU gives a segment or an error; a segment's
// headers fit the ULPDU and its versions are 1.
func FuzzParseSegment(f *testing.F) {
	c := newConv(1, 2, 1, 2)
	f.Add(taggedHdr(OpWrite, true, 1, 2), uint16(100))
	f.Add(c.untaggedHdr(0, OpSendInv, true, 9, 0, 0), uint16(18))
	f.Add(append(c.untaggedHdr(0, OpTerminate, true, 0, 2, 0), 0x12, 5, 0, 0), uint16(22))
	f.Fuzz(func(t *testing.T, b []byte, ulp uint16) {
		s, err := ParseSegment(b, int(ulp))
		if err != nil && err != errHeaderCut {
			return
		}
		if s.DV != 1 || s.RV != 1 || s.HeaderLen > int(ulp) || s.HeaderLen < TaggedLen {
			t.Fatalf("segment %+v of a %d-byte ULPDU (err %v)", s, ulp, err)
		}
		if s.Tagged != (b[0]&0x80 != 0) || s.Opcode != b[1]&0x0f {
			t.Fatalf("segment %+v from % x", s, b[:2])
		}
	})
}

// stream is the byte stream of one direction in the fuzz targets: an MPA
// Request, then FPDUs of every kind, CRCs and markers on.
func fuzzStream() (mpa, fpdus []byte, ops []uint8, c *conv) {
	c = markerConv()
	c.ends[0].seq = 1001 // after the SYN
	mpa = mpaFrame(false, FlagMarkers|FlagCRC, 1, nil)
	c.ends[0].seq += uint32(len(mpa))
	us, ops := c.streamULPDUs(0)
	return mpa, c.fpdus(0, us), ops, c
}

func tcpPacket(n int, seq uint32, flags uint8, payload []byte, wire int) *roce.Packet {
	return &roce.Packet{Number: n, Time: time.Unix(1, int64(n)), Proto: roce.ProtoTCP, WireLen: 54 + wire,
		Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("10.0.0.2"), SrcPort: 40000, DstPort: 4210,
		TCP: roce.TCPHeader{Seq: seq, Flags: flags, Window: 100}, Payload: payload, L4Payload: wire}
}

// FuzzReassembly: however the stream is cut into segments, reordered
// within a window and resent, the FPDUs come out once each, in order, with
// good CRCs; and the analyzer never holds more than its bounds.
func FuzzReassembly(f *testing.F) {
	f.Add([]byte{1, 2, 3, 200, 100, 7, 0, 9})
	f.Add([]byte{255, 255, 255, 255})
	f.Add([]byte{3, 0x80, 17, 0x81, 90})
	mpa, stream, ops, _ := fuzzStream()
	all := append(append([]byte(nil), mpa...), stream...)
	f.Fuzz(func(t *testing.T, plan []byte) {
		a := NewAnalyzer()
		var got []uint8
		bad := 0
		a.OnEvent = func(e *Event) {
			if e.MPA == nil {
				got = append(got, e.Seg.Opcode)
				if !e.CRCChecked || !e.CRCValid {
					bad++
				}
			}
		}
		n := 1
		a.Add(tcpPacket(n, 1000, roce.TCPSyn, nil, 0))
		// The Reply, whose M flag asks the initiator for markers, comes
		// back before the initiator's first FPDU.
		rep := mpaFrame(true, FlagMarkers|FlagCRC, 1, nil)
		replied := false
		reply := func() {
			if !replied {
				replied = true
				p := tcpPacket(0, 77, roce.TCPAck, rep, len(rep))
				p.Src, p.Dst, p.SrcPort, p.DstPort = p.Dst, p.Src, p.DstPort, p.SrcPort
				a.Add(p)
			}
		}
		type piece struct{ off, len int }
		var ps []piece
		for off, i := 0, 0; off < len(all); i++ {
			size := 1460
			if len(plan) > 0 {
				size = 1 + int(plan[i%len(plan)]&0x7f)*8
			}
			size = min(size, len(all)-off)
			ps = append(ps, piece{off, size})
			off += size
		}
		// A plan byte with the top bit set swaps its piece with the next,
		// and resends it.
		var order []int
		for i := 0; i < len(ps); i++ {
			if len(plan) > 0 && plan[i%len(plan)]&0x80 != 0 && i+1 < len(ps) {
				order = append(order, i+1, i, i+1)
				i++
				continue
			}
			order = append(order, i)
		}
		for _, i := range order {
			n++
			p := ps[i]
			if p.off+p.len > len(mpa) {
				reply()
			}
			a.Add(tcpPacket(n, 1001+uint32(p.off), roce.TCPAck, all[p.off:p.off+p.len], p.len))
			if a.pending > maxPendingTotal {
				t.Fatalf("holding %d bytes", a.pending)
			}
		}
		sum := a.Finish()
		if d := cmp.Diff(ops, got); d != "" || bad != 0 {
			t.Fatalf("opcodes (-sent +decoded), %d CRCs not good:\n%s", bad, d)
		}
		if len(sum.Conns) != 1 || sum.Conns[0].Request == nil {
			t.Fatal("no iWARP connection with its MPA Request")
		}
	})
}

// FuzzAnalyzer: arbitrary segments on a connection that did (or did not)
// start with an MPA handshake: no panic, and the counts stay consistent.
func FuzzAnalyzer(f *testing.F) {
	mpa, stream, _, _ := fuzzStream()
	f.Add(append(mpa, stream[:300]...), uint16(100), uint16(7), true)
	f.Add(stream[:200], uint16(0), uint16(60), false)
	f.Fuzz(func(t *testing.T, data []byte, skip, cut uint16, syn bool) {
		a := NewAnalyzer()
		seq := uint32(5000)
		n := 0
		if syn {
			n++
			a.Add(tcpPacket(n, seq-1, roce.TCPSyn, nil, 0))
		}
		for off := 0; off < len(data); {
			size := min(len(data)-off, 1+int(cut)%1500)
			kept := data[off : off+size]
			if int(skip)%7 == n%7 {
				kept = kept[:len(kept)/2] // snaplen
			}
			n++
			a.Add(tcpPacket(n, seq+uint32(off), roce.TCPAck, kept, size))
			if int(skip)%5 == n%5 {
				off += int(skip) // a hole
			}
			off += size
		}
		for _, c := range a.Finish().Conns {
			for _, d := range c.Dirs {
				if d.PayloadBytes > d.FPDUBytes || d.CRCBad > d.CRCChecked || d.CRCChecked > d.FPDUs || d.FPDUBytes < 8*d.FPDUs {
					t.Fatalf("counts %+v", d)
				}
				var fp int64
				for _, o := range d.Ops {
					fp += o.FPDUs
				}
				if fp != d.FPDUs {
					t.Fatalf("opcode table sums to %d FPDUs, direction %d", fp, d.FPDUs)
				}
			}
		}
	})
}
