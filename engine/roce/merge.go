package roce

import "sort"

// Merge is the Summary one Add of every packet in file order would have
// made, from the summaries of a split scan (ScanSplit: each RoCEv2 flow's
// packets in one part, in order). ok is false when the parts cannot say
// it: more than MaxFlows flows, whose overflow line depends on the order
// of packets across flows (then scan again on one core). Call Finish on
// the result, not on the parts.
func Merge(parts []*Summary) (s *Summary, ok bool) {
	s = NewSummary()
	nFlows := 0
	for _, p := range parts {
		if p.Overflow != nil {
			return nil, false
		}
		nFlows += len(p.Flows)
	}
	if nFlows > MaxFlows {
		return nil, false
	}
	if nFlows > 0 {
		s.Flows = make([]*Flow, 0, nFlows) // nil when none, as Add leaves it
	}
	var cmTotal int64
	for _, p := range parts {
		if p.Frames == 0 {
			continue
		}
		if s.Frames == 0 || p.firstOrd < s.firstOrd {
			s.First, s.firstOrd = p.First, p.firstOrd
		}
		if s.Frames == 0 || p.lastOrd > s.lastOrd {
			s.Last, s.lastOrd = p.Last, p.lastOrd
		}
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
		for k, f := range p.flows {
			s.flows[k] = f
		}
		s.Flows = append(s.Flows, p.Flows...)
		for op, o := range p.ops {
			if o != nil {
				s.ops[op] = mergeOp(s.ops[op], o)
			}
		}
		// Each part kept the first maxCMEvents of its own messages, so
		// the first maxCMEvents of all are among them.
		s.CM = append(s.CM, p.CM...)
		cmTotal += int64(len(p.CM)) + p.CMDropped
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

// mergeOp adds b's packets to a (nil: none yet), keeping First and Last of
// the earlier and the later packet by Packet.Ord.
func mergeOp(a, b *OpStats) *OpStats {
	if a == nil {
		c := *b
		return &c
	}
	if b.firstOrd < a.firstOrd {
		a.First, a.firstOrd = b.First, b.firstOrd
	}
	if b.lastOrd > a.lastOrd {
		a.Last, a.lastOrd = b.Last, b.lastOrd
	}
	a.Packets += b.Packets
	a.Bytes += b.Bytes
	a.PayloadBytes += b.PayloadBytes
	return a
}
