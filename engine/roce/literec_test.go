package roce

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
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
	// A time as a classic pcap's records give it (blocks.go, record).
	p.Number, p.ord, p.Time = 7, 42, time.Unix(1764300000, 123456789).UTC()
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

// TestLiteRecRoundTrip: every frame of the recorded captures (RoCEv2 with
// the CM, IPv6, TCP carrying iWARP, cut and whole) either reads back from
// its liteRec as Decode made it, or goes whole; and both happen.
func TestLiteRecRoundTrip(t *testing.T) {
	var files []string
	for _, g := range []string{pcapDir + "/*.pcap*", "../../testdata/iwarp/*.pcap", "../../testdata/iwarp/recorded/*.pcap"} {
		m, _ := filepath.Glob(g)
		files = append(files, m...)
	}
	lite, whole := 0, 0
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
		}
		fh.Close()
	}
	if lite == 0 || whole == 0 {
		t.Errorf("%d frames as liteRecs, %d whole: want both", lite, whole)
	}
}

// FuzzLiteRec: whatever the bytes, a frame's liteRec reads back as the
// Packet Decode made (or the frame goes whole).
func FuzzLiteRec(f *testing.F) {
	for _, fr := range frames(f, filepath.Join(pcapDir, "roce-ib_write_bw-10x4KiB.pcap")) {
		f.Add(fr, uint16(0))
	}
	f.Fuzz(func(t *testing.T, data []byte, cut uint16) {
		for _, link := range []int{LinkEthernet, LinkRaw, LinkSLL2} {
			liteRoundTrip(t, link, data, len(data)+int(cut))
		}
	})
}

// TestLiteRecOneLine: a liteRec fills one 64-byte cache line (what the
// hand-over between the workers costs is the lines it moves), and the
// frames it cannot hold go whole rather than read back wrong.
func TestLiteRecOneLine(t *testing.T) {
	if n := unsafe.Sizeof(liteRec{}); n != 64 {
		t.Errorf("liteRec is %d bytes, want 64", n)
	}
	var p Packet
	var arena []byte
	var r liteRec
	for _, f := range frames(t, filepath.Join(pcapDir, "roce-ib_write_bw-10x4KiB.pcap")) {
		arena = append([]byte(nil), f...)
		p.Time = time.Unix(1764300000, 5).UTC()
		Decode(LinkEthernet, arena, len(arena), &p)
		if p.Headers == HdrAETH { // an ACK: BTH, AETH and ICRC all set
			break
		}
	}
	if p.Headers != HdrAETH || !r.set(&p, arena) {
		t.Fatalf("an ACK of 2025 went whole: %+v", p)
	}
	tests := []struct {
		name   string
		change func(q *Packet)
	}{
		{"zero time", func(q *Packet) { q.Time = time.Time{} }},
		{"before 1970", func(q *Packet) { q.Time = time.Unix(-1, 0).UTC() }},
		{"after 2106", func(q *Packet) { q.Time = time.Unix(1<<32, 0).UTC() }},
		{"local time", func(q *Packet) { q.Time = time.Unix(1764300000, 5).In(time.FixedZone("X", 3600)) }},
		{"64 KiB on the wire", func(q *Packet) { q.WireLen = 1 << 16 }},
		{"64 KiB payload length", func(q *Packet) { q.PayloadLen = 1 << 16 }},
		{"TCP and BTH", func(q *Packet) { q.TCP.Seq = 1 }},
		{"TCP and ICRC", func(q *Packet) { q.BTH, q.AETH, q.TCP.Ack = BTH{}, AETH{}, 1 }},
		{"TVer over 4 bits", func(q *Packet) { q.BTH.TVer = 16 }},
		{"Pad over 2 bits", func(q *Packet) { q.BTH.Pad = 4 }},
	}
	for _, tc := range tests {
		q := p
		tc.change(&q)
		if r.set(&q, arena) {
			t.Errorf("%s: a liteRec took the frame; it cannot hold it", tc.name)
		}
	}
}
