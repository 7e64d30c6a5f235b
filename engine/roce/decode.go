// Package roce decodes RoCEv2 (InfiniBand over UDP port 4791) packets from
// pcap and pcapng files and summarises them: per connection and per opcode
// counts, NAKs, retransmissions and CNPs, a ladder diagram of the first
// packets, and the control plane (RDMA-CM MADs on QP1) beside the data plane.
//
// The decoder reads only the bytes a capture kept (snaplen 128 is common) and
// never allocates per packet; it works from Go with pcapgo and needs neither
// libpcap nor cgo. It must not import the CLI or the run engine
// (internal/archtest checks it).
package roce

import (
	"encoding/binary"
	"hash/crc32"
	"math/bits"
	"net/netip"
	"time"
)

// UDPPort is the IANA port of RoCEv2.
const UDPPort = 4791

// Link types this decoder reads (pcap LINKTYPE_* values).
const (
	LinkEthernet = 1
	LinkRaw      = 101
	LinkIPv4     = 228
	LinkIPv6     = 229
	LinkSLL      = 113
	LinkSLL2     = 276
)

// Proto says what a frame turned out to be.
type Proto uint8

// Frame kinds.
const (
	ProtoOther Proto = iota // not IP, or IP but neither TCP nor RoCEv2
	ProtoRoCE               // UDP to port 4791 with a BTH
	ProtoTCP
)

// Problem says why a frame could not be decoded completely.
type Problem uint8

// Problems, worst last.
const (
	ProblemNone        Problem = iota
	ProblemTruncated           // the capture (snaplen) cut into the headers
	ProblemMalformed           // a length field disagrees with the frame
	ProblemBadOpcode           // a reserved or vendor BTH opcode
	ProblemUnknownLink         // a link type this decoder does not read
)

func (p Problem) String() string {
	switch p {
	case ProblemNone:
		return "none"
	case ProblemTruncated:
		return "headers truncated"
	case ProblemMalformed:
		return "malformed"
	case ProblemBadOpcode:
		return "reserved opcode"
	case ProblemUnknownLink:
		return "unknown link type"
	}
	return "unknown"
}

// BTH is the InfiniBand Base Transport Header (12 bytes).
type BTH struct {
	Opcode    uint8
	SE        bool  // solicited event
	MigReq    bool  // migration request
	Pad       uint8 // pad count, 0..3
	TVer      uint8 // transport header version
	PKey      uint16
	FECN      bool
	BECN      bool
	DestQP    uint32 // 24 bits
	AckReq    bool
	PSN       uint32 // 24 bits
	Reserved7 uint8
}

// RETH is the RDMA extended transport header.
type RETH struct {
	VA     uint64
	RKey   uint32
	DMALen uint32
}

// AETH syndromes, the top three bits of the syndrome byte.
const (
	AETHAck    = 0
	AETHRNRNak = 1
	AETHNak    = 3
)

// AETH is the ACK extended transport header.
type AETH struct {
	Syndrome uint8
	MSN      uint32
}

// Kind returns AETHAck, AETHRNRNak, AETHNak (or 2, reserved).
func (a AETH) Kind() uint8 { return a.Syndrome >> 5 }

// Value returns the low five bits: the credit count of an ACK, the timer of
// an RNR NAK or the code of a NAK.
func (a AETH) Value() uint8 { return a.Syndrome & 0x1f }

// AtomicETH is the header of CmpSwap and FetchAdd.
type AtomicETH struct {
	VA      uint64
	RKey    uint32
	SwapAdd uint64
	Compare uint64
}

// DETH is the datagram extended transport header of UD (and RD).
type DETH struct {
	QKey  uint32
	SrcQP uint32
}

// TCP flags (TCPHeader.Flags).
const (
	TCPFin = 0x01
	TCPSyn = 0x02
	TCPRst = 0x04
	TCPPsh = 0x08
	TCPAck = 0x10
)

