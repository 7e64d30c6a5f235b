// Package iwarp decodes iWARP (RDMAP over DDP over MPA over TCP: RFC 5040,
// 5041, 5044, 6581, 7306) from the frames engine/roce reads: each TCP
// connection's two byte streams are reassembled (bounded memory; segments
// out of order, resent or never captured), MPA Request and Reply frames are
// recognised by their key strings (iWARP has no port of its own), and the
// FPDUs that follow are cut out with or without markers, their CRC32c
// checked when the connection negotiated it, their DDP and RDMAP headers
// decoded and counted per connection and opcode as engine/roce counts
// RoCEv2.
//
// It reads the frames engine/roce decoded, in the same single pass over a
// capture; it must not import the CLI or the run engine (internal/archtest
// checks it).
package iwarp

import (
	"encoding/binary"
	"fmt"
)

// The key strings that open an MPA Request and Reply frame (RFC 5044 7.1).
const (
	KeyReq = "MPA ID Req Frame"
	KeyRep = "MPA ID Rep Frame"
)

// MPAHeaderLen is the length of an MPA Request or Reply frame before its
// private data.
const MPAHeaderLen = 20

// MPA flag bits of Request and Reply frames (RFC 5044, RFC 6581).
const (
	FlagMarkers  = 0x80
	FlagCRC      = 0x40
	FlagReject   = 0x20
	FlagEnhanced = 0x10 // MPAv2 enhanced RDMA connection establishment
)

// MPAFrame is an MPA Request or Reply frame.
type MPAFrame struct {
	Reply    bool   `json:"reply"`
	Markers  bool   `json:"markers"`
	CRC      bool   `json:"crc"`
	Reject   bool   `json:"reject,omitempty"`
	Enhanced bool   `json:"enhanced,omitempty"`
	Flags    uint8  `json:"flags"`
	Rev      uint8  `json:"revision"`
	PDLen    uint16 `json:"private_data_length"`
	// MPAv2 enhanced mode (revision 2 with the enhanced flag): the first
	// four bytes of the private data.
	HasIRDORD  bool   `json:"-"`
	IRD        uint16 `json:"ird,omitempty"`
	ORD        uint16 `json:"ord,omitempty"`
	PeerToPeer bool   `json:"peer_to_peer,omitempty"`
	// RTR (ready to receive) message the initiator will send: a zero-length
	// Send, RDMA Write or RDMA Read.
	ZeroLenRTR bool `json:"zero_length_rtr,omitempty"`
	WriteRTR   bool `json:"write_rtr,omitempty"`
	ReadRTR    bool `json:"read_rtr,omitempty"`
}

// Name is "MPA Request" or "MPA Reply".
func (m *MPAFrame) Name() string {
	if m.Reply {
		return "MPA Reply"
	}
	return "MPA Request"
}

// IsMPAKey reports whether b starts with an MPA Request or Reply key.
func IsMPAKey(b []byte) (reply, ok bool) {
	if len(b) < len(KeyReq) {
		return false, false
	}
	switch string(b[:len(KeyReq)]) {
	case KeyReq:
		return false, true
	case KeyRep:
		return true, true
	}
	return false, false
}

// ParseMPAFrame decodes an MPA Request or Reply frame header (20 bytes)
// and, when pd holds them, the MPAv2 IRD and ORD from its private data.
func ParseMPAFrame(b, pd []byte) (MPAFrame, error) {
	var m MPAFrame
	if len(b) < MPAHeaderLen {
		return m, fmt.Errorf("MPA frame of %d bytes, want %d", len(b), MPAHeaderLen)
	}
	reply, ok := IsMPAKey(b)
	if !ok {
		return m, fmt.Errorf("no MPA key")
	}
	m.Reply = reply
	m.Flags = b[16]
	m.Markers = b[16]&FlagMarkers != 0
	m.CRC = b[16]&FlagCRC != 0
	m.Reject = b[16]&FlagReject != 0
	m.Enhanced = b[16]&FlagEnhanced != 0
	m.Rev = b[17]
	m.PDLen = binary.BigEndian.Uint16(b[18:20])
	if m.Rev == 2 && m.Enhanced && m.PDLen >= 4 && len(pd) >= 4 {
		ird, ord := binary.BigEndian.Uint16(pd[0:]), binary.BigEndian.Uint16(pd[2:])
		m.HasIRDORD = true
		m.IRD, m.ORD = ird&0x3fff, ord&0x3fff
		m.PeerToPeer = ird&0x8000 != 0
		m.ZeroLenRTR = ird&0x4000 != 0
		m.WriteRTR = ord&0x8000 != 0
		m.ReadRTR = ord&0x4000 != 0
	}
	return m, nil
}

