package roce

import (
	"encoding/hex"
	"net/netip"
	"sort"
	"time"
)

// OpStats counts the packets of one opcode.
type OpStats struct {
	Opcode       uint8     `json:"opcode"`
	Name         string    `json:"name"`
	Transport    string    `json:"transport"`
	Packets      int64     `json:"packets"`
	Bytes        int64     `json:"bytes"`         // frame bytes on the wire
	PayloadBytes int64     `json:"payload_bytes"` // IB payload bytes
	First        time.Time `json:"first"`
	Last         time.Time `json:"last"`

	firstOrd, lastOrd int64 // Packet.Ord of First and Last, for Merge
}

func (o *OpStats) add(p *Packet) {
	if o.Packets == 0 {
		o.First, o.firstOrd = p.Time, p.ord
	}
	o.Packets++
	o.Bytes += int64(p.WireLen)
	o.PayloadBytes += int64(p.PayloadLen)
	o.Last, o.lastOrd = p.Time, p.ord
}

// FlowKey names one direction of a RoCE conversation: the IP addresses and
// the destination QP of the packets.
type FlowKey struct {
	Src, Dst netip.Addr
	DestQP   uint32
}

// Flow is what was seen on one FlowKey.
type Flow struct {
	Src          netip.Addr `json:"src"`
	Dst          netip.Addr `json:"dst"`
	DestQP       uint32     `json:"dest_qp"`
	Packets      int64      `json:"packets"`
	Bytes        int64      `json:"bytes"`
	PayloadBytes int64      `json:"payload_bytes"`
	First        time.Time  `json:"first"`
	Last         time.Time  `json:"last"`
	// Retransmits counts request packets whose PSN was not after the
	// highest PSN already seen on this flow (go-back-N resends).
	Retransmits int64 `json:"retransmitted_psns"`
	NAKs        int64 `json:"naks"`
	RNRNAKs     int64 `json:"rnr_naks"`
	CNPs        int64 `json:"cnps"`
	ECN         int64 `json:"fecn_marked"`
	// NAKCodes counts NAKs by code (0 PSN sequence error, 1 invalid
	// request, 2 remote access error, 3 remote operational error).
	NAKCodes map[uint8]int64 `json:"nak_codes,omitempty"`
	Ops      []*OpStats      `json:"opcodes"`

	opIdx   [256]uint16 // index+1 into Ops
	maxPSN  uint32
	havePSN bool
	// Packet.Ord of the flow's first and last packet, for Merge
	firstOrd, lastOrd int64
	owner             int // flowOwner+1 in a split scan's summary; 0: not yet
}

// CMEvent is one Communication Manager message: the control plane.
type CMEvent struct {
	Number       int        `json:"frame"`
	Time         time.Time  `json:"time"`
	Src          netip.Addr `json:"src"`
	Dst          netip.Addr `json:"dst"`
	Message      string     `json:"message"`
	LocalCommID  uint32     `json:"local_comm_id"`
	RemoteCommID uint32     `json:"remote_comm_id"`
	QPN          uint32     `json:"qpn,omitempty"` // REQ/REP local QPN, DREQ remote QPN
	StartPSN     uint32     `json:"start_psn,omitempty"`
	Port         uint16     `json:"port,omitempty"` // RDMA-CM port of a REQ
	Reason       uint16     `json:"reject_reason,omitempty"`
	// Truncated: the capture cut the message; fields past the cut read 0.
	Truncated bool `json:"truncated,omitempty"`
	// PrivateData is the message's private data in hex up to its last
	// non-zero byte (senders pad it with zeros to PrivateSize bytes);
	// PrivateCut says the capture kept only PrivateKept bytes of it.
	PrivateData string `json:"private_data,omitempty"`
	PrivateSize int    `json:"private_data_size,omitempty"`
	PrivateCut  bool   `json:"private_data_cut,omitempty"`
	PrivateKept int    `json:"private_data_kept,omitempty"`
	// RDMACM is a REQ's RDMA-CM header: "10.0.0.2:40000 -> 10.0.0.1:7471".
	RDMACM string `json:"rdma_cm,omitempty"`
	// Buffer is the address and rkey rlab's example programs hand out in
	// their private data (labs/programs), when it holds one.
	Buffer *BufferInfo `json:"buffer,omitempty"`

	ord int64 // Packet.Ord of the message, for Merge
}

// cmPrivate fills e's private data fields from c.
func (e *CMEvent) cmPrivate(c *CM) {
	p := c.Private()
	end := len(p)
	for end > 0 && p[end-1] == 0 {
		end--
	}
	if end == 0 && len(p) == c.PrivateSize() {
		return // none: all zeros, as most RTUs and DREPs
	}
	e.PrivateSize = c.PrivateSize()
	if len(p) < e.PrivateSize {
		e.PrivateCut, e.PrivateKept = true, len(p)
	}
	e.PrivateData = hex.EncodeToString(p[:end])
	if src, dst, ok := c.RDMACM(); ok {
		e.RDMACM = src.String() + " -> " + dst.String()
	}
	if b, ok := c.Buffer(); ok {
		e.Buffer = &b
	}
}