// TCPHeader is what the decoder keeps of a TCP header.
type TCPHeader struct {
	Seq, Ack uint32
	Flags    uint8
	Window   uint16 // unscaled
}

// Packet is one decoded frame. Decode overwrites every field, so one Packet
// can be reused for a whole file.
type Packet struct {
	Number    int // frame number in the file, from 1
	Time      time.Time
	CapLen    int // bytes the capture kept
	WireLen   int // bytes on the wire
	Proto     Proto
	Problem   Problem
	Truncated bool // the capture kept less than the wire carried (headers or payload)

	VLAN             uint16 // VLAN ID of the innermost tag
	HasVLAN          bool
	Src, Dst         netip.Addr
	SrcPort, DstPort uint16
	L4Payload        int // UDP or TCP payload bytes on the wire

	// TCP header fields (Kind TCP, headers captured): what engine/iwarp
	// reassembles streams from.
	TCP TCPHeader
	// Payload is the captured part of the TCP payload (L4Payload bytes on
	// the wire). It aliases the reader's buffer: valid only until the next
	// frame is decoded.
	Payload []byte

	BTH      BTH
	HasBTH   bool   // the BTH was captured
	Headers  Header // extended headers present in the capture
	RDETH    uint32 // EE context
	DETH     DETH
	XRCSRQ   uint32
	FETH     uint32
	RETH     RETH
	Atomic   AtomicETH
	AETH     AETH
	OrigData uint64 // AtomicAckETH original remote data
	ImmDt    uint32
	IETH     uint32 // the rkey to invalidate
	// PayloadLen is the IB payload length (between the headers and the
	// pad and ICRC) on the wire, whatever the capture kept.
	PayloadLen int
	ICRC       uint32
	HasICRC    bool // the ICRC was captured
	// ICRCChecked: the whole packet was captured (IPv4 without options or
	// IPv6 without extension headers) and its ICRC recomputed; ICRCValid:
	// it matched.
	ICRCChecked bool
	ICRCValid   bool
	CM          CM // valid when CM.Attr != 0: a CM MAD on QP1
}

// Op describes the packet's BTH opcode.
func (p *Packet) Op() *OpInfo { return &opTable[p.BTH.Opcode] }