// RDMAP opcodes (RFC 5040 4.4, RFC 7306).
const (
	OpWrite        = 0
	OpReadRequest  = 1
	OpReadResponse = 2
	OpSend         = 3
	OpSendInv      = 4
	OpSendSE       = 5
	OpSendSEInv    = 6
	OpTerminate    = 7
	OpImmediate    = 8
	OpImmediateSE  = 9
	OpAtomicReq    = 10
	OpAtomicResp   = 11
	// OpUnknown stands for FPDUs whose headers the capture did not keep.
	OpUnknown = 255
)

var opNames = [...]string{
	OpWrite: "RDMA Write", OpReadRequest: "RDMA Read Request", OpReadResponse: "RDMA Read Response",
	OpSend: "Send", OpSendInv: "Send with Invalidate", OpSendSE: "Send with SE",
	OpSendSEInv: "Send with SE and Invalidate", OpTerminate: "Terminate",
	OpImmediate: "Immediate Data", OpImmediateSE: "Immediate Data with SE",
	OpAtomicReq: "Atomic Request", OpAtomicResp: "Atomic Response",
}

// OpName names an RDMAP opcode.
func OpName(op uint8) string {
	if int(op) < len(opNames) {
		return opNames[op]
	}
	if op == OpUnknown {
		return "(headers not captured)"
	}
	return fmt.Sprintf("reserved opcode %d", op)
}

// tagged reports whether an opcode travels in DDP's tagged buffer model.
func tagged(op uint8) bool { return op == OpWrite || op == OpReadResponse }

// Terminate layers (RFC 5040 4.8).
var termLayers = [...]string{0: "RDMAP", 1: "DDP", 2: "LLP (MPA/TCP)"}

// TermLayerName names the layer of a Terminate message.
func TermLayerName(l uint8) string {
	if int(l) < len(termLayers) {
		return termLayers[l]
	}
	return fmt.Sprintf("layer %d", l)
}

// Terminate is the header of an RDMAP Terminate message.
type Terminate struct {
	Layer uint8 `json:"layer"`
	EType uint8 `json:"error_type"`
	Code  uint8 `json:"error_code"`
	// Hdrct: the M, D and R bits (which headers of the terminated message
	// follow).
	Hdrct uint8 `json:"hdrct"`
}

// ReadRequest is the header of an RDMA Read Request.
type ReadRequest struct {
	SinkSTag uint32 `json:"sink_stag"`
	SinkTO   uint64 `json:"sink_to"`
	Size     uint32 `json:"size"`
	SrcSTag  uint32 `json:"src_stag"`
	SrcTO    uint64 `json:"src_to"`
}

// Segment is one DDP segment with its RDMAP header (RFC 5041 5, RFC 5040 4).
type Segment struct {
	Tagged bool
	Last   bool
	DV     uint8 // DDP version, 1
	RV     uint8 // RDMAP version, 1
	Opcode uint8
	SE     bool // solicited event (the Send and Immediate opcodes that say so)
	// Tagged buffer model.
	STag uint32
	TO   uint64
	// Untagged buffer model.
	InvalSTag uint32 // Send with Invalidate: the STag to invalidate
	QN        uint32
	MSN       uint32
	MO        uint32
	RR        ReadRequest // Opcode OpReadRequest
	Term      Terminate   // Opcode OpTerminate
	// HeaderLen counts the DDP and RDMAP header bytes; the rest of the
	// ULPDU is payload.
	HeaderLen int
}