// MaxFlows bounds the connections a summary lists one by one.
const MaxFlows = 10000

// maxCMEvents bounds the control-plane list of a summary (a class lab
// capture may hold thousands of connections).
const maxCMEvents = 1000

// Summary is the analysis of one capture file.
type Summary struct {
	File        string    `json:"file,omitempty"`
	Frames      int64     `json:"frames"`
	Bytes       int64     `json:"bytes"`
	First       time.Time `json:"first"`
	Last        time.Time `json:"last"`
	RoCEPackets int64     `json:"roce_packets"`
	RoCEBytes   int64     `json:"roce_bytes"`
	TCPPackets  int64     `json:"tcp_packets"`
	TCPBytes    int64     `json:"tcp_bytes"`
	Other       int64     `json:"other_packets"`
	// Truncated counts frames the capture kept only part of (snaplen);
	// HeadersCut those of them cut inside the headers this decoder reads.
	Truncated  int64 `json:"truncated"`
	HeadersCut int64 `json:"headers_truncated"`
	Malformed  int64 `json:"malformed"`
	BadOpcode  int64 `json:"reserved_opcode"`
	BadLink    int64 `json:"unknown_link_type"`
	// ICRCChecked counts RoCE packets captured whole, whose ICRC was
	// recomputed; ICRCBad those where it did not match.
	ICRCChecked int64 `json:"icrc_checked"`
	ICRCBad     int64 `json:"icrc_bad"`
	// CutShort: the file ends inside a frame.
	CutShort bool    `json:"file_cut_short,omitempty"`
	Flows    []*Flow `json:"connections"`
	// Overflow holds the packets of connections beyond MaxFlows.
	Overflow  *Flow      `json:"other_connections,omitempty"`
	Opcodes   []*OpStats `json:"opcodes"`
	CM        []CMEvent  `json:"cm,omitempty"`
	CMDropped int64      `json:"cm_not_listed,omitempty"`

	flows map[FlowKey]*Flow
	// recent are the flows of the last frames, most recent first: a
	// capture's frames come in runs of one conversation, often its two
	// directions in turn (requests and their ACKs), and comparing keys
	// costs less than the map.
	recent [2]recentFlow
	ops    [256]*OpStats

	firstOrd, lastOrd int64 // Packet.Ord of First and Last, for Merge
}

// NewSummary returns an empty Summary ready for Add.
func NewSummary() *Summary { return &Summary{flows: map[FlowKey]*Flow{}} }

// Add accounts one decoded frame.
func (s *Summary) Add(p *Packet) {
	if f := s.count(p); f != nil {
		s.ordered(p, f)
	}
}

// count is the part of Add that adds up in any order (a split scan's
// worker does it for every frame it decodes, into its own summary, and
// Merge adds the parts, a flow's too): the frame's counts, its flow's and
// its opcode's. First and Last are of the first and the last frame
// counted, which is file order on one worker (splitLoop claims batches in
// file order). It returns the frame's flow when the frame has a BTH, for
// ordered; nil else.
func (s *Summary) count(p *Packet) *Flow {
	if s.Frames == 0 {
		s.First, s.firstOrd = p.Time, p.ord
	}
	s.Frames++
	s.Bytes += int64(p.WireLen)
	s.Last, s.lastOrd = p.Time, p.ord
	if p.Truncated {
		s.Truncated++
	}
	switch p.Problem {
	case ProblemTruncated:
		s.HeadersCut++
	case ProblemMalformed:
		s.Malformed++
	case ProblemBadOpcode:
		s.BadOpcode++
	case ProblemUnknownLink:
		s.BadLink++
	}
	switch p.Proto {
	case ProtoTCP:
		s.TCPPackets++
		s.TCPBytes += int64(p.WireLen)
		return nil
	case ProtoOther:
		s.Other++
		return nil
	}
	s.RoCEPackets++
	s.RoCEBytes += int64(p.WireLen)
	if p.ICRCChecked {
		s.ICRCChecked++
		if !p.ICRCValid {
			s.ICRCBad++
		}
	}
	if p.Problem == ProblemMalformed || !p.HasBTH {
		return nil // no BTH to account by
	}
	f := s.flow(FlowKey{p.Src, p.Dst, p.BTH.DestQP}, p.Time)
	if f.Packets == 0 {
		f.First, f.firstOrd = p.Time, p.ord
	}
	f.Packets++
	f.Bytes += int64(p.WireLen)
	f.PayloadBytes += int64(p.PayloadLen)
	f.Last, f.lastOrd = p.Time, p.ord
	op := p.BTH.Opcode
	i := f.opIdx[op]
	if i == 0 {
		info := &opTable[op]
		f.Ops = append(f.Ops, &OpStats{Opcode: op, Name: info.Name, Transport: info.Transport.String()})
		i = uint16(len(f.Ops))
		f.opIdx[op] = i
	}
	f.Ops[i-1].add(p)
	t := s.ops[op]
	if t == nil {
		info := &opTable[op]
		t = &OpStats{Opcode: op, Name: info.Name, Transport: info.Transport.String()}
		s.ops[op] = t
	}
	t.add(p)
	if p.BTH.FECN {
		f.ECN++
	}
	if opTable[op].Class == ClassCNP {
		f.CNPs++
	}
	if p.Headers&HdrAETH != 0 {
		switch p.AETH.Kind() {
		case AETHRNRNak:
			f.RNRNAKs++
		case AETHNak:
			f.NAKs++
			if f.NAKCodes == nil {
				f.NAKCodes = map[uint8]int64{}
			}
			f.NAKCodes[p.AETH.Value()]++
		}
	}
	return f
}

