package iwarp

import (
	"encoding/binary"
	"flag"
	"hash/crc32"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
)

var update = flag.Bool("update", false, "rewrite the synthesized captures")

// pcapDir holds the iWARP captures (beside, not under, testdata/pcap:
// engine/roce keeps a golden summary of every capture there).
const pcapDir = "../../testdata/iwarp"

// end is one side of a synthesized TCP connection.
type end struct {
	ip   net.IP
	port uint16
	seq  uint32
	// markers: the sequence number of the first FPDU once markers are on.
	markers  bool
	mbase    uint32
	mbaseSet bool
	crc      bool
	msn      [3]uint32 // per untagged queue
}

// seg is one synthesized frame.
type seg struct {
	from    int
	flags   uint8
	seq     uint32
	payload []byte
	ack     uint32
	window  uint16
	at      time.Duration
}

// conv builds a TCP conversation of iWARP between two ends.
type conv struct {
	ends [2]*end
	segs []seg
	now  time.Duration
}

func newConv(a, b byte, aport, bport uint16) *conv {
	return &conv{ends: [2]*end{
		{ip: net.IPv4(10, 99, 0, a).To4(), port: aport, seq: 1000},
		{ip: net.IPv4(10, 99, 0, b).To4(), port: bport, seq: 500000},
	}}
}

func (c *conv) add(s seg) {
	c.now += time.Millisecond
	s.at = c.now
	s.ack = c.ends[1-s.from].seq
	if s.window == 0 {
		s.window = 0xffff
	}
	c.segs = append(c.segs, s)
}

// zeroWindow: a pure ACK from an end that advertises a window of zero.
func (c *conv) zeroWindow(from int) {
	c.add(seg{from: from, flags: tcpACK, seq: c.ends[from].seq, window: 0})
	c.segs[len(c.segs)-1].window = 0
}

const (
	tcpFIN = 0x01
	tcpSYN = 0x02
	tcpPSH = 0x08
	tcpACK = 0x10
)

func (c *conv) handshake() {
	a, b := c.ends[0], c.ends[1]
	c.add(seg{from: 0, flags: tcpSYN, seq: a.seq})
	a.seq++
	c.add(seg{from: 1, flags: tcpSYN | tcpACK, seq: b.seq})
	b.seq++
	c.add(seg{from: 0, flags: tcpACK, seq: a.seq})
}

// send sends one segment of payload from an end.
func (c *conv) send(from int, payload []byte) int {
	e := c.ends[from]
	c.add(seg{from: from, flags: tcpACK | tcpPSH, seq: e.seq, payload: payload})
	e.seq += uint32(len(payload))
	return len(c.segs) - 1
}

// resend repeats segment i later.
func (c *conv) resend(i int) {
	s := c.segs[i]
	c.now += 200 * time.Millisecond
	s.at = c.now
	c.segs = append(c.segs, s)
}

// mpaFrame builds an MPA Request or Reply.
func mpaFrame(reply bool, flags, rev uint8, pd []byte) []byte {
	key := KeyReq
	if reply {
		key = KeyRep
	}
	b := append([]byte(key), flags, rev, 0, 0)
	binary.BigEndian.PutUint16(b[18:], uint16(len(pd)))
	return append(b, pd...)
}

// mpa sends an MPA frame and sets the end's framing for what follows.
func (c *conv) mpa(from int, reply bool, flags, rev uint8, pd []byte) {
	c.send(from, mpaFrame(reply, flags, rev, pd))
}

// fpdu frames a ULPDU from an end: length, markers, pad and CRC.
func (c *conv) fpdu(from int, ulpdu []byte) []byte {
	e := c.ends[from]
	logical := binary.BigEndian.AppendUint16(nil, uint16(len(ulpdu)))
	logical = append(logical, ulpdu...)
	logical = append(logical, make([]byte, PadLen(len(ulpdu)))...)
	seq := e.seq
	if e.markers && !e.mbaseSet {
		e.mbase, e.mbaseSet = seq, true
	}
	var raw []byte
	put := func(b []byte) {
		for _, x := range b {
			pos := seq + uint32(len(raw))
			if e.markers && (pos-e.mbase)%MarkerInterval == 0 {
				back := uint16(0)
				if len(raw) > 0 {
					back = uint16(pos - seq)
				}
				raw = append(raw, 0, 0, byte(back>>8), byte(back))
			}
			raw = append(raw, x)
		}
	}
	put(logical)
	crc := uint32(0)
	if e.crc {
		crc = crc32.Checksum(raw, castagnoli)
	}
	put(binary.LittleEndian.AppendUint32(nil, crc))
	return raw
}

