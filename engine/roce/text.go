package roce

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteJSON writes the summary as indented JSON.
func WriteJSON(w io.Writer, s *Summary) error {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(s)
}

// WriteText writes the summary for a person: totals, problems, then one
// table per connection and the control plane.
func WriteText(w io.Writer, s *Summary) error {
	b := &strings.Builder{}
	if s.File != "" {
		fmt.Fprintf(b, "capture %s\n", s.File)
	}
	fmt.Fprintf(b, "%d frames, %d bytes, %.6f s", s.Frames, s.Bytes, s.Last.Sub(s.First).Seconds())
	if s.Frames > 0 {
		fmt.Fprintf(b, " from %s", s.First.UTC().Format(time.RFC3339Nano))
	}
	fmt.Fprintf(b, "\nRoCEv2 %d packets (%d bytes), TCP %d packets (%d bytes), other %d\n",
		s.RoCEPackets, s.RoCEBytes, s.TCPPackets, s.TCPBytes, s.Other)
	fmt.Fprintf(b, "truncated by snaplen %d (headers cut %d), malformed %d, reserved opcode %d, unknown link type %d\n",
		s.Truncated, s.HeadersCut, s.Malformed, s.BadOpcode, s.BadLink)
	fmt.Fprintf(b, "ICRC checked %d (packets captured whole), bad %d\n", s.ICRCChecked, s.ICRCBad)
	if s.CutShort {
		b.WriteString("warning: the file ends inside a frame (capture not flushed?); every whole frame was read\n")
	}
	for _, f := range s.Flows {
		fmt.Fprintf(b, "\nconnection %s -> %s QP 0x%06x: %d packets, %d bytes, payload %d bytes, %s .. %s\n",
			f.Src, f.Dst, f.DestQP, f.Packets, f.Bytes, f.PayloadBytes, rel(s, f.First), rel(s, f.Last))
		fmt.Fprintf(b, "  retransmitted PSNs %d, NAKs %d%s, RNR NAKs %d, CNPs %d, FECN-marked %d\n",
			f.Retransmits, f.NAKs, nakCodes(f.NAKCodes), f.RNRNAKs, f.CNPs, f.ECN)
		writeOps(b, s, f.Ops, "  ")
	}
	if f := s.Overflow; f != nil {
		fmt.Fprintf(b, "\nconnections beyond the first %d: %d packets, %d bytes, payload %d bytes, %s .. %s\n",
			MaxFlows, f.Packets, f.Bytes, f.PayloadBytes, rel(s, f.First), rel(s, f.Last))
		fmt.Fprintf(b, "  retransmitted PSNs %d, NAKs %d%s, RNR NAKs %d, CNPs %d, FECN-marked %d\n",
			f.Retransmits, f.NAKs, nakCodes(f.NAKCodes), f.RNRNAKs, f.CNPs, f.ECN)
	}
	if len(s.Opcodes) > 0 {
		b.WriteString("\nall connections\n")
		writeOps(b, s, s.Opcodes, "  ")
	}
	if len(s.CM) > 0 {
		b.WriteString("\nconnection management (RDMA-CM MADs on QP1)\n")
		tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  frame\ttime\tfrom\tto\tmessage\tlocal comm ID\tremote comm ID\tQPN\tdetail")
		for _, e := range s.CM {
			qpn, detail := "", ""
			if e.QPN != 0 {
				qpn = fmt.Sprintf("0x%06x", e.QPN)
			}
			switch {
			case e.Message == "REQ" && e.Truncated:
				detail = fmt.Sprintf("port %d", e.Port)
			case e.Message == "REQ":
				detail = fmt.Sprintf("port %d, start PSN %d", e.Port, e.StartPSN)
			case e.Message == "REP":
				detail = fmt.Sprintf("start PSN %d", e.StartPSN)
			case strings.HasPrefix(e.Message, "SIDR_"):
				detail = fmt.Sprintf("port %d", e.Port)
			case e.Message == "REJ":
				detail = fmt.Sprintf("reason %d", e.Reason)
			}
			if e.Truncated {
				detail = strings.TrimPrefix(detail+", rest cut by snaplen", ", ")
			}
			fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\t0x%08x\t0x%08x\t%s\t%s\n", e.Number, rel(s, e.Time), e.Src, e.Dst,
				e.Message, e.LocalCommID, e.RemoteCommID, qpn, detail)
		}
		tw.Flush()
		writePrivate(b, s.CM)
		if s.CMDropped > 0 {
			fmt.Fprintf(b, "  (%d more not listed)\n", s.CMDropped)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writePrivate lists the CM messages that carry private data: what
// rdma_connect and rdma_accept passed, the RDMA-CM header of a REQ, and the
// buffer (address, rkey) when it follows the convention of rlab's example
// programs.
func writePrivate(b *strings.Builder, cm []CMEvent) {
	head := false
	for _, e := range cm {
		if e.PrivateData == "" {
			continue
		}
		if !head {
			b.WriteString("  private data (hex, without the zero padding after the last non-zero byte)\n")
			head = true
		}
		fmt.Fprintf(b, "    frame %d %s, %d bytes", e.Number, e.Message, e.PrivateSize)
		if e.PrivateCut {
			fmt.Fprintf(b, " (the capture kept %d)", e.PrivateKept)
		}
		fmt.Fprintf(b, ": %s\n", e.PrivateData)
		if e.RDMACM != "" {
			fmt.Fprintf(b, "      RDMA-CM header %s, then the caller's data\n", e.RDMACM)
		}
		if e.Buffer != nil {
			fmt.Fprintf(b, "      buffer addr 0x%x rkey 0x%x len %d\n", e.Buffer.Addr, e.Buffer.RKey, e.Buffer.Len)
		}
	}
}

func writeOps(b *strings.Builder, s *Summary, ops []*OpStats, indent string) {
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%sopcode\t#\tpackets\tbytes\tpayload\tfirst\tlast\t\n", indent)
	for _, o := range ops {
		name := o.Transport + " " + o.Name
		if o.Transport == o.Name {
			name = o.Name // CNP
		}
		fmt.Fprintf(tw, "%s%s\t%d\t%d\t%d\t%d\t%s\t%s\t\n", indent, name, o.Opcode,
			o.Packets, o.Bytes, o.PayloadBytes, rel(s, o.First), rel(s, o.Last))
	}
	tw.Flush()
}

// rel formats t as seconds since the first frame of the capture.
func rel(s *Summary, t time.Time) string { return fmt.Sprintf("%.6f", t.Sub(s.First).Seconds()) }

var nakNames = map[uint8]string{0: "PSN sequence error", 1: "invalid request", 2: "remote access error",
	3: "remote operational error", 4: "invalid RD request"}

// NAKName names the code of a NAK syndrome.
func NAKName(code uint8) string {
	if n, ok := nakNames[code]; ok {
		return n
	}
	return fmt.Sprintf("code %d", code)
}

func nakCodes(m map[uint8]int64) string {
	if len(m) == 0 {
		return ""
	}
	codes := make([]int, 0, len(m))
	for c := range m {
		codes = append(codes, int(c))
	}
	sort.Ints(codes)
	parts := make([]string, 0, len(codes))
	for _, c := range codes {
		parts = append(parts, fmt.Sprintf("%s %d", NAKName(uint8(c)), m[uint8(c)]))
	}
	return " (" + strings.Join(parts, ", ") + ")"
}