// flow is the Flow of k, made when new, or the Overflow line past
// MaxFlows (made at t).
func (s *Summary) flow(k FlowKey, t time.Time) *Flow {
	if r := &s.recent[0]; r.f != nil && r.k.is(&k) {
		return r.f
	}
	if r := &s.recent[1]; r.f != nil && r.k.is(&k) {
		s.recent[0], s.recent[1] = *r, s.recent[0]
		return s.recent[0].f
	}
	f := s.flows[k]
	if f == nil && len(s.flows) >= MaxFlows {
		// Garbage on port 4791 (or a huge class lab) must not grow
		// the summary without end: the rest share one line.
		if s.Overflow == nil {
			s.Overflow = &Flow{First: t}
		}
		f = s.Overflow
	} else if f == nil {
		f = &Flow{Src: k.Src, Dst: k.Dst, DestQP: k.DestQP}
		s.flows[k] = f
		s.Flows = append(s.Flows, f)
	}
	s.recent[1], s.recent[0] = s.recent[0], recentFlow{k, f}
	return f
}

type recentFlow struct {
	k FlowKey
	f *Flow
}

// is says k == *o, field by field: == on the struct calls memequal.
func (k *FlowKey) is(o *FlowKey) bool {
	return k.DestQP == o.DestQP && k.Src == o.Src && k.Dst == o.Dst
}

// psnOrdered says whether the PSN of p (a frame with a BTH) is one that
// ordered compares with its flow's highest: a request on a connected QP.
func psnOrdered(p *Packet) bool {
	info := &opTable[p.BTH.Opcode]
	return info.Class != ClassCNP && info.request && info.Transport != UD
}

// ordered is the part of Add that must see a flow's frames in file order,
// for the frame p of flow f: a request's PSN against the highest before it
// (Retransmits), and a CM message into the control-plane list. A split
// scan does it on the worker that owns the flow.
func (s *Summary) ordered(p *Packet, f *Flow) {
	if psnOrdered(p) {
		f.trackPSN(p.BTH.PSN)
	}
	if p.CM.Attr != 0 {
		s.addCM(p)
	}
}

// trackPSN counts psn as resent unless it is after the highest PSN of
// the flow's requests so far.
func (f *Flow) trackPSN(psn uint32) {
	if f.havePSN {
		d := (psn - f.maxPSN) & 0xffffff
		if d == 0 || d >= 1<<23 {
			f.Retransmits++
			return
		}
	}
	f.maxPSN, f.havePSN = psn, true
}

// addCM lists the CM message of p (or counts it past maxCMEvents).
func (s *Summary) addCM(p *Packet) {
	if len(s.CM) >= maxCMEvents {
		s.CMDropped++
		return
	}
	c := &p.CM
	e := CMEvent{Number: p.Number, Time: p.Time, Src: p.Src, Dst: p.Dst, Message: c.Name(),
		LocalCommID: c.LocalCommID, RemoteCommID: c.RemoteCommID, StartPSN: c.StartPSN,
		Port: c.Port(), Reason: c.Reason, QPN: c.LocalQPN, Truncated: c.Partial, ord: p.ord}
	if c.Attr == CMDreq {
		e.QPN = c.RemoteQPN
	}
	e.cmPrivate(c)
	s.CM = append(s.CM, e)
}

// Finish sorts the per-opcode lists; call it once after the last Add.
func (s *Summary) Finish() {
	s.Opcodes = s.Opcodes[:0]
	for _, o := range s.ops {
		if o != nil {
			s.Opcodes = append(s.Opcodes, o)
		}
	}
	flows := s.Flows
	if s.Overflow != nil {
		flows = append(flows[:len(flows):len(flows)], s.Overflow)
	}
	for _, f := range flows {
		sort.Slice(f.Ops, func(i, j int) bool { return f.Ops[i].Opcode < f.Ops[j].Opcode })
		for i, o := range f.Ops {
			f.opIdx[o.Opcode] = uint16(i + 1)
		}
	}
}
