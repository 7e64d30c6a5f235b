package roce

import (
	"sort"
	"time"
)

// Merge is the Summary one Add of every packet in file order would have
// made, from the summaries of a split scan (ScanSplit, ScanSplitSummaries):
// each part counted the frames its worker decoded (Summary.count), of any
// flow, and a flow's order-dependent part (its PSNs, CM messages) is in
// the part of the worker that owns it, so the parts of one flow are added
// up here. ok is false when the parts cannot say it: more than MaxFlows
// flows, whose overflow line depends on the order of packets across flows
// (then scan again on one core). Call Finish on the result, not on the
// parts.
func Merge(parts []*Summary) (s *Summary, ok bool) {
	s = NewSummary()
	for _, p := range parts {
		if p.Overflow != nil {
			return nil, false
		}
	}
	var cmTotal int64
	for _, p := range parts {
		for _, f := range p.Flows {
			k := FlowKey{f.Src, f.Dst, f.DestQP}
			m := s.flows[k]
			if m == nil {
				if len(s.flows) >= MaxFlows {
					return nil, false
				}
				m = &Flow{Src: f.Src, Dst: f.Dst, DestQP: f.DestQP}
				s.flows[k] = m
				s.Flows = append(s.Flows, m)
			}
			mergeFlow(m, f)
		}
		// Each part kept the first maxCMEvents of its own messages, so
		// the first maxCMEvents of all are among them.
		s.CM = append(s.CM, p.CM...)
		cmTotal += int64(len(p.CM)) + p.CMDropped
		if p.Frames == 0 {
			continue
		}
		widenSpan(s.Frames == 0, &s.First, &s.firstOrd, &s.Last, &s.lastOrd, p.First, p.firstOrd, p.Last, p.lastOrd)
		s.Frames += p.Frames
		s.Bytes += p.Bytes
		s.RoCEPackets += p.RoCEPackets
		s.RoCEBytes += p.RoCEBytes
		s.TCPPackets += p.TCPPackets
		s.TCPBytes += p.TCPBytes
		s.Other += p.Other
		s.Truncated += p.Truncated
		s.HeadersCut += p.HeadersCut
		s.Malformed += p.Malformed
		s.BadOpcode += p.BadOpcode
		s.BadLink += p.BadLink
		s.ICRCChecked += p.ICRCChecked
		s.ICRCBad += p.ICRCBad
		s.CutShort = s.CutShort || p.CutShort
		for op, o := range p.ops {
			if o != nil {
				s.ops[op] = mergeOp(s.ops[op], o)
			}
		}
	}
	sort.Slice(s.Flows, func(i, j int) bool { return s.Flows[i].firstOrd < s.Flows[j].firstOrd })
	sort.SliceStable(s.CM, func(i, j int) bool { return s.CM[i].ord < s.CM[j].ord })
	if len(s.CM) > maxCMEvents {
		s.CM = s.CM[:maxCMEvents]
	}
	s.CMDropped = cmTotal - int64(len(s.CM))
	if len(s.CM) == 0 {
		s.CM = nil
	}
	return s, true
}

// mergeFlow adds b, one part's share of a flow, to m: its counts, First
// and Last by Packet.Ord, and its opcodes. A part with no packet of the
// flow (its owner, given only PSNs decoded elsewhere) adds only those.
func mergeFlow(m, b *Flow) {
	m.Retransmits += b.Retransmits
	if b.Packets == 0 {
		return
	}
	widenSpan(m.Packets == 0, &m.First, &m.firstOrd, &m.Last, &m.lastOrd, b.First, b.firstOrd, b.Last, b.lastOrd)
	m.Packets += b.Packets
	m.Bytes += b.Bytes
	m.PayloadBytes += b.PayloadBytes
	m.NAKs += b.NAKs
	m.RNRNAKs += b.RNRNAKs
	m.CNPs += b.CNPs
	m.ECN += b.ECN
	for c, n := range b.NAKCodes {
		if m.NAKCodes == nil {
			m.NAKCodes = map[uint8]int64{}
		}
		m.NAKCodes[c] += n
	}
	for _, o := range b.Ops {
		if i := m.opIdx[o.Opcode]; i != 0 {
			mergeOp(m.Ops[i-1], o)
			continue
		}
		m.Ops = append(m.Ops, mergeOp(nil, o))
		m.opIdx[o.Opcode] = uint16(len(m.Ops))
	}
}

// mergeOp adds b's packets to a (nil: none yet), keeping First and Last of
// the earlier and the later packet by Packet.Ord.
func mergeOp(a, b *OpStats) *OpStats {
	if a == nil {
		c := *b
		return &c
	}
	widenSpan(false, &a.First, &a.firstOrd, &a.Last, &a.lastOrd, b.First, b.firstOrd, b.Last, b.lastOrd)
	a.Packets += b.Packets
	a.Bytes += b.Bytes
	a.PayloadBytes += b.PayloadBytes
	return a
}

// widenSpan keeps, of a merged span (first and last, with their
// Packet.Ord) and a part's, the earlier first and the later last by
// Packet.Ord; empty says the merged one has none yet: the part's is taken.
func widenSpan(empty bool, first *time.Time, firstOrd *int64, last *time.Time, lastOrd *int64,
	partFirst time.Time, partFirstOrd int64, partLast time.Time, partLastOrd int64) {
	if empty || partFirstOrd < *firstOrd {
		*first, *firstOrd = partFirst, partFirstOrd
	}
	if empty || partLastOrd > *lastOrd {
		*last, *lastOrd = partLast, partLastOrd
	}
}