// Decode decodes one frame of the given pcap link type into p. It reads only
// data (the captured bytes); wireLen is the frame's length on the wire.
// It never fails: what could not be decoded is in p.Problem.
func Decode(link int, data []byte, wireLen int, p *Packet) {
	num, ts := p.Number, p.Time
	*p = Packet{Number: num, Time: ts, CapLen: len(data), WireLen: wireLen, Truncated: len(data) < wireLen}
	var etype uint16
	off := 0
	switch link {
	case LinkEthernet:
		if len(data) < 14 {
			p.Problem = ProblemTruncated
			return
		}
		etype = binary.BigEndian.Uint16(data[12:14])
		off = 14
		for etype == 0x8100 || etype == 0x88a8 || etype == 0x9100 {
			if len(data) < off+4 {
				p.Problem = ProblemTruncated
				return
			}
			p.HasVLAN = true
			p.VLAN = binary.BigEndian.Uint16(data[off:]) & 0x0fff
			etype = binary.BigEndian.Uint16(data[off+2:])
			off += 4
		}
	case LinkSLL:
		if len(data) < 16 {
			p.Problem = ProblemTruncated
			return
		}
		etype, off = binary.BigEndian.Uint16(data[14:16]), 16
	case LinkSLL2:
		if len(data) < 20 {
			p.Problem = ProblemTruncated
			return
		}
		etype, off = binary.BigEndian.Uint16(data[0:2]), 20
	case LinkRaw, LinkIPv4, LinkIPv6:
		if len(data) < 1 {
			p.Problem = ProblemTruncated
			return
		}
		switch data[0] >> 4 {
		case 4:
			etype = 0x0800
		case 6:
			etype = 0x86dd
		}
	default:
		p.Problem = ProblemUnknownLink
		return
	}
	// wireEnd is where the IP packet ends on the wire (offset into a frame
	// the capture may have cut short).
	var proto uint8
	var l4, wireEnd int
	ipOff := off
	switch etype {
	case 0x0800:
		if len(data) < off+20 {
			p.Problem = ProblemTruncated
			return
		}
		h := data[off:]
		ihl := int(h[0]&0x0f) * 4
		total := int(binary.BigEndian.Uint16(h[2:4]))
		if h[0]>>4 != 4 || ihl < 20 || total < ihl || off+total > wireLen {
			p.Problem = ProblemMalformed
			return
		}
		p.Src = netip.AddrFrom4([4]byte(h[12:16]))
		p.Dst = netip.AddrFrom4([4]byte(h[16:20]))
		if binary.BigEndian.Uint16(h[6:8])&0x3fff != 0 {
			return // a fragment: no L4 header to read in most of them
		}
		proto, l4, wireEnd = h[9], off+ihl, off+total
	case 0x86dd:
		if len(data) < off+40 {
			p.Problem = ProblemTruncated
			return
		}
		h := data[off:]
		plen := int(binary.BigEndian.Uint16(h[4:6]))
		if h[0]>>4 != 6 || off+40+plen > wireLen {
			p.Problem = ProblemMalformed
			return
		}
		p.Src = netip.AddrFrom16([16]byte(h[8:24]))
		p.Dst = netip.AddrFrom16([16]byte(h[24:40]))
		proto, l4, wireEnd = h[6], off+40, off+40+plen
		// Skip the extension headers a RoCE or TCP packet may carry.
		for proto == 0 || proto == 43 || proto == 60 {
			if len(data) < l4+8 {
				p.Problem = ProblemTruncated
				return
			}
			n := 8 + int(data[l4+1])*8
			proto = data[l4]
			l4 += n
			if l4 > wireEnd {
				p.Problem = ProblemMalformed
				return
			}
		}
	default:
		return
	}
	switch proto {
	case 6:
		p.Proto = ProtoTCP
		if len(data) < l4+20 {
			p.Problem = ProblemTruncated
			return
		}
		p.SrcPort = binary.BigEndian.Uint16(data[l4:])
		p.DstPort = binary.BigEndian.Uint16(data[l4+2:])
		doff := int(data[l4+12]>>4) * 4
		if doff < 20 || l4+doff > wireEnd {
			p.Problem = ProblemMalformed
			return
		}
		p.L4Payload = wireEnd - l4 - doff
		p.TCP = TCPHeader{
			Seq:    binary.BigEndian.Uint32(data[l4+4:]),
			Ack:    binary.BigEndian.Uint32(data[l4+8:]),
			Flags:  data[l4+13],
			Window: binary.BigEndian.Uint16(data[l4+14:]),
		}
		if start := l4 + doff; start < len(data) {
			end := min(wireEnd, len(data))
			p.Payload = data[start:end:end]
		}
		return
	case 17:
	default:
		return
	}
	if len(data) < l4+8 {
		p.Problem = ProblemTruncated
		if len(data) >= l4+4 && binary.BigEndian.Uint16(data[l4+2:]) == UDPPort {
			p.Proto = ProtoRoCE
		}
		return
	}
	p.SrcPort = binary.BigEndian.Uint16(data[l4:])
	p.DstPort = binary.BigEndian.Uint16(data[l4+2:])
	if p.DstPort != UDPPort {
		return
	}
	p.Proto = ProtoRoCE
	ulen := int(binary.BigEndian.Uint16(data[l4+4:]))
	if ulen < 8 || l4+ulen > wireEnd {
		p.Problem = ProblemMalformed
		return
	}
	p.L4Payload = ulen - 8
	if l := l4 - ipOff; !(etype == 0x0800 && l == 20 || etype == 0x86dd && l == 40) {
		ipOff = -1 // IP options or IPv6 extension headers: no ICRC check
	}
	decodeIB(data, ipOff, l4+8, l4+ulen, p)
}

