package attrib

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/rlab-dev/rlab/engine/iwarp"
	"github.com/rlab-dev/rlab/engine/roce"
)

// Named is one connection of a capture and the workload it is named after.
type Named struct {
	// Transport is "RoCEv2" (one direction of a QP flow), "iWARP" or
	// "TCP" (a connection, both directions).
	Transport string    `json:"transport"`
	Conn      string    `json:"connection"` // "10.99.0.2 -> 10.99.0.1 QP 0x000011", "10.0.0.1:4000 <-> 10.0.0.2:9999"
	DestQP    uint32    `json:"dest_qp,omitempty"`
	Packets   int64     `json:"packets"`
	First     time.Time `json:"first"`
	Last      time.Time `json:"last"`
	Match
}

// cmKey is a QP as the CM message that announced it names it: the
// sender's address and the QPN.
type cmKey struct {
	addr netip.Addr
	qpn  uint32
}

// Capture names every connection of one capture's summaries (iw may be
// nil): each RoCEv2 flow by its destination QP and, when an RDMA-CM REQ
// or REP announced that QP, from the time of that message; each iWARP and
// other TCP connection by the port a workload's server listened on (as the
// run recorded it) and by its time.
func (r *Run) Capture(s *roce.Summary, iw *iwarp.Summary) []Named {
	var out []Named
	// A REQ or REP carries its sender's QPN: flows to that address and QP
	// began with it.
	began := map[cmKey]time.Time{}
	for _, e := range s.CM {
		if (e.Message == "REQ" || e.Message == "REP") && e.QPN != 0 {
			k := cmKey{e.Src, e.QPN}
			if t, ok := began[k]; !ok || e.Time.Before(t) {
				began[k] = e.Time
			}
		}
	}
	for _, f := range s.Flows {
		c := Conn{First: f.First, Last: f.Last, QPNs: []uint32{f.DestQP}}
		m := Match{}
		if t, ok := began[cmKey{f.Dst, f.DestQP}]; ok {
			c.Began = t
		}
		m = r.Name(c)
		if !c.Began.IsZero() && m.By != "" {
			m.By += ", set up by RDMA-CM"
		}
		out = append(out, Named{Transport: "RoCEv2", Conn: fmt.Sprintf("%s -> %s QP 0x%06x", f.Src, f.Dst, f.DestQP),
			DestQP: f.DestQP, Packets: f.Packets, First: f.First, Last: f.Last, Match: m})
	}
	if iw == nil {
		return out
	}
	add := func(transport string, c *iwarp.Conn) {
		n := Named{Transport: transport, Conn: fmt.Sprintf("%s <-> %s", c.Dirs[0].Src, c.Dirs[0].Dst)}
		for _, d := range c.Dirs {
			if d.Segments == 0 {
				continue
			}
			n.Packets += d.Segments
			if n.First.IsZero() || d.First.Before(n.First) {
				n.First = d.First
			}
			if d.Last.After(n.Last) {
				n.Last = d.Last
			}
		}
		n.Match = r.Name(Conn{First: n.First, Last: n.Last, Ports: []uint16{c.Dirs[0].Src.Port(), c.Dirs[0].Dst.Port()}})
		out = append(out, n)
	}
	for _, c := range iw.Conns {
		add("iWARP", c)
	}
	for _, c := range iw.TCP {
		add("TCP", c)
	}
	return out
}