func taggedHdr(op uint8, last bool, stag uint32, to uint64) []byte {
	b := []byte{0x81, 0x40 | op}
	if last {
		b[0] |= 0x40
	}
	b = binary.BigEndian.AppendUint32(b, stag)
	return binary.BigEndian.AppendUint64(b, to)
}

func (c *conv) untaggedHdr(from int, op uint8, last bool, inv, qn, mo uint32) []byte {
	e := c.ends[from]
	b := []byte{0x01, 0x40 | op}
	if last {
		b[0] |= 0x40
	}
	b = binary.BigEndian.AppendUint32(b, inv)
	b = binary.BigEndian.AppendUint32(b, qn)
	b = binary.BigEndian.AppendUint32(b, e.msn[qn]+1)
	b = binary.BigEndian.AppendUint32(b, mo)
	if last {
		e.msn[qn]++
	}
	return b
}

func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i * 7)
	}
	return b
}

// ops sends one of every RDMAP opcode the tshark dissector knows, each in
// its own segment: both Send flavours, both Invalidate ones, an RDMA Write
// in two DDP segments, a Read Request answered by a Read Response, and a
// Terminate.
func (c *conv) ops() (sends []int) {
	s := func(from int, ulpdu []byte) { sends = append(sends, c.send(from, c.fpdu(from, ulpdu))) }
	s(0, append(c.untaggedHdr(0, OpSend, true, 0, 0, 0), pattern(100)...))
	s(1, append(c.untaggedHdr(1, OpSendSE, true, 0, 0, 0), pattern(33)...))
	s(0, append(c.untaggedHdr(0, OpSendInv, true, 0x1234, 0, 0), pattern(64)...))
	s(1, append(c.untaggedHdr(1, OpSendSEInv, true, 0x5678, 0, 0), pattern(7)...))
	s(0, append(taggedHdr(OpWrite, false, 0xabcd, 0x10000), pattern(700)...))
	s(0, append(taggedHdr(OpWrite, true, 0xabcd, 0x10000+700), pattern(301)...))
	rr := c.untaggedHdr(0, OpReadRequest, true, 0, 1, 0)
	rr = binary.BigEndian.AppendUint32(rr, 0x1111)
	rr = binary.BigEndian.AppendUint64(rr, 0x2000)
	rr = binary.BigEndian.AppendUint32(rr, 512)
	rr = binary.BigEndian.AppendUint32(rr, 0x2222)
	rr = binary.BigEndian.AppendUint64(rr, 0x3000)
	s(0, rr)
	s(1, append(taggedHdr(OpReadResponse, true, 0x1111, 0x2000), pattern(512)...))
	term := c.untaggedHdr(1, OpTerminate, true, 0, 2, 0)
	term = append(term, 0x12, 0x05, 0x00, 0x00) // layer DDP, type 2, code 5, no headers
	s(1, term)
	return sends
}

// synthCaptures are the iWARP captures this file writes; compared says
// which tshark reads as this package does (one FPDU per segment, the
// handshake seen).
func synthCaptures() map[string]*conv {
	out := map[string]*conv{}

	// MPA revision 1 with markers and CRCs both ways, a resent segment and
	// a zero window.
	c := newConv(1, 2, 40001, 4210)
	c.handshake()
	c.mpa(0, false, FlagMarkers|FlagCRC, 1, []byte("rlab private data"))
	c.mpa(1, true, FlagMarkers|FlagCRC, 1, nil)
	c.ends[0].markers, c.ends[1].markers = true, true
	c.ends[0].crc, c.ends[1].crc = true, true
	sends := c.ops()
	c.resend(sends[4])
	c.zeroWindow(1)
	out["iwarp-markers-crc.pcap"] = c

	// MPAv2 enhanced (IRD/ORD), CRCs, no markers: what siw sends when told
	// to use CRCs.
	c = newConv(3, 4, 40002, 7174)
	c.handshake()
	c.mpa(0, false, FlagCRC|FlagEnhanced, 2, []byte{0x80, 0x10, 0x80, 0x10})
	c.mpa(1, true, FlagCRC|FlagEnhanced, 2, []byte{0x00, 0x08, 0x00, 0x08})
	c.ends[0].crc, c.ends[1].crc = true, true
	c.ops()
	out["iwarp-mpav2-crc.pcap"] = c

	// siw's default: MPAv2, no markers, no CRC (the field is zero).
	c = newConv(5, 6, 40003, 7174)
	c.handshake()
	c.mpa(0, false, FlagEnhanced, 2, []byte{0x80, 0x01, 0x80, 0x01})
	c.mpa(1, true, FlagEnhanced, 2, []byte{0x00, 0x01, 0x00, 0x01})
	c.ops()
	out["iwarp-mpav2-nocrc.pcap"] = c

	// TCP coalesces: several FPDUs in one segment, FPDUs across segments
	// (tshark reassembles them and names each in the frame of its last byte).
	c = newConv(9, 10, 40005, 7174)
	c.handshake()
	c.mpa(0, false, FlagCRC|FlagEnhanced, 2, []byte{0x80, 0x01, 0x80, 0x01})
	c.mpa(1, true, FlagCRC|FlagEnhanced, 2, []byte{0x00, 0x01, 0x00, 0x01})
	c.ends[0].crc, c.ends[1].crc = true, true
	us, _ := c.streamULPDUs(0)
	c.sendCut(0, c.fpdus(0, us), []int{2000, 2000}, nil)
	out["iwarp-mpav2-coalesced.pcap"] = c

	// A connection set up before the capture started: no SYN, no MPA.
	c = newConv(7, 8, 40004, 7174)
	c.ends[0].seq, c.ends[1].seq = 777777, 999999
	c.ops()
	out["iwarp-midstream.pcap"] = c
	return out
}