// decodeIB decodes the IB transport headers starting at off; end is where
// the UDP payload ends on the wire, ipOff where the IP header starts (-1:
// the ICRC cannot be checked).
func decodeIB(data []byte, ipOff, off, end int, p *Packet) {
	if len(data) < off+12 {
		p.Problem = ProblemTruncated
		return
	}
	h := data[off : off+12]
	ipLen := off - 8 - ipOff
	b := &p.BTH
	b.Opcode = h[0]
	b.SE = h[1]&0x80 != 0
	b.MigReq = h[1]&0x40 != 0
	b.Pad = h[1] >> 4 & 3
	b.TVer = h[1] & 0x0f
	b.PKey = binary.BigEndian.Uint16(h[2:4])
	b.FECN = h[4]&0x80 != 0
	b.BECN = h[4]&0x40 != 0
	b.DestQP = uint32(h[5])<<16 | uint32(h[6])<<8 | uint32(h[7])
	b.AckReq = h[8]&0x80 != 0
	b.Reserved7 = h[8] & 0x7f
	b.PSN = uint32(h[9])<<16 | uint32(h[10])<<8 | uint32(h[11])
	p.HasBTH = true
	off += 12
	op := &opTable[b.Opcode]
	if !op.Known {
		p.Problem = ProblemBadOpcode
		return
	}
	// Lengths on the wire first, so payload length is known even when the
	// capture kept only the headers.
	hlen := 0
	for i, n := range headerLen {
		if op.Headers&(1<<i) != 0 {
			hlen += n
		}
	}
	p.PayloadLen = end - off - hlen - int(b.Pad) - 4
	if p.PayloadLen < 0 {
		p.PayloadLen = 0
		p.Problem = ProblemMalformed
		return
	}
	if end <= len(data) {
		p.ICRC = binary.BigEndian.Uint32(data[end-4 : end])
		p.HasICRC = true
		if ipOff >= 0 {
			p.ICRCChecked = true
			p.ICRCValid = ICRC(data[ipOff:end-4], ipLen) == p.ICRC
		}
	}
	hs := op.Headers
	if hs&HdrRDETH != 0 {
		if !need(data, off, 4, p) {
			return
		}
		p.RDETH = be24(data[off+1:])
		p.Headers |= HdrRDETH
		off += 4
	}
	if hs&HdrDETH != 0 {
		if !need(data, off, 8, p) {
			return
		}
		p.DETH = DETH{QKey: binary.BigEndian.Uint32(data[off:]), SrcQP: be24(data[off+5:])}
		p.Headers |= HdrDETH
		off += 8
	}
	if hs&HdrXRCETH != 0 {
		if !need(data, off, 4, p) {
			return
		}
		p.XRCSRQ = be24(data[off+1:])
		p.Headers |= HdrXRCETH
		off += 4
	}
	if hs&HdrFETH != 0 {
		if !need(data, off, 4, p) {
			return
		}
		p.FETH = binary.BigEndian.Uint32(data[off:])
		p.Headers |= HdrFETH
		off += 4
	}
	if hs&HdrRETH != 0 {
		if !need(data, off, 16, p) {
			return
		}
		p.RETH = RETH{
			VA:     binary.BigEndian.Uint64(data[off:]),
			RKey:   binary.BigEndian.Uint32(data[off+8:]),
			DMALen: binary.BigEndian.Uint32(data[off+12:]),
		}
		p.Headers |= HdrRETH
		off += 16
	}
	if hs&HdrAtomicETH != 0 {
		if !need(data, off, 28, p) {
			return
		}
		p.Atomic = AtomicETH{
			VA:      binary.BigEndian.Uint64(data[off:]),
			RKey:    binary.BigEndian.Uint32(data[off+8:]),
			SwapAdd: binary.BigEndian.Uint64(data[off+12:]),
			Compare: binary.BigEndian.Uint64(data[off+20:]),
		}
		p.Headers |= HdrAtomicETH
		off += 28
	}
	if hs&HdrAETH != 0 {
		if !need(data, off, 4, p) {
			return
		}
		p.AETH = AETH{Syndrome: data[off], MSN: be24(data[off+1:])}
		p.Headers |= HdrAETH
		off += 4
	}
	if hs&HdrAtomicAckETH != 0 {
		if !need(data, off, 8, p) {
			return
		}
		p.OrigData = binary.BigEndian.Uint64(data[off:])
		p.Headers |= HdrAtomicAckETH
		off += 8
	}
	if hs&HdrImmDt != 0 {
		if !need(data, off, 4, p) {
			return
		}
		p.ImmDt = binary.BigEndian.Uint32(data[off:])
		p.Headers |= HdrImmDt
		off += 4
	}
	if hs&HdrIETH != 0 {
		if !need(data, off, 4, p) {
			return
		}
		p.IETH = binary.BigEndian.Uint32(data[off:])
		p.Headers |= HdrIETH
		off += 4
	}
	if hs&HdrCNPPad != 0 {
		p.Headers |= HdrCNPPad
		return
	}
	if b.DestQP == 1 && op.Transport == UD {
		decodeMAD(data, off, off+p.PayloadLen, p)
	}
}

