package iwarp

import (
	"fmt"
	"io"
	"net/netip"
	"strings"

	"github.com/rlab-dev/rlab/engine/iograph"
)

// IOSeries is the IO graph series an RDMAP opcode's FPDUs are drawn in
// besides iWARP's own ("" for none).
func IOSeries(op uint8) string {
	switch op {
	case OpWrite:
		return iograph.SeriesWrite
	case OpReadRequest, OpReadResponse:
		return iograph.SeriesRead
	case OpSend, OpSendInv, OpSendSE, OpSendSEInv:
		return iograph.SeriesSend
	}
	return ""
}

// Ladder collects the first N MPA frames and FPDUs of the first iWARP
// connection, for a sequence ("ladder") diagram like engine/roce's.
type Ladder struct {
	N    int
	A, B netip.AddrPort // left (the MPA initiator, when known) and right ends
	// Keep, when set, selects the events the diagram may show (a
	// connection, a time window); the first kept one names the connection.
	Keep func(*Event) bool
	// Resent keeps only retransmitted TCP segments (Analyzer.OnResent).
	Resent bool
	conn   *Conn
	rows   []LadderRow
	t0     int64
}

// LadderRow is one arrow of the diagram.
type LadderRow struct {
	Frame   int     `json:"frame"`
	Time    float64 `json:"time"`     // seconds since the first row
	ToRight bool    `json:"to_right"` // from A to B
	Label   string  `json:"label"`    // "Send [last] MSN 1"
	Detail  string  `json:"detail"`   // "QN 0 MO 0, payload 100"
}

// NewLadder returns a Ladder that keeps n arrows.
func NewLadder(n int) *Ladder { return &Ladder{N: n} }

// Rows returns the arrows collected so far.
func (l *Ladder) Rows() []LadderRow { return l.rows }

// Add considers one event (Analyzer.OnEvent).
func (l *Ladder) Add(e *Event) {
	if len(l.rows) >= l.N {
		return
	}
	if l.Keep != nil && !l.Keep(e) || e.Resent != l.Resent {
		return
	}
	if l.conn == nil {
		l.conn = e.Conn
		l.t0 = e.Time.UnixNano()
	}
	if e.Conn != l.conn {
		return
	}
	d := e.Conn.Dirs[e.Dir]
	if len(l.rows) == 0 {
		l.A, l.B = d.Src, d.Dst
		if e.MPA != nil && e.MPA.Reply {
			l.A, l.B = d.Dst, d.Src
		}
	}
	label, detail := describe(e)
	l.rows = append(l.rows, LadderRow{Frame: e.EndFrame, // as Wireshark numbers a reassembled PDU
		Time:    float64(e.Time.UnixNano()-l.t0) / 1e9,
		ToRight: d.Src == l.A, Label: label, Detail: detail})
}

func describe(e *Event) (string, string) {
	if e.Resent {
		return "TCP retransmission", fmt.Sprintf("seq %d, %d bytes", e.Seq, e.Len)
	}
	if m := e.MPA; m != nil {
		var d []string
		d = append(d, fmt.Sprintf("rev %d", m.Rev), "markers "+onOff(m.Markers), "CRC "+onOff(m.CRC),
			fmt.Sprintf("private data %d", m.PDLen))
		if m.HasIRDORD {
			d = append(d, fmt.Sprintf("IRD %d ORD %d", m.IRD, m.ORD))
		}
		if m.Reject {
			d = append(d, "REJECTED")
		}
		return m.Name(), strings.Join(d, ", ")
	}
	g := &e.Seg
	label := OpName(g.Opcode)
	if g.Opcode != OpUnknown {
		if g.Last {
			label += " [last]"
		} else {
			label += " [more]"
		}
	}
	var d []string
	add := func(f string, a ...any) { d = append(d, fmt.Sprintf(f, a...)) }
	switch {
	case g.Opcode == OpUnknown:
	case g.Tagged:
		add("STag 0x%x TO 0x%x", g.STag, g.TO)
	default:
		add("QN %d MSN %d MO %d", g.QN, g.MSN, g.MO)
	}
	switch g.Opcode {
	case OpSendInv, OpSendSEInv:
		add("invalidate STag 0x%x", g.InvalSTag)
	case OpReadRequest:
		add("read %d from STag 0x%x TO 0x%x into STag 0x%x TO 0x%x", g.RR.Size, g.RR.SrcSTag, g.RR.SrcTO, g.RR.SinkSTag, g.RR.SinkTO)
	case OpTerminate:
		add("layer %s, error type %d, code 0x%02x", TermLayerName(g.Term.Layer), g.Term.EType, g.Term.Code)
	}
	if p := e.ULPDULen - g.HeaderLen; p > 0 && g.Opcode != OpUnknown {
		add("payload %d", p)
	}
	if e.HeadersCut {
		add("[headers cut by snaplen]")
	}
	if e.CRCChecked && !e.CRCValid {
		add("[bad CRC]")
	}
	return label, strings.Join(d, ", ")
}

const arrowWidth = 46

// WriteLadder draws the diagram as engine/roce draws RoCEv2's.
func (l *Ladder) WriteLadder(w io.Writer) error {
	b := &strings.Builder{}
	if l.conn == nil {
		b.WriteString("no iWARP connection")
		if l.Resent {
			b.WriteString(" with retransmitted TCP segments")
		}
		if l.Keep != nil {
			b.WriteString(" in the selection")
		}
		b.WriteString("\n")
		_, err := io.WriteString(w, b.String())
		return err
	}
	what := "iWARP MPA frames and FPDUs"
	if l.Resent {
		what = "retransmitted TCP segments of iWARP"
	}
	fmt.Fprintf(b, "first %d %s between %s and %s\n\n", len(l.rows), what, l.A, l.B)
	fmt.Fprintf(b, "%6s %9s  %-*s%s\n", "frame", "time", arrowWidth+1, l.A.String(), l.B.String())
	for _, r := range l.rows {
		label := " " + r.Label + " "
		if len(label) > arrowWidth-4 {
			label = label[:arrowWidth-4]
		}
		dash := strings.Repeat("-", arrowWidth-3-len(label))
		arrow := "|<" + dash + label + "--|"
		if r.ToRight {
			arrow = "|--" + label + dash + ">|"
		}
		fmt.Fprintf(b, "%6d %9.6f  %s  %s\n", r.Frame, r.Time, arrow, r.Detail)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
