package iwarp

import (
	"encoding/binary"
	"hash/crc32"
	"net/netip"
	"sort"
	"time"

	"github.com/rlab-dev/rlab/engine/roce"
)

// Bounds on what the analyzer keeps, whatever the capture holds.
const (
	// MaxConns bounds the TCP connections followed one by one; the
	// segments of connections beyond it are counted in Summary.Untracked.
	MaxConns = 10000
	// maxPendingSegs and maxPendingBytes bound the segments one direction
	// holds while it waits for a missing one; past them the missing bytes
	// are given up as never captured.
	maxPendingSegs  = 64
	maxPendingBytes = 256 << 10
	// maxPendingTotal bounds the held segments of all directions.
	maxPendingTotal = 64 << 20
	// probeSegments: a stream that began before the capture and did not
	// yield an FPDU within this many segments is not taken for iWARP.
	probeSegments = 8
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// OpStats counts the FPDUs (DDP segments) of one RDMAP opcode.
type OpStats struct {
	Opcode       uint8     `json:"opcode"`
	Name         string    `json:"name"`
	FPDUs        int64     `json:"fpdus"`
	Bytes        int64     `json:"bytes"`         // FPDU bytes on the wire (markers, length, ULPDU, pad, CRC)
	PayloadBytes int64     `json:"payload_bytes"` // ULPDU bytes after the DDP and RDMAP headers
	First        time.Time `json:"first"`
	Last         time.Time `json:"last"`
}

// Dir is one direction of a connection: the byte stream from Src to Dst.
type Dir struct {
	Src netip.AddrPort `json:"src"`
	Dst netip.AddrPort `json:"dst"`
	// TCP segments (with or without payload) and their frame bytes.
	Segments int64     `json:"tcp_segments"`
	Bytes    int64     `json:"bytes"`
	First    time.Time `json:"first"`
	Last     time.Time `json:"last"`
	// MPA frames and FPDUs.
	MPAFrames    int64 `json:"mpa_frames"`
	FPDUs        int64 `json:"fpdus"`
	FPDUBytes    int64 `json:"fpdu_bytes"`
	PayloadBytes int64 `json:"payload_bytes"`
	Markers      int64 `json:"markers"`
	// Retransmits counts segments whose bytes had all or partly been seen
	// already; OutOfOrder those that filled a hole behind later ones.
	Retransmits int64 `json:"retransmitted_segments"`
	OutOfOrder  int64 `json:"out_of_order_segments"`
	ZeroWindows int64 `json:"zero_windows"`
	// NotCaptured counts payload bytes the snaplen cut; Missing sequence
	// space no frame of the capture carried (lost before the capture point,
	// or dropped by it).
	NotCaptured int64 `json:"bytes_not_captured"`
	Missing     int64 `json:"bytes_missing"`
	// CRCChecked counts FPDUs captured whole on a connection that
	// negotiated CRCs, whose CRC32c was recomputed; CRCBad those where it
	// did not match.
	CRCChecked int64 `json:"crc_checked"`
	CRCBad     int64 `json:"crc_bad"`
	// LostSync counts the times the FPDU framing was lost (a length or
	// header that made no sense, or bytes not captured where a header was)
	// and found again at a later segment's start.
	LostSync   int64       `json:"framing_lost"`
	Incomplete int64       `json:"fpdus_cut_by_capture_end,omitempty"`
	Ops        []*OpStats  `json:"opcodes"`
	Terminates []Terminate `json:"terminates,omitempty"`

	opIdx [256]uint16
	r     reasm
	f     framer
}

// Conn is one TCP connection that carried iWARP.
type Conn struct {
	// Dirs[0] runs from the MPA initiator (or, if none was seen, the TCP
	// client, or the first sender) to the other end.
	Dirs [2]*Dir `json:"directions"`
	// BeganBefore: no SYN was seen, so the connection was set up before
	// the capture started.
	BeganBefore bool      `json:"began_before_capture"`
	Request     *MPAFrame `json:"mpa_request,omitempty"`
	Reply       *MPAFrame `json:"mpa_reply,omitempty"`
	// CRC: the connection negotiated MPA CRCs (known once the Reply, or
	// failing it the Request, was seen).
	CRC bool `json:"crc"`

	iwarp   bool
	synSeen bool
	closed  bool // a FIN or RST was seen
	idx     int
}

// IsIWARP reports whether either direction carried MPA frames or FPDUs.
func (c *Conn) IsIWARP() bool { return c.iwarp }

// Event is one MPA frame or FPDU, for a ladder diagram and for tests.
type Event struct {
	Frame    int // the frame that carried the first byte
	EndFrame int // the frame that carried the last byte
	Time     time.Time
	Conn     *Conn
	Dir      int // index into Conn.Dirs
	MPA      *MPAFrame
	// FPDU fields.
	ULPDULen   int
	Bytes      int // on the wire, markers and CRC included
	Seg        Segment
	HeadersCut bool // the capture did not keep the DDP/RDMAP headers
	CRCChecked bool
	CRCValid   bool
	Markers    int
	// Resent: a TCP segment carrying bytes already seen (OnResent); Seq
	// and Len are its sequence number and payload length, and the fields
	// above it but the frame, time and connection are unset.
	Resent bool
	Seq    uint32
	Len    int
}

// Summary is the iWARP part of a capture.
type Summary struct {
	Conns []*Conn `json:"connections"`
	// TCPConns counts every TCP connection seen; Untracked the segments
	// of connections past MaxConns.
	TCPConns  int        `json:"tcp_connections"`
	Untracked int64      `json:"untracked_segments,omitempty"`
	Opcodes   []*OpStats `json:"opcodes"`
	// TCP are the connections that carried no iWARP (a TCP baseline's
	// stream, perftest's out-of-band exchange), for naming them by
	// workload; the summary's JSON leaves them out.
	TCP []*Conn `json:"-"`
}

type connKey struct{ a, b netip.AddrPort }

// Analyzer follows the TCP connections of a capture and decodes iWARP in
// them. Feed it every frame with Add, then call Finish.
type Analyzer struct {
	// OnEvent, when set, is called with each MPA frame and FPDU as it is
	// completed (in byte stream order per direction).
	OnEvent func(*Event)
	// OnResent, when set, is called with each TCP segment whose bytes had
	// all or partly been seen already (Dir.Retransmits), as an Event with
	// Resent set.
	OnResent func(*Event)

	conns   map[connKey]*Conn
	order   []*Conn
	pending int // held bytes of all directions
	ops     [256]*OpStats
	sum     Summary
	done    bool
	last    *Conn // the connection of the previous frame: most frames follow their predecessor's
	lastKey connKey
}

// NewAnalyzer returns an empty Analyzer.
func NewAnalyzer() *Analyzer { return &Analyzer{conns: map[connKey]*Conn{}} }

func addrPort(a netip.Addr, p uint16) netip.AddrPort { return netip.AddrPortFrom(a, p) }

// Add accounts one decoded frame; frames other than TCP are ignored.
func (a *Analyzer) Add(p *roce.Packet) {
	if p.Proto != roce.ProtoTCP || p.Problem != roce.ProblemNone {
		return
	}
	src, dst := addrPort(p.Src, p.SrcPort), addrPort(p.Dst, p.DstPort)
	k := connKey{src, dst}
	if dst.Addr().Less(src.Addr()) || dst.Addr() == src.Addr() && dst.Port() < src.Port() {
		k = connKey{dst, src}
	}
	c := a.last
	if c == nil || k != a.lastKey {
		c = a.conns[k]
	}
	if c != nil && c.closed && p.TCP.Flags&(roce.TCPSyn|roce.TCPAck) == roce.TCPSyn {
		c = nil // the ports taken again after a FIN or RST: a new connection
	}
	if c == nil {
		if len(a.order) >= MaxConns {
			a.sum.Untracked++
			return
		}
		c = &Conn{idx: len(a.order)}
		c.Dirs[0] = &Dir{Src: k.a, Dst: k.b}
		c.Dirs[1] = &Dir{Src: k.b, Dst: k.a}
		for i, d := range c.Dirs {
			d.f = framer{a: a, c: c, d: d, di: i}
		}
		a.conns[k] = c
		a.order = append(a.order, c)
	}
	a.last, a.lastKey = c, k
	d := c.Dirs[0]
	if d.Src != src {
		d = c.Dirs[1]
	}
	d.segment(a, c, p)
}

// resent hands a retransmitted segment to OnResent.
func (a *Analyzer) resent(c *Conn, d *Dir, p *roce.Packet) {
	if a.OnResent == nil {
		return
	}
	di := 0
	if c.Dirs[1] == d {
		di = 1
	}
	a.OnResent(&Event{Frame: p.Number, EndFrame: p.Number, Time: p.Time, Conn: c, Dir: di,
		Resent: true, Seq: p.TCP.Seq, Len: p.L4Payload})
}

// segment handles one TCP segment of this direction.
func (d *Dir) segment(a *Analyzer, c *Conn, p *roce.Packet) {
	if d.Segments == 0 {
		d.First = p.Time
	}
	d.Segments++
	d.Bytes += int64(p.WireLen)
	d.Last = p.Time
	t := &p.TCP
	if t.Window == 0 && t.Flags&(roce.TCPSyn|roce.TCPFin|roce.TCPRst) == 0 {
		d.ZeroWindows++
	}
	r := &d.r
	if t.Flags&(roce.TCPFin|roce.TCPRst) != 0 {
		c.closed = true
	}
	if t.Flags&roce.TCPSyn != 0 {
		c.synSeen = true
		if t.Flags&roce.TCPAck == 0 && d == c.Dirs[1] && c.Request == nil {
			c.swap() // the TCP client first
		}
		if !r.started {
			r.started, r.next, r.maxEnd = true, t.Seq+1, t.Seq+1
			d.f.mode = modeHandshake
		}
		return
	}
	n := p.L4Payload
	if n <= 0 {
		return
	}
	data := p.Payload
	if len(data) > n {
		data = data[:n]
	}
	d.NotCaptured += int64(n - len(data))
	seq := t.Seq
	if !r.started {
		r.started, r.next, r.maxEnd = true, seq, seq
		if !c.synSeen {
			c.BeganBefore = true
		}
		d.f.mode = modeProbe
	}
	if d.f.mode == modeOff {
		r.next, r.maxEnd = seq+uint32(n), seq+uint32(n) // TCP counts only
		return
	}
	end := seq + uint32(n)
	switch {
	case seqLE(end, r.next):
		d.Retransmits++
		a.resent(c, d, p)
		return
	case seqLT(seq, r.next):
		d.Retransmits++
		a.resent(c, d, p)
		skip := int(r.next - seq)
		data = data[min(skip, len(data)):]
		d.deliver(r.next, data, n-skip, p.Number, p.Time, false)
	case seq == r.next:
		if seqLT(seq, r.maxEnd) {
			d.OutOfOrder++
		}
		d.deliver(seq, data, n, p.Number, p.Time, true)
	default:
		for _, s := range r.pending {
			if s.seq == seq {
				d.Retransmits++
				a.resent(c, d, p)
				return
			}
		}
		s := held{seq: seq, data: append([]byte(nil), data...), wire: n, frame: p.Number, t: p.Time}
		i := sort.Search(len(r.pending), func(i int) bool { return seqLT(seq, r.pending[i].seq) })
		r.pending = append(r.pending, held{})
		copy(r.pending[i+1:], r.pending[i:])
		r.pending[i] = s
		r.bytes += len(s.data)
		a.pending += len(s.data)
		if len(r.pending) > maxPendingSegs || r.bytes > maxPendingBytes || a.pending > maxPendingTotal {
			d.giveUpHole(a)
		}
	}
	if seqLT(r.maxEnd, end) {
		r.maxEnd = end
	}
	d.drain(a)
}

// giveUpHole takes the bytes before the first held segment as never to
// come, and goes on from there.
func (d *Dir) giveUpHole(a *Analyzer) {
	r := &d.r
	if len(r.pending) == 0 {
		return
	}
	gap := r.pending[0].seq - r.next
	d.Missing += int64(gap)
	d.f.feed(r.next, nil, int(gap), 0, time.Time{}, false)
	r.next = r.pending[0].seq
	d.drain(a)
}

// drain delivers the held segments the stream has reached.
func (d *Dir) drain(a *Analyzer) {
	r := &d.r
	for len(r.pending) > 0 && seqLE(r.pending[0].seq, r.next) {
		s := r.pending[0]
		r.pending = r.pending[1:]
		r.bytes -= len(s.data)
		a.pending -= len(s.data)
		end := s.seq + uint32(s.wire)
		if !seqLT(r.next, end) {
			continue
		}
		skip := int(r.next - s.seq)
		d.deliver(r.next, s.data[min(skip, len(s.data)):], s.wire-skip, s.frame, s.t, skip == 0)
	}
	if len(r.pending) == 0 {
		r.pending = nil
	}
}

func (d *Dir) deliver(seq uint32, data []byte, n, frame int, t time.Time, segStart bool) {
	d.r.next = seq + uint32(n)
	d.f.feed(seq, data, n, frame, t, segStart)
}

// finish ends the direction: a hole still open is given up.
func (d *Dir) finish(a *Analyzer) {
	for len(d.r.pending) > 0 {
		d.giveUpHole(a)
	}
	if d.f.open && d.f.mode == modeFPDU {
		d.Incomplete++
	}
}

func seqLT(a, b uint32) bool { return int32(a-b) < 0 }
func seqLE(a, b uint32) bool { return int32(a-b) <= 0 }

type held struct {
	seq   uint32
	data  []byte
	wire  int
	frame int
	t     time.Time
}

// reasm is the in-order delivery state of one direction.
type reasm struct {
	started bool
	next    uint32 // the next byte the stream expects
	maxEnd  uint32 // the end of the furthest segment seen
	pending []held // segments after a hole, by sequence number
	bytes   int
}

// Framer modes.
const (
	modeProbe     = iota // no SYN seen: an MPA frame or an FPDU may start at a segment
	modeHandshake        // at the stream's start: an MPA frame
	modeFPDU             // in step with the FPDUs
	modeLost             // framing lost: look for an FPDU at each segment's start
	modeOff              // not iWARP
)

// framer cuts one direction's byte stream into MPA frames and FPDUs.
type framer struct {
	a  *Analyzer
	c  *Conn
	d  *Dir
	di int

	mode    uint8
	probes  int
	settled bool // markers and CRC decided
	markers bool
	crc     bool
	mbase   uint32 // sequence number of the first marker
	mleft   int    // bytes of a marker still to pass

	hs     []byte // an MPA frame header being collected
	pd     [4]byte
	pdN    int
	pdLeft int

	// The FPDU being collected.
	open       bool
	start      uint32
	frame      int
	t          time.Time
	got        int // non-marker bytes passed
	total      int // non-marker bytes of the FPDU, 0 until the length is read
	hdr        [64]byte
	hdrN       int
	hdrKnown   int
	hdrWant    int
	hdrUnknown bool
	unknown    bool
	sum        uint32
	crcb       [4]byte
	nmark      int
	raw        int
}

// feed passes n bytes of the stream from seq; data holds the captured
// first of them (the rest the capture did not keep).
func (f *framer) feed(seq uint32, data []byte, n, frame int, t time.Time, segStart bool) {
	pos := 0
	for pos < n {
		switch f.mode {
		case modeOff:
			return
		case modeProbe, modeLost:
			if !segStart || pos != 0 || !f.probe(seq, data, n, frame, t) {
				return
			}
			continue
		case modeHandshake:
			k := f.handshake(data[min(pos, len(data)):], n-pos, frame, t)
			if k == 0 {
				return
			}
			pos += k
			continue
		}
		// modeFPDU
		if !f.settled {
			f.settle(seq + uint32(pos))
		}
		cur := seq + uint32(pos)
		if f.markers && f.mleft == 0 && (cur-f.mbase)%MarkerInterval == 0 {
			f.mleft = 4
		}
		if !f.open {
			f.begin(cur, frame, t)
		}
		if f.mleft > 0 {
			k := min(f.mleft, n-pos)
			f.crcBytes(data, pos, k)
			f.mleft -= k
			f.raw += k
			pos += k
			if f.mleft == 0 {
				f.nmark++
				f.d.Markers++
			}
			continue
		}
		k := n - pos
		if f.markers {
			k = min(k, int(MarkerInterval-(cur-f.mbase)%MarkerInterval))
		}
		if f.total == 0 {
			// The length field: both bytes must have been captured.
			k = min(k, 2-f.hdrN)
			if pos+k > len(data) {
				f.lose()
				return
			}
			f.take(data, pos, k)
			pos += k
			if f.hdrN == 2 {
				ulp := int(binary.BigEndian.Uint16(f.hdr[:2]))
				if ulp < TaggedLen {
					f.lose()
					return
				}
				f.total = 2 + ulp + PadLen(ulp) + 4
				f.hdrWant = min(2+ulp, len(f.hdr))
			}
			continue
		}
		k = min(k, f.total-f.got)
		f.take(data, pos, k)
		pos += k
		if f.got == f.total {
			f.end(frame)
		}
	}
}

// crcBytes feeds k raw bytes from pos into the FPDU's CRC.
func (f *framer) crcBytes(data []byte, pos, k int) {
	if pos+k > len(data) {
		f.unknown = true
		if pos < len(data) {
			f.sum = crc32.Update(f.sum, castagnoli, data[pos:])
		}
		return
	}
	f.sum = crc32.Update(f.sum, castagnoli, data[pos:pos+k])
}

// take passes k non-marker bytes of the FPDU from pos: the headers are
// kept, all but the CRC field are summed, the CRC field is kept.
func (f *framer) take(data []byte, pos, k int) {
	crcAt := f.total - 4
	if f.total == 0 {
		crcAt = 1 << 30
	}
	for k > 0 {
		var m int
		switch {
		case f.got < crcAt:
			m = min(k, crcAt-f.got)
			if f.got < f.hdrWant || f.total == 0 {
				want := f.hdrWant
				if f.total == 0 {
					want = 2
				}
				h := min(m, want-f.got)
				for i := 0; i < h; i++ {
					if pos+i < len(data) {
						f.hdr[f.hdrN] = data[pos+i]
						if f.hdrKnown == f.hdrN {
							f.hdrKnown++
						}
					} else {
						f.hdrUnknown = true
					}
					f.hdrN++
				}
			}
			f.crcBytes(data, pos, m)
		default:
			m = min(k, f.total-f.got)
			for i := 0; i < m; i++ {
				if pos+i < len(data) {
					f.crcb[f.got-crcAt+i] = data[pos+i]
				} else {
					f.unknown = true
				}
			}
		}
		f.got += m
		f.raw += m
		pos += m
		k -= m
	}
}

func (f *framer) begin(seq uint32, frame int, t time.Time) {
	f.open, f.start, f.frame, f.t = true, seq, frame, t
	f.got, f.total, f.hdrN, f.hdrKnown, f.hdrWant, f.raw, f.nmark = 0, 0, 0, 0, 2, 0, 0
	f.hdrUnknown, f.unknown, f.sum = false, false, 0
}

// lose gives up the framing: the next segment's start is probed.
func (f *framer) lose() {
	f.open = false
	f.mode = modeLost
	f.d.LostSync++
}

// end completes an FPDU.
func (f *framer) end(frame int) {
	f.open = false
	ulp := int(binary.BigEndian.Uint16(f.hdr[:2]))
	e := Event{Frame: f.frame, EndFrame: frame, Time: f.t, Conn: f.c, Dir: f.di, ULPDULen: ulp,
		Bytes: f.raw, Markers: f.nmark}
	seg, err := ParseSegment(f.hdr[2:f.hdrKnown], ulp)
	switch {
	case err == nil:
	case f.hdrKnown < 4:
		e.HeadersCut = true
		seg = Segment{Opcode: OpUnknown}
	case err == errHeaderCut:
		e.HeadersCut = true
	default:
		// A length that pointed at no DDP header: the framing is off.
		f.lose()
		return
	}
	e.Seg = seg
	if f.crc && !f.unknown {
		e.CRCChecked = true
		e.CRCValid = binary.LittleEndian.Uint32(f.crcb[:]) == f.sum
	}
	f.c.iwarp = true
	f.a.fpdu(f.d, &e)
}

// settle decides markers and CRC for this direction from the handshake:
// markers flow towards an end that asked for them (the Request's M flag is
// the initiator's wish, the Reply's the responder's); CRCs are on when the
// Reply (or, with no Reply seen, the Request) says so.
func (f *framer) settle(seq uint32) {
	f.settled = true
	c := f.c
	req, rep := c.Request, c.Reply
	initiator := f.di == 0
	switch {
	case initiator && rep != nil:
		f.markers = rep.Markers
	case !initiator && req != nil:
		f.markers = req.Markers
	}
	switch {
	case rep != nil:
		f.crc = rep.CRC
	case req != nil:
		f.crc = req.CRC
	}
	c.CRC = f.crc
	f.mbase = seq
}

// handshake collects an MPA frame at the stream's start and returns how
// many bytes it took (0: not an MPA frame, or its header not captured).
func (f *framer) handshake(data []byte, n, frame int, t time.Time) int {
	if len(f.hs) < MPAHeaderLen {
		k := min(n, MPAHeaderLen-len(f.hs))
		if k > len(data) {
			f.hs = f.hs[:0]
			f.mode = modeLost // the header was not captured
			return 0
		}
		f.hs = append(f.hs, data[:k]...)
		if len(f.hs) >= len(KeyReq) && len(f.hs)-k < len(KeyReq) || len(f.hs) == MPAHeaderLen {
			if _, ok := IsMPAKey(f.hs); !ok {
				f.hs = f.hs[:0]
				if f.c.synSeen && f.mode == modeHandshake && f.d.FPDUs == 0 {
					f.mode = modeOff
				} else {
					f.mode = modeLost
				}
				return 0
			}
		}
		if len(f.hs) == MPAHeaderLen {
			f.pdLeft = int(binary.BigEndian.Uint16(f.hs[18:20]))
			f.pdN = 0
			if f.pdLeft == 0 {
				f.finishHandshake(frame, t)
			}
		}
		return k
	}
	// The private data: keep what MPAv2 reads of it.
	k := min(n, f.pdLeft)
	for i := 0; i < k && f.pdN < len(f.pd) && i < len(data); i++ {
		f.pd[f.pdN] = data[i]
		f.pdN++
	}
	f.pdLeft -= k
	if f.pdLeft == 0 {
		f.finishHandshake(frame, t)
	}
	return k
}

// swap turns the connection round: Dirs[0] is the initiator's.
func (c *Conn) swap() {
	c.Dirs[0], c.Dirs[1] = c.Dirs[1], c.Dirs[0]
	c.Dirs[0].f.di, c.Dirs[1].f.di = 0, 1
}

func (f *framer) finishHandshake(frame int, t time.Time) {
	m, err := ParseMPAFrame(f.hs[:MPAHeaderLen], f.pd[:f.pdN])
	f.hs = f.hs[:0]
	if err != nil {
		f.mode = modeOff
		return
	}
	c := f.c
	if !m.Reply && f.di == 1 {
		c.swap() // the initiator is the other end
	}
	if m.Reply {
		c.Reply = &m
	} else {
		c.Request = &m
	}
	c.iwarp = true
	f.mode = modeFPDU
	f.d.MPAFrames++
	if f.a.OnEvent != nil {
		f.a.OnEvent(&Event{Frame: frame, EndFrame: frame, Time: t, Conn: c, Dir: f.di, MPA: &m})
	}
}

// probe looks at a segment's start for an MPA frame or an FPDU whose
// headers make sense, and takes up the framing there when it finds one.
func (f *framer) probe(seq uint32, data []byte, n, frame int, t time.Time) bool {
	if _, ok := IsMPAKey(data); ok {
		f.mode = modeHandshake
		return true
	}
	if f.mode == modeProbe {
		f.probes++
		if f.probes > probeSegments && !f.c.iwarp {
			f.mode = modeOff
			return false
		}
	}
	if !plausibleFPDU(data, n) {
		return false
	}
	f.mode = modeFPDU
	if f.c.Request == nil && f.c.Reply == nil {
		f.settled = true // no handshake seen: no markers, no CRC
	}
	return true
}

// plausibleFPDU reports whether a segment (n bytes, data captured) starts
// with an FPDU: a length that fits a DDP header, versions 1, the reserved
// bits clear, the queue number of the opcode, and, when the capture holds
// its end, another such FPDU or the segment's end after it.
func plausibleFPDU(data []byte, n int) bool {
	for off, i := 0, 0; i < 2 && off < n; i++ {
		if len(data) < off+2+TaggedLen {
			return i > 0 // the second FPDU not captured: take the first
		}
		b := data[off:]
		ulp := int(binary.BigEndian.Uint16(b))
		if ulp < TaggedLen || b[2]&0x3c != 0 || b[3]&0x30 != 0 {
			return false
		}
		seg, err := ParseSegment(b[2:min(len(b), 2+ulp)], ulp)
		if err != nil && err != errHeaderCut {
			return false
		}
		if !seg.Tagged && err == nil {
			want := map[uint8]uint32{OpReadRequest: 1, OpTerminate: 2}[seg.Opcode]
			if seg.QN != want {
				return false
			}
		}
		off += 2 + ulp + PadLen(ulp) + 4
	}
	return true
}

func (a *Analyzer) fpdu(d *Dir, e *Event) {
	d.FPDUs++
	d.FPDUBytes += int64(e.Bytes)
	pay := int64(e.ULPDULen - e.Seg.HeaderLen)
	if e.Seg.Opcode == OpUnknown || pay < 0 {
		pay = 0
	}
	d.PayloadBytes += pay
	if e.CRCChecked {
		d.CRCChecked++
		if !e.CRCValid {
			d.CRCBad++
		}
	}
	op := e.Seg.Opcode
	if op == OpTerminate && !e.HeadersCut && len(d.Terminates) < 100 {
		d.Terminates = append(d.Terminates, e.Seg.Term)
	}
	i := d.opIdx[op]
	if i == 0 {
		d.Ops = append(d.Ops, &OpStats{Opcode: op, Name: OpName(op)})
		i = uint16(len(d.Ops))
		d.opIdx[op] = i
	}
	d.Ops[i-1].add(e, pay)
	all := a.ops[op]
	if all == nil {
		all = &OpStats{Opcode: op, Name: OpName(op)}
		a.ops[op] = all
	}
	all.add(e, pay)
	if a.OnEvent != nil {
		a.OnEvent(e)
	}
}

func (o *OpStats) add(e *Event, pay int64) {
	if o.FPDUs == 0 {
		o.First = e.Time
	}
	o.FPDUs++
	o.Bytes += int64(e.Bytes)
	o.PayloadBytes += pay
	o.Last = e.Time
}

// Finish gives up the holes still open and returns the summary: the
// connections that carried iWARP, in the order they were first seen.
func (a *Analyzer) Finish() *Summary {
	s := &a.sum
	if a.done {
		return s
	}
	a.done = true
	s.TCPConns = len(a.order)
	s.Conns, s.TCP = s.Conns[:0], s.TCP[:0]
	for _, c := range a.order {
		for _, d := range c.Dirs {
			d.finish(a)
		}
		if c.iwarp {
			for _, d := range c.Dirs {
				sort.Slice(d.Ops, func(i, j int) bool { return d.Ops[i].Opcode < d.Ops[j].Opcode })
			}
			s.Conns = append(s.Conns, c)
		} else {
			s.TCP = append(s.TCP, c)
		}
	}
	s.Opcodes = s.Opcodes[:0]
	for _, o := range a.ops {
		if o != nil {
			s.Opcodes = append(s.Opcodes, o)
		}
	}
	return s
}