func writeConv(t *testing.T, path string, c *conv, snaplen int) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := pcapgo.NewWriter(f)
	if err := w.WriteFileHeader(uint32(max(snaplen, 65535)), layers.LinkTypeEthernet); err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	for _, s := range c.segs {
		from, to := c.ends[s.from], c.ends[1-s.from]
		eth := &layers.Ethernet{SrcMAC: net.HardwareAddr{0x52, 0x54, 0, 0, 0, from.ip[3]},
			DstMAC: net.HardwareAddr{0x52, 0x54, 0, 0, 0, to.ip[3]}, EthernetType: layers.EthernetTypeIPv4}
		ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolTCP, SrcIP: from.ip, DstIP: to.ip, Flags: layers.IPv4DontFragment}
		tcp := &layers.TCP{SrcPort: layers.TCPPort(from.port), DstPort: layers.TCPPort(to.port), Seq: s.seq,
			Ack: s.ack, Window: s.window, SYN: s.flags&tcpSYN != 0, ACK: s.flags&tcpACK != 0,
			PSH: s.flags&tcpPSH != 0, FIN: s.flags&tcpFIN != 0}
		if s.flags&tcpACK == 0 {
			tcp.Ack = 0
		}
		if err := tcp.SetNetworkLayerForChecksum(ip); err != nil {
			t.Fatal(err)
		}
		buf := gopacket.NewSerializeBuffer()
		if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true},
			eth, ip, tcp, gopacket.Payload(s.payload)); err != nil {
			t.Fatal(err)
		}
		b := buf.Bytes()
		ci := gopacket.CaptureInfo{Timestamp: base.Add(s.at), CaptureLength: len(b), Length: len(b)}
		if snaplen > 0 && len(b) > snaplen {
			b = b[:snaplen]
			ci.CaptureLength = snaplen
		}
		if err := w.WritePacket(ci, b); err != nil {
			t.Fatal(err)
		}
	}
}

// snaplenCuts are the captures also written cut at a small snaplen.
var snaplenCuts = map[string]int{"iwarp-mpav2-nocrc.pcap": 96, "iwarp-markers-crc.pcap": 80, "iwarp-mpav2-coalesced.pcap": 128}

func cutName(name string, n int) string {
	return name[:len(name)-len(".pcap")] + "-snaplen" + itoa(n) + ".pcap"
}

func itoa(n int) string {
	b := []byte{}
	for n > 0 || len(b) == 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}

// TestSynthesize rewrites the captures with -update, and otherwise checks
// that the ones on disk are what this file writes.
func TestSynthesize(t *testing.T) {
	dir := pcapDir
	if !*update {
		dir = t.TempDir()
	} else if err := os.MkdirAll(pcapDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, c := range synthCaptures() {
		writeConv(t, filepath.Join(dir, name), c, 0)
		if n, ok := snaplenCuts[name]; ok {
			writeConv(t, filepath.Join(dir, cutName(name, n)), c, n)
		}
	}
	if *update {
		return
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		want, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(pcapDir, e.Name()))
		if err != nil {
			t.Fatalf("%v (run go test -run TestSynthesize -update)", err)
		}
		if string(got) != string(want) {
			t.Errorf("%s differs from what synth_test.go writes (run go test -run TestSynthesize -update)", e.Name())
		}
	}
}
