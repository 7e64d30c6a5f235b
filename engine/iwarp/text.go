package iwarp

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteText writes the iWARP connections for a person, times in seconds
// since first (the capture's first frame): one block per connection with
// its MPA handshake, then per direction the TCP and FPDU counts and the
// opcode table, as engine/roce writes RoCEv2 connections.
func WriteText(w io.Writer, s *Summary, first time.Time) error {
	b := &strings.Builder{}
	fmt.Fprintf(b, "iWARP %d connections (of %d TCP connections)\n", len(s.Conns), s.TCPConns)
	if s.Untracked > 0 {
		fmt.Fprintf(b, "  %d segments of connections beyond the first %d not followed\n", s.Untracked, MaxConns)
	}
	rel := func(t time.Time) string { return fmt.Sprintf("%.6f", t.Sub(first).Seconds()) }
	for _, c := range s.Conns {
		d0 := c.Dirs[0]
		fmt.Fprintf(b, "\niWARP connection %s <-> %s", d0.Src, d0.Dst)
		if c.BeganBefore {
			b.WriteString(" (began before the capture: no SYN seen")
			if c.Request == nil && c.Reply == nil {
				b.WriteString(", no MPA handshake: markers and CRCs taken as off")
			}
			b.WriteString(")")
		}
		b.WriteString("\n")
		for _, m := range []*MPAFrame{c.Request, c.Reply} {
			if m == nil {
				continue
			}
			fmt.Fprintf(b, "  %s: revision %d, markers %s, CRC %s, private data %d bytes", m.Name(), m.Rev,
				onOff(m.Markers), onOff(m.CRC), m.PDLen)
			if m.Reject {
				b.WriteString(", REJECTED")
			}
			if m.Enhanced {
				b.WriteString(", enhanced (MPAv2)")
			}
			if m.HasIRDORD {
				fmt.Fprintf(b, ", IRD %d ORD %d", m.IRD, m.ORD)
				var rtr []string
				if m.PeerToPeer {
					rtr = append(rtr, "peer-to-peer")
				}
				if m.ZeroLenRTR {
					rtr = append(rtr, "zero-length Send RTR")
				}
				if m.WriteRTR {
					rtr = append(rtr, "Write RTR")
				}
				if m.ReadRTR {
					rtr = append(rtr, "Read RTR")
				}
				if len(rtr) > 0 {
					fmt.Fprintf(b, " (%s)", strings.Join(rtr, ", "))
				}
			}
			b.WriteString("\n")
		}
		for _, d := range c.Dirs {
			if d.Segments == 0 {
				continue
			}
			fmt.Fprintf(b, "  %s -> %s: %d TCP segments, %d bytes, %s .. %s\n", d.Src, d.Dst, d.Segments, d.Bytes,
				rel(d.First), rel(d.Last))
			fmt.Fprintf(b, "    MPA frames %d, FPDUs %d (%d bytes, payload %d bytes), markers %d\n",
				d.MPAFrames, d.FPDUs, d.FPDUBytes, d.PayloadBytes, d.Markers)
			crc := "not negotiated"
			if c.CRC {
				crc = fmt.Sprintf("checked %d (FPDUs captured whole), bad %d", d.CRCChecked, d.CRCBad)
			}
			fmt.Fprintf(b, "    CRC32c %s\n", crc)
			fmt.Fprintf(b, "    TCP retransmitted segments %d, out of order %d, zero windows %d, bytes not captured (snaplen) %d, bytes missing %d\n",
				d.Retransmits, d.OutOfOrder, d.ZeroWindows, d.NotCaptured, d.Missing)
			if d.LostSync > 0 || d.Incomplete > 0 {
				fmt.Fprintf(b, "    FPDU framing lost %d times, FPDUs cut by the capture's end %d\n", d.LostSync, d.Incomplete)
				if d.LostSync > 0 && d.NotCaptured > 0 {
					b.WriteString("    (the snaplen cut where an FPDU header was: FPDUs were not counted until a segment began with one; capture with a larger snaplen to count every one)\n")
				}
			}
			for _, t := range d.Terminates {
				fmt.Fprintf(b, "    Terminate: layer %s, error type %d, error code 0x%02x\n", TermLayerName(t.Layer), t.EType, t.Code)
			}
			if len(d.Ops) > 0 {
				writeOps(b, d.Ops, rel)
			}
		}
	}
	if len(s.Conns) > 1 && len(s.Opcodes) > 0 {
		b.WriteString("\nall iWARP connections\n")
		writeOps(b, s.Opcodes, rel)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func onOff(v bool) string {
	if v {
		return "on"
	}
	return "off"
}

func writeOps(b *strings.Builder, ops []*OpStats, rel func(time.Time) string) {
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "    RDMAP opcode\t#\tFPDUs\tbytes\tpayload\tfirst\tlast\t\n")
	for _, o := range ops {
		fmt.Fprintf(tw, "    %s\t%d\t%d\t%d\t%d\t%s\t%s\t\n", o.Name, o.Opcode, o.FPDUs, o.Bytes, o.PayloadBytes, rel(o.First), rel(o.Last))
	}
	tw.Flush()
}
