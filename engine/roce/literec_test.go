package roce

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"unsafe"
)

// liteRoundTrip decodes data (a frame of the given link type) as a split
// scan's decoder does and fails t when the liteRec it writes reads back
// as anything but the Packet Decode made, its Payload the same bytes of
// the same buffer. It says whether the frame went as a liteRec.
func liteRoundTrip(t *testing.T, link int, data []byte, wire int) bool {
	t.Helper()
	arena := append(make([]byte, 0, len(data)+8), 0, 0, 0, 0, 0, 0, 0, 0) // the frame after another's bytes
	arena = append(arena, data...)
	frame := arena[8:len(arena):len(arena)]
	var p Packet
	p.Number, p.ord = 7, 42
	Decode(link, frame, wire, &p)
	p.ord = 42
	var r liteRec
	if !r.set(&p, arena) {
		return false
	}
	var q Packet
	q.Src, q.Payload = p.Dst, arena // stale values packet must overwrite
	r.packet(&q, 7, 42, arena)
	if !reflect.DeepEqual(p, q) {
		t.Fatalf("liteRec of link %d frame %x reads back as\n%+v\nwant\n%+v", link, data, q, p)
	}
	if (p.Payload == nil) != (q.Payload == nil) || cap(p.Payload) != cap(q.Payload) ||
		len(p.Payload) > 0 && unsafe.SliceData(p.Payload) != unsafe.SliceData(q.Payload) {
		t.Fatalf("Payload %p len %d cap %d, want %p len %d cap %d", unsafe.SliceData(q.Payload), len(q.Payload), cap(q.Payload),
			unsafe.SliceData(p.Payload), len(p.Payload), cap(p.Payload))
	}
	return true
}

// segRoundTrip decodes data as liteRoundTrip does and, for a TCP segment
// without a problem (what tcp is handed), fails t when its tcpSeg reads
// back as anything but the fields ScanSplitSummaries promises tcp, as
// Decode made them, its Payload the same bytes of the same buffer, or
// when the other fields of the Packet it fills are not zero. It says
// whether the frame went as a tcpSeg.
func segRoundTrip(t *testing.T, link int, data []byte, wire int) bool {
	t.Helper()
	arena := append(make([]byte, 0, len(data)+8), 0, 0, 0, 0, 0, 0, 0, 0)
	arena = append(arena, data...)
	frame := arena[8:len(arena):len(arena)]
	var p Packet
	p.Number = 7
	Decode(link, frame, wire, &p)
	p.ord = 42
	if p.Proto != ProtoTCP || p.Problem != ProblemNone {
		return false
	}
	var s tcpSeg
	if !s.set(&p, arena) {
		return false
	}
	var q Packet
	s.packet(&q, 7, 42, arena)
	if got, want := tcpSegView(&q), tcpSegView(&p); got != want {
		t.Fatalf("tcpSeg of link %d frame %x reads back as\n%s\nwant\n%s", link, data, got, want)
	}
	if len(p.Payload) > 0 && unsafe.SliceData(p.Payload) != unsafe.SliceData(q.Payload) || cap(p.Payload) != cap(q.Payload) {
		t.Fatalf("Payload %p cap %d, want %p cap %d", unsafe.SliceData(q.Payload), cap(q.Payload), unsafe.SliceData(p.Payload), cap(p.Payload))
	}
	z := Packet{Number: q.Number, Time: q.Time, WireLen: q.WireLen, Proto: q.Proto, Problem: q.Problem, Src: q.Src, Dst: q.Dst,
		SrcPort: q.SrcPort, DstPort: q.DstPort, L4Payload: q.L4Payload, TCP: q.TCP, Payload: q.Payload, ord: q.ord}
	if !reflect.DeepEqual(q, z) {
		t.Fatalf("tcpSeg.packet set fields it does not promise: %+v", q)
	}
	return true
}

// TestLiteRecRoundTrip: every frame of the recorded captures (RoCEv2 with
// the CM, IPv6, TCP carrying iWARP, cut and whole) either reads back from
// its liteRec as Decode made it, or goes whole; and both happen. Every
// TCP segment's tcpSeg reads back as Decode made what it holds.
func TestLiteRecRoundTrip(t *testing.T) {
	var files []string
	for _, g := range []string{pcapDir + "/*.pcap*", "../../testdata/iwarp/*.pcap", "../../testdata/iwarp/recorded/*.pcap"} {
		m, _ := filepath.Glob(g)
		files = append(files, m...)
	}
	lite, whole, segs := 0, 0, 0
	for _, file := range files {
		fh, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		next, err := frameSource(fh)
		if err != nil {
			fh.Close()
			continue // the captures made to be refused
		}
		for {
			data, _, wire, link, err := next()
			if err != nil {
				break
			}
			if liteRoundTrip(t, link, data, wire) {
				lite++
			} else {
				whole++
			}
			if segRoundTrip(t, link, data, wire) {
				segs++
			}
		}
		fh.Close()
	}
	if lite == 0 || whole == 0 || segs < 100 {
		t.Errorf("%d frames as liteRecs, %d whole, %d TCP segments as tcpSegs: want all", lite, whole, segs)
	}
}

// FuzzLiteRec: whatever the bytes, a frame's liteRec reads back as the
// Packet Decode made (or the frame goes whole), and a TCP segment's
// tcpSeg as the fields of it that tcp is promised.
func FuzzLiteRec(f *testing.F) {
	for _, fr := range frames(f, filepath.Join(pcapDir, "roce-ib_write_bw-10x4KiB.pcap")) {
		f.Add(fr, uint16(0))
	}
	for i, fr := range frames(f, "../../testdata/iwarp/recorded/transports-server-siw-0.pcap") {
		if i < 40 { // the handshakes and the first FPDUs
			f.Add(fr, uint16(0))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, cut uint16) {
		for _, link := range []int{LinkEthernet, LinkRaw, LinkSLL2} {
			liteRoundTrip(t, link, data, len(data)+int(cut))
			segRoundTrip(t, link, data, len(data)+int(cut))
		}
	})
}
