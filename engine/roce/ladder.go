package roce

import (
	"fmt"
	"io"
	"net/netip"
	"strings"
)

// Ladder collects the first N RoCE packets between the two ends of the
// first RoCE packet seen, for a sequence ("ladder") diagram.
type Ladder struct {
	N    int
	A, B netip.Addr // left and right ends
	// Keep, when set, selects the packets the diagram may show (a
	// connection, a time window); the first kept packet names its ends.
	Keep func(*Packet) bool
	// Resent keeps only the request packets whose PSN was not after the
	// highest already seen on their flow (the go-back-N resends
	// Flow.Retransmits counts) and the NAKs that asked for them.
	Resent bool
	rows   []ladderRow
	seen   bool
	maxPSN map[FlowKey]uint32
}

type ladderRow struct {
	number   int
	t        float64 // seconds since the first row
	toRight  bool
	label    string
	detail   string
	rawFirst int64
}

// LadderRow is one arrow of the diagram, for callers that draw it
// themselves (the HTML report).
type LadderRow struct {
	Frame   int     `json:"frame"`
	Time    float64 `json:"time"`     // seconds since the first row
	ToRight bool    `json:"to_right"` // from A to B
	Label   string  `json:"label"`    // "RDMA WRITE First PSN 11302718"
	Detail  string  `json:"detail"`   // "QP 0x00001a, VA 0x... rkey 0x... len 4096"
}

// Rows returns the arrows collected so far.
func (l *Ladder) Rows() []LadderRow {
	out := make([]LadderRow, len(l.rows))
	for i, r := range l.rows {
		out[i] = LadderRow{Frame: r.number, Time: r.t, ToRight: r.toRight, Label: r.label, Detail: r.detail}
	}
	return out
}

// NewLadder returns a Ladder that keeps n packets.
func NewLadder(n int) *Ladder { return &Ladder{N: n} }

// Add considers one decoded frame.
func (l *Ladder) Add(p *Packet) {
	if len(l.rows) >= l.N || !p.HasBTH || p.Problem == ProblemMalformed {
		return
	}
	if l.Keep != nil && !l.Keep(p) {
		return
	}
	if l.Resent && !l.resent(p) {
		return
	}
	if !l.seen {
		l.A, l.B, l.seen = p.Src, p.Dst, true
	}
	var right bool
	switch {
	case p.Src == l.A && p.Dst == l.B:
		right = true
	case p.Src == l.B && p.Dst == l.A:
	default:
		return
	}
	r := ladderRow{number: p.Number, toRight: right, rawFirst: p.Time.UnixNano()}
	if len(l.rows) > 0 {
		r.t = float64(r.rawFirst-l.rows[0].rawFirst) / 1e9
	}
	r.label, r.detail = describe(p)
	l.rows = append(l.rows, r)
}

// resent tracks the highest PSN per flow as Summary does and says
// whether p is a resend (or a NAK).
func (l *Ladder) resent(p *Packet) bool {
	if p.Headers&HdrAETH != 0 && p.AETH.Kind() == AETHNak {
		return true
	}
	info := &opTable[p.BTH.Opcode]
	if !info.request || info.Transport == UD || info.Class == ClassCNP {
		return false
	}
	if l.maxPSN == nil {
		l.maxPSN = map[FlowKey]uint32{}
	}
	k := FlowKey{p.Src, p.Dst, p.BTH.DestQP}
	max, ok := l.maxPSN[k]
	if ok {
		if d := (p.BTH.PSN - max) & 0xffffff; d == 0 || d >= 1<<23 {
			return true
		}
	}
	if len(l.maxPSN) < MaxFlows || ok {
		l.maxPSN[k] = p.BTH.PSN
	}
	return false
}