// need reports whether n bytes from off were captured, and marks the packet
// truncated if not.
func need(data []byte, off, n int, p *Packet) bool {
	if len(data) < off+n {
		p.Problem = ProblemTruncated
		return false
	}
	return true
}

func be24(b []byte) uint32 { return uint32(b[0])<<16 | uint32(b[1])<<8 | uint32(b[2]) }

// ff8 is the masked LRH that RoCEv2 puts in front of the ICRC's input.
var ff8 = []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// ICRC computes the RoCEv2 invariant CRC of pkt, which runs from the IP
// header (ipLen bytes: 20 for IPv4, 40 for IPv6) to just before the ICRC,
// with the fields routers may change masked to ones (IBA annex A17.3.3;
// the kernel's rxe_icrc.c). It returns the value as the wire carries it,
// read big-endian, as Packet.ICRC is.
func ICRC(pkt []byte, ipLen int) uint32 {
	if len(pkt) < ipLen+20 || ipLen != 20 && ipLen != 40 {
		return 0
	}
	// The masked bytes are fed from constants, the rest straight from pkt:
	// a local copy to mask would escape to the heap through crc32.Update.
	t := crc32.IEEETable
	c := crc32.Update(0, t, ff8)
	if ipLen == 20 {
		c = crc32.Update(c, t, pkt[0:1])
		c = crc32.Update(c, t, ff8[:1]) // TOS
		c = crc32.Update(c, t, pkt[2:8])
		c = crc32.Update(c, t, ff8[:1]) // TTL
		c = crc32.Update(c, t, pkt[9:10])
		c = crc32.Update(c, t, ff8[:2]) // header checksum
		c = crc32.Update(c, t, pkt[12:20+6])
	} else {
		c = crc32.Update(c, t, verTC[pkt[0]>>4][:]) // traffic class
		c = crc32.Update(c, t, ff8[:3])             // and flow label
		c = crc32.Update(c, t, pkt[4:7])
		c = crc32.Update(c, t, ff8[:1]) // hop limit
		c = crc32.Update(c, t, pkt[8:40+6])
	}
	c = crc32.Update(c, t, ff8[:2]) // UDP checksum
	c = crc32.Update(c, t, pkt[ipLen+8:ipLen+8+4])
	c = crc32.Update(c, t, ff8[:1]) // BTH FECN, BECN, reserved
	c = crc32.Update(c, t, pkt[ipLen+8+5:])
	return bits.ReverseBytes32(c)
}

// verTC[v] is the first IPv6 byte of version v with the traffic class
// bits in it masked.
var verTC = func() (t [16][1]byte) {
	for v := range t {
		t[v][0] = byte(v)<<4 | 0x0f
	}
	return t
}()
