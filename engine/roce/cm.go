package roce

import (
	"encoding/binary"
	"net/netip"
)

// CM attribute IDs of the InfiniBand Communication Manager (IBA 16.7.3.1).
const (
	CMReq     = 0x0010
	CMMra     = 0x0011
	CMRej     = 0x0012
	CMRep     = 0x0013
	CMRtu     = 0x0014
	CMDreq    = 0x0015
	CMDrep    = 0x0016
	CMSidrReq = 0x0017
	CMSidrRep = 0x0018
	CMLap     = 0x0019
	CMApr     = 0x001a
)

// mgmtClassCM is the MAD management class of the Communication Manager.
const mgmtClassCM = 0x07

// CM is a Communication Manager MAD (what RDMA-CM sends on QP1 to set up
// and tear down a connection). Attr is 0 when the packet carries none.
type CM struct {
	Attr         uint16 // CMReq, CMRep, ...
	Method       uint8
	TID          uint64 // transaction ID
	LocalCommID  uint32 // the request ID of SIDR_REQ and SIDR_REP
	RemoteCommID uint32 // REP, RTU, REJ, DREQ, DREP, MRA
	LocalQPN     uint32 // REQ, REP, SIDR_REP
	RemoteQPN    uint32 // DREQ: the QP being disconnected
	StartPSN     uint32 // REQ, REP
	ServiceID    uint64 // REQ, SIDR_REQ, SIDR_REP
	Reason       uint16 // REJ
	// Partial: the capture cut the message; fields past the cut are 0.
	Partial bool
	// PrivateData is the message's private data as far as the capture
	// kept it (the first PrivateLen bytes; the message carries
	// PrivateSize of them, zero-padded by the sender): what
	// rdma_connect and rdma_accept pass as conn_param.private_data.
	PrivateData [224]byte
	PrivateLen  uint8
}

// privateArea says where a CM message's private data sits in the message
// body (after the 24-byte MAD header) and how long it is (IBA 12.6).
func privateArea(attr uint16) (at, n int) {
	switch attr {
	case CMReq:
		return 140, 92
	case CMRep:
		return 36, 196
	case CMRej:
		return 84, 148
	case CMRtu, CMDrep:
		return 8, 224
	case CMDreq:
		return 12, 220
	}
	return 0, 0
}

// PrivateSize is how many bytes of private data the message carries on
// the wire (0 for a message without any that the decoder reads).
func (c *CM) PrivateSize() int {
	_, n := privateArea(c.Attr)
	return n
}

// Private returns the private data the capture kept.
func (c *CM) Private() []byte { return c.PrivateData[:c.PrivateLen] }

// The RDMA-CM header at the start of a REQ's private data (the kernel's
// struct cma_hdr): version 0, IP version in the high nibble, the source
// port, then the source and destination addresses (16 bytes each, IPv4
// in the last four). The consumer's private data follows it.
const cmaHeaderLen = 36

// RDMACM returns the RDMA-CM header of a REQ whose service ID names the
// IP port space: the connecting side's address and port and the listening
// side's. ok is false for any other message or one cut before its end.
func (c *CM) RDMACM() (src, dst netip.AddrPort, ok bool) {
	p := c.Private()
	if c.Attr != CMReq || c.Port() == 0 || len(p) < cmaHeaderLen || p[0] != 0 {
		return src, dst, false
	}
	addr := func(b []byte) netip.Addr {
		if p[1]>>4 == 4 {
			return netip.AddrFrom4([4]byte(b[12:16]))
		}
		return netip.AddrFrom16([16]byte(b))
	}
	if v := p[1] >> 4; v != 4 && v != 6 {
		return src, dst, false
	}
	src = netip.AddrPortFrom(addr(p[4:20]), binary.BigEndian.Uint16(p[2:4]))
	dst = netip.AddrPortFrom(addr(p[20:36]), c.Port())
	return src, dst, true
}

// Consumer returns the private data the application passed: a REQ's
// after its RDMA-CM header, any other message's whole.
func (c *CM) Consumer() []byte {
	if _, _, ok := c.RDMACM(); ok {
		return c.Private()[cmaHeaderLen:]
	}
	return c.Private()
}

// BufferInfo is a remote buffer as the example programs of labs/programs
// hand it out in their CM private data: the "capability" (address and
// rkey) a peer needs to RDMA WRITE and READ it.
type BufferInfo struct {
	Addr uint64 `json:"addr"`
	RKey uint32 `json:"rkey"`
	Len  uint32 `json:"len"`
}

// bufferMagic opens a BufferInfo in private data.
const bufferMagic = "RLAB"