// describe returns the arrow label and the detail of one packet.
func describe(p *Packet) (string, string) {
	op := p.Op()
	label := fmt.Sprintf("%s PSN %d", op.Name, p.BTH.PSN)
	if op.Transport != RC {
		label = op.Transport.String() + " " + label
	}
	switch {
	case p.CM.Attr != 0:
		label = "CM " + p.CM.Name()
	case op.Transport == CNP:
		label = "CNP"
	}
	var d []string
	add := func(f string, a ...any) { d = append(d, fmt.Sprintf(f, a...)) }
	add("QP 0x%06x", p.BTH.DestQP)
	if p.Headers&HdrDETH != 0 {
		add("QKey 0x%08x src QP 0x%06x", p.DETH.QKey, p.DETH.SrcQP)
	}
	if p.Headers&HdrRETH != 0 {
		add("VA 0x%x rkey 0x%x len %d", p.RETH.VA, p.RETH.RKey, p.RETH.DMALen)
	}
	if p.Headers&HdrAtomicETH != 0 {
		add("VA 0x%x rkey 0x%x swap/add 0x%x compare 0x%x", p.Atomic.VA, p.Atomic.RKey, p.Atomic.SwapAdd, p.Atomic.Compare)
	}
	if p.Headers&HdrAETH != 0 {
		switch p.AETH.Kind() {
		case AETHAck:
			add("ACK MSN %d", p.AETH.MSN)
		case AETHRNRNak:
			add("RNR NAK timer %d MSN %d", p.AETH.Value(), p.AETH.MSN)
		case AETHNak:
			add("NAK %s MSN %d", NAKName(p.AETH.Value()), p.AETH.MSN)
		default:
			add("AETH syndrome 0x%02x MSN %d", p.AETH.Syndrome, p.AETH.MSN)
		}
	}
	if p.Headers&HdrAtomicAckETH != 0 {
		add("original 0x%x", p.OrigData)
	}
	if p.Headers&HdrImmDt != 0 {
		add("imm 0x%08x", p.ImmDt)
	}
	if p.Headers&HdrIETH != 0 {
		add("invalidate rkey 0x%x", p.IETH)
	}
	if c := &p.CM; c.Attr != 0 {
		add("comm ID 0x%08x/0x%08x", c.LocalCommID, c.RemoteCommID)
		if c.LocalQPN != 0 {
			add("QPN 0x%06x", c.LocalQPN)
		}
		if c.Attr == CMDreq {
			add("QPN 0x%06x", c.RemoteQPN)
		}
		if b, ok := c.Buffer(); ok {
			add("private data: buffer VA 0x%x rkey 0x%x len %d", b.Addr, b.RKey, b.Len)
		}
	} else if p.PayloadLen > 0 {
		add("payload %d", p.PayloadLen)
	}
	if p.BTH.FECN {
		add("FECN")
	}
	if p.BTH.BECN {
		add("BECN")
	}
	if p.BTH.AckReq {
		add("ack req")
	}
	if p.Problem != ProblemNone {
		add("[%s]", p.Problem)
	}
	if p.ICRCChecked && !p.ICRCValid {
		add("[bad ICRC]")
	}
	return label, strings.Join(d, ", ")
}

// arrowWidth is the width of the space between the two lifelines.
const arrowWidth = 46

// WriteLadder draws the diagram: the left end's lifeline, arrows, the
// right end's lifeline and each packet's header fields.
func (l *Ladder) WriteLadder(w io.Writer) error {
	b := &strings.Builder{}
	if !l.seen {
		switch {
		case l.Resent:
			b.WriteString("no resent RoCEv2 packets or NAKs")
		default:
			b.WriteString("no RoCEv2 packets")
		}
		if l.Keep != nil {
			b.WriteString(" in the selection")
		}
		b.WriteString("\n")
		_, err := io.WriteString(w, b.String())
		return err
	}
	what := "RoCEv2 packets"
	if l.Resent {
		what = "resent RoCEv2 packets and NAKs"
	}
	fmt.Fprintf(b, "first %d %s between %s and %s\n\n", len(l.rows), what, l.A, l.B)
	left, right := l.A.String(), l.B.String()
	fmt.Fprintf(b, "%6s %9s  %-*s%s\n", "frame", "time", arrowWidth+1, left, right)
	for _, r := range l.rows {
		label := " " + r.label + " "
		if len(label) > arrowWidth-4 {
			label = label[:arrowWidth-4]
		}
		dash := strings.Repeat("-", arrowWidth-3-len(label))
		var arrow string
		if r.toRight {
			arrow = "|--" + label + dash + ">|"
		} else {
			arrow = "|<" + dash + label + "--|"
		}
		fmt.Fprintf(b, "%6d %9.6f  %s  %s\n", r.number, r.t, arrow, r.detail)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
