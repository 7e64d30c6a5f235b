package roce

import (
	"bytes"
	"encoding/binary"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/pcapgo"
)

// FuzzDecode feeds arbitrary frames to the decoder and the summary: no
// panic, and nothing read past what the capture kept.
func FuzzDecode(f *testing.F) {
	for _, file := range fixtures(f) {
		if _, err := ScanFile(file, func(p *Packet) error { return nil }); err != nil {
			f.Fatal(err)
		}
		raw := frames(f, file)
		for _, fr := range raw {
			f.Add(uint16(LinkEthernet), fr, uint16(len(fr)))
		}
	}
	f.Add(uint16(LinkSLL), []byte{}, uint16(0))
	f.Fuzz(func(t *testing.T, link uint16, data []byte, extra uint16) {
		var p Packet
		wire := len(data) + int(extra%4096)
		Decode(int(link), data, wire, &p)
		if p.CapLen != len(data) || p.WireLen != wire {
			t.Fatalf("lengths %d/%d, want %d/%d", p.CapLen, p.WireLen, len(data), wire)
		}
		if p.PayloadLen < 0 {
			t.Fatalf("negative payload length %d", p.PayloadLen)
		}
		s := NewSummary()
		s.Add(&p)
		s.Finish()
		l := NewLadder(5)
		l.Add(&p)
		var b bytes.Buffer
		if err := WriteText(&b, s); err != nil {
			t.Fatal(err)
		}
		if err := l.WriteLadder(&b); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzScan feeds arbitrary files to the reader (pcap and pcapng headers
// and block structure): an error or a result, never a panic.
func FuzzScan(f *testing.F) {
	for _, file := range fixtures(f) {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		if len(b) > 4096 {
			b = b[:4096]
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		// Every frame counted is one handed over, numbered in order, and
		// the same file gives the same summary twice over.
		var text [2]bytes.Buffer
		for i := range text {
			s := NewSummary()
			n := 0
			res, err := Scan(bytes.NewReader(b), func(p *Packet) error {
				if n++; p.Number != n {
					t.Fatalf("frame %d numbered %d", n, p.Number)
				}
				s.Add(p)
				return nil
			})
			if res.Frames != n {
				t.Fatalf("%d frames counted, %d handed over (err %v)", res.Frames, n, err)
			}
			s.Finish()
			if err := WriteText(&text[i], s); err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(text[0].Bytes(), text[1].Bytes()) {
			t.Fatalf("two summaries of one capture differ:\n%s\n---\n%s", text[0].Bytes(), text[1].Bytes())
		}
	})
}

// frames returns the raw bytes of each frame of a capture.
func frames(tb testing.TB, file string) [][]byte {
	tb.Helper()
	fh, err := os.Open(file)
	if err != nil {
		tb.Fatal(err)
	}
	defer fh.Close()
	var next func() ([]byte, gopacket.CaptureInfo, error)
	if strings.HasSuffix(file, ".pcapng") {
		r, err := pcapgo.NewNgReader(fh, pcapgo.DefaultNgReaderOptions)
		if err != nil {
			tb.Fatal(err)
		}
		next = r.ReadPacketData
	} else {
		r, err := pcapgo.NewReader(fh)
		if err != nil {
			tb.Fatal(err)
		}
		next = r.ReadPacketData
	}
	var out [][]byte
	for {
		data, _, err := next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, data)
	}
}

// TestHostilePcapng: files that would make pcapgo allocate gigabytes or
// divide by zero are refused with an error.
func TestHostilePcapng(t *testing.T) {
	le := binary.LittleEndian
	shb := func() []byte {
		b := le.AppendUint32(nil, 0x0a0d0d0a)
		b = le.AppendUint32(b, 28)
		b = le.AppendUint32(b, 0x1a2b3c4d)
		b = le.AppendUint32(b, 1)
		b = le.AppendUint64(b, ^uint64(0))
		return le.AppendUint32(b, 28)
	}
	idb := func(snap uint32, opts ...byte) []byte {
		n := uint32(20 + len(opts))
		b := le.AppendUint32(nil, 1)
		b = le.AppendUint32(b, n)
		b = le.AppendUint32(b, 1)
		b = le.AppendUint32(b, snap)
		b = append(b, opts...)
		return le.AppendUint32(b, n)
	}
	epb := func(capLen uint32, data int) []byte {
		n := uint32(32 + data)
		b := le.AppendUint32(nil, 6)
		b = le.AppendUint32(b, n)
		b = append(b, make([]byte, 12)...)
		b = le.AppendUint32(b, capLen)
		b = le.AppendUint32(b, capLen)
		b = append(b, make([]byte, data)...)
		return le.AppendUint32(b, n)
	}
	tsresol := func(e byte) []byte { return []byte{9, 0, 1, 0, e, 0, 0, 0, 0, 0, 0, 0} }
	tests := []struct {
		name string
		file []byte
		want string
	}{
		{"capture length beyond block", cat(shb(), idb(0xffffffff), epb(0xfffffff0, 64)), "capture length beyond its block"},
		{"binary resolution 2^-100", cat(shb(), idb(65535, tsresol(0x80|100)...), epb(60, 60)), "timestamp resolution"},
		{"decimal resolution 10^-70", cat(shb(), idb(65535, tsresol(70)...), epb(60, 60)), "timestamp resolution"},
		{"block length not a multiple of 4", cat(shb(), []byte{1, 0, 0, 0, 13, 0, 0, 0}), "bad length"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Scan(bytes.NewReader(tc.file), func(*Packet) error { return nil })
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	// Snaplen 0 means "unlimited" in pcapng: still read, with a bounded buffer.
	res, err := Scan(bytes.NewReader(cat(shb(), idb(0), epb(60, 60))), func(*Packet) error { return nil })
	if err != nil || res.Frames != 1 {
		t.Fatalf("snaplen 0: %d frames, %v; want 1 frame", res.Frames, err)
	}
}

// FuzzCMPrivate builds CM messages of any attribute and body, whole and
// cut at any snaplen: the private data read is exactly the body's bytes at
// the message's private data offset (a prefix of them when cut), and a
// buffer is found only where the caller's data opens with "RLAB".
func FuzzCMPrivate(f *testing.F) {
	f.Add(uint16(CMRep), cmRep(1, 2, 3, 4), uint16(300))
	f.Add(uint16(CMReq), cmReq(1, 2, 3, 18515), uint16(120))
	f.Add(uint16(CMRej), cmRej(1, 2, 28), uint16(0))
	f.Fuzz(func(t *testing.T, attr uint16, body []byte, cut uint16) {
		attr = []uint16{CMReq, CMRep, CMRej, CMRtu, CMDreq, CMDrep, CMMra}[attr%7]
		whole := frame{src: 1, dst: 2, roce: udMAD(0, cmMAD(attr, 1, body))}.serialize(t)
		var p Packet
		Decode(LinkEthernet, whole, len(whole), &p)
		at, n := privateArea(attr)
		d := make([]byte, 232)
		copy(d, body)
		if p.CM.Attr != attr || !bytes.Equal(p.CM.Private(), d[at:at+n]) {
			t.Fatalf("attr 0x%x: private data %x, want %x", p.CM.Attr, p.CM.Private(), d[at:at+n])
		}
		if b, ok := p.CM.Buffer(); ok {
			c := p.CM.Consumer()
			if string(c[:4]) != "RLAB" || binary.BigEndian.Uint32(c[4:]) != b.RKey || binary.BigEndian.Uint64(c[8:]) != b.Addr {
				t.Fatalf("buffer %+v from %x", b, c)
			}
		} else if c := p.CM.Consumer(); len(c) >= 20 && string(c[:4]) == "RLAB" {
			t.Fatalf("no buffer found in %x", c)
		}
		if _, _, ok := p.CM.RDMACM(); ok && (attr != CMReq || p.CM.Port() == 0) {
			t.Fatalf("an RDMA-CM header in a %s for service ID 0x%x", p.CM.Name(), p.CM.ServiceID)
		}
		var q Packet
		kept := whole[:min(len(whole), int(cut))]
		Decode(LinkEthernet, kept, len(whole), &q)
		if q.CM.Attr == attr && !bytes.HasPrefix(p.CM.Private(), q.CM.Private()) {
			t.Fatalf("cut at %d: private data %x is no prefix of %x", cut, q.CM.Private(), p.CM.Private())
		}
	})
}