// Buffer decodes the consumer private data by the convention of rlab's
// example programs (labs/programs/src/common.h): "RLAB", then the rkey
// (4 bytes), the virtual address (8) and the length (4), big-endian. ok
// is false when the private data does not start so; other programs put
// what they like there.
func (c *CM) Buffer() (BufferInfo, bool) {
	p := c.Consumer()
	if len(p) < 20 || string(p[:4]) != bufferMagic {
		return BufferInfo{}, false
	}
	return BufferInfo{
		RKey: binary.BigEndian.Uint32(p[4:8]),
		Addr: binary.BigEndian.Uint64(p[8:16]),
		Len:  binary.BigEndian.Uint32(p[16:20]),
	}, true
}

var cmNames = map[uint16]string{
	CMReq: "REQ", CMMra: "MRA", CMRej: "REJ", CMRep: "REP", CMRtu: "RTU", CMDreq: "DREQ",
	CMDrep: "DREP", CMSidrReq: "SIDR_REQ", CMSidrRep: "SIDR_REP", CMLap: "LAP", CMApr: "APR",
}

// Name returns "REQ", "REP", ... or "" when c is not a CM message.
func (c *CM) Name() string {
	if n, ok := cmNames[c.Attr]; ok {
		return n
	}
	if c.Attr != 0 {
		return "CM?"
	}
	return ""
}

// Port returns the TCP/UDP port an RDMA-CM service ID names (the RDMA IP
// port space, 0x00000001_PS_PORT), or 0 when it names none.
func (c *CM) Port() uint16 {
	if c.ServiceID>>24 == 1 {
		return uint16(c.ServiceID)
	}
	return 0
}

// decodeMAD decodes a MAD at data[off:end] (end on the wire) into p.CM when
// it is a Communication Manager message and was captured far enough.
func decodeMAD(data []byte, off, end int, p *Packet) {
	const hdr = 24
	if end-off < hdr {
		return
	}
	if len(data) < off+hdr {
		p.Problem = ProblemTruncated
		return
	}
	m := data[off:]
	if m[1] != mgmtClassCM {
		return
	}
	c := &p.CM
	c.Method = m[3]
	c.TID = binary.BigEndian.Uint64(m[8:16])
	c.Attr = binary.BigEndian.Uint16(m[16:18])
	// The capture may have cut the body (snaplen 128 keeps about 40 bytes
	// of it): read what was kept, the rest as zeros, and say so.
	var body [232]byte
	d := body[:]
	kept := copy(d, m[hdr:min(len(m), end-off)])
	// want is how much of the message body the fields read below need.
	want := 8
	switch c.Attr {
	case CMReq:
		want = 48
	case CMRep:
		want = 24
	case CMRej:
		want = 12
	case CMDreq:
		want = 11
	case CMSidrReq:
		want = 16
	case CMSidrRep:
		want = 20
	}
	if end-off-hdr < want {
		p.Problem = ProblemMalformed // too short on the wire, not just cut
		c.Partial = true
		return
	}
	if kept < want {
		p.Problem = ProblemTruncated
		c.Partial = true
	}
	c.LocalCommID = binary.BigEndian.Uint32(d[0:4])
	switch c.Attr {
	case CMReq:
		c.ServiceID = binary.BigEndian.Uint64(d[8:16])
		c.LocalQPN = be24(d[32:35])
		c.StartPSN = be24(d[44:47])
	case CMRep:
		c.RemoteCommID = binary.BigEndian.Uint32(d[4:8])
		c.LocalQPN = be24(d[12:15])
		c.StartPSN = be24(d[20:23])
	case CMRej:
		c.RemoteCommID = binary.BigEndian.Uint32(d[4:8])
		c.Reason = binary.BigEndian.Uint16(d[10:12])
	case CMDreq:
		c.RemoteCommID = binary.BigEndian.Uint32(d[4:8])
		c.RemoteQPN = be24(d[8:11])
	case CMSidrReq: // request ID, P_Key, reserved, service ID
		c.ServiceID = binary.BigEndian.Uint64(d[8:16])
	case CMSidrRep: // request ID, status, info length, reserved, QPN, service ID
		c.LocalQPN = be24(d[8:11])
		c.ServiceID = binary.BigEndian.Uint64(d[12:20])
	default:
		c.RemoteCommID = binary.BigEndian.Uint32(d[4:8])
	}
	if at, n := privateArea(c.Attr); kept > at {
		c.PrivateLen = uint8(copy(c.PrivateData[:], d[at:min(kept, at+n)]))
	}
}