// DDP header lengths.
const (
	TaggedLen   = 14
	UntaggedLen = 18
	readReqLen  = 28
	termLen     = 4
)

// ParseSegment decodes the DDP and RDMAP headers at the start of a ULPDU
// of ulpLen bytes (b holds what the capture kept of it). It fails when the
// versions are not 1, the opcode's buffer model is the wrong one, or the
// headers do not fit: signs of framing gone astray.
func ParseSegment(b []byte, ulpLen int) (Segment, error) {
	var s Segment
	if len(b) < 2 {
		return s, fmt.Errorf("DDP header not captured")
	}
	s.Tagged = b[0]&0x80 != 0
	s.Last = b[0]&0x40 != 0
	s.DV = b[0] & 0x03
	s.RV = b[1] >> 6
	s.Opcode = b[1] & 0x0f
	if s.DV != 1 || s.RV != 1 {
		return s, fmt.Errorf("DDP version %d, RDMAP version %d (want 1 and 1)", s.DV, s.RV)
	}
	if int(s.Opcode) >= len(opNames) {
		return s, fmt.Errorf("reserved RDMAP opcode %d", s.Opcode)
	}
	if s.Tagged != tagged(s.Opcode) && s.Opcode != OpImmediate && s.Opcode != OpImmediateSE {
		return s, fmt.Errorf("%s in the %s buffer model", OpName(s.Opcode), map[bool]string{true: "tagged", false: "untagged"}[s.Tagged])
	}
	s.SE = s.Opcode == OpSendSE || s.Opcode == OpSendSEInv || s.Opcode == OpImmediateSE
	n := UntaggedLen
	if s.Tagged {
		n = TaggedLen
	}
	switch s.Opcode {
	case OpReadRequest:
		n += readReqLen
	case OpTerminate:
		n += termLen
	}
	if n > ulpLen {
		return s, fmt.Errorf("%s headers of %d bytes in a ULPDU of %d", OpName(s.Opcode), n, ulpLen)
	}
	if s.Opcode == OpTerminate {
		s.HeaderLen = ulpLen // the terminated message's headers follow: no payload
	} else {
		s.HeaderLen = n
	}
	if len(b) < n {
		return s, errHeaderCut
	}
	if s.Tagged {
		s.STag = binary.BigEndian.Uint32(b[2:])
		s.TO = binary.BigEndian.Uint64(b[6:])
		return s, nil
	}
	s.InvalSTag = binary.BigEndian.Uint32(b[2:])
	s.QN = binary.BigEndian.Uint32(b[6:])
	s.MSN = binary.BigEndian.Uint32(b[10:])
	s.MO = binary.BigEndian.Uint32(b[14:])
	r := b[UntaggedLen:]
	switch s.Opcode {
	case OpReadRequest:
		s.RR = ReadRequest{
			SinkSTag: binary.BigEndian.Uint32(r[0:]),
			SinkTO:   binary.BigEndian.Uint64(r[4:]),
			Size:     binary.BigEndian.Uint32(r[12:]),
			SrcSTag:  binary.BigEndian.Uint32(r[16:]),
			SrcTO:    binary.BigEndian.Uint64(r[20:]),
		}
	case OpTerminate:
		s.Term = Terminate{Layer: r[0] >> 4, EType: r[0] & 0x0f, Code: r[1], Hdrct: r[2] >> 5}
	}
	return s, nil
}

type headerCut struct{}

func (headerCut) Error() string { return "DDP/RDMAP headers cut by the capture's snaplen" }

// errHeaderCut: the versions and opcode were read but not all the header
// fields (the snaplen cut them).
var errHeaderCut error = headerCut{}

// PadLen is the pad after a ULPDU of n bytes: the length field, ULPDU and
// pad end on a four-byte boundary.
func PadLen(n int) int { return (4 - (n+2)%4) % 4 }

// MarkerInterval is the spacing of MPA markers in TCP sequence space.
const MarkerInterval = 512
