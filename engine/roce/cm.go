package roce

import "encoding/binary"

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
}
