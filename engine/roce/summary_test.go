package roce

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func summarize(t *testing.T, file string, ladderN int) (*Summary, *Ladder) {
	t.Helper()
	s := NewSummary()
	s.File = fixtureName(file)
	l := NewLadder(ladderN)
	res, err := ScanFile(file, func(p *Packet) error {
		s.Add(p)
		l.Add(p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	s.CutShort = res.CutShort
	s.Finish()
	return s, l
}

// TestSummaryCounts checks the analysis on the synthesized capture whose
// events are known: which retransmissions, NAKs, CNPs and CM messages.
func TestSummaryCounts(t *testing.T) {
	s, _ := summarize(t, filepath.Join(pcapDir, "synth-rc-ud-cm.pcap"), 0)
	type counts struct {
		Packets, Retransmits, NAKs, RNRNAKs, CNPs, ECN int64
		NAKCodes                                       map[uint8]int64
	}
	got := map[string]counts{}
	for _, f := range s.Flows {
		got[fmt.Sprintf("%s>%s QP 0x%02x", f.Src, f.Dst, f.DestQP)] = counts{
			f.Packets, f.Retransmits, f.NAKs, f.RNRNAKs, f.CNPs, f.ECN, f.NAKCodes}
	}
	want := map[string]counts{
		"10.99.0.1>10.99.0.2 QP 0x01": {Packets: 4},
		"10.99.0.2>10.99.0.1 QP 0x01": {Packets: 3},
		// PSN 106 (after the RNR NAK) and 110 (after the NAK) sent twice.
		"10.99.0.1>10.99.0.2 QP 0x22": {Packets: 14, Retransmits: 2, ECN: 1},
		"10.99.0.2>10.99.0.1 QP 0x11": {Packets: 13, NAKs: 2, RNRNAKs: 1, CNPs: 1, NAKCodes: map[uint8]int64{0: 1, 2: 1}},
		"10.99.0.1>10.99.0.2 QP 0x33": {Packets: 1},
		"10.99.0.1>10.99.0.2 QP 0x44": {Packets: 2},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("flows (-want +got):\n%s", d)
	}
	var msgs []string
	for _, e := range s.CM {
		msgs = append(msgs, e.Message)
	}
	if d := cmp.Diff([]string{"REQ", "REP", "RTU", "DREQ", "DREP", "REQ", "REJ"}, msgs); d != "" {
		t.Errorf("CM messages (-want +got):\n%s", d)
	}
	if s.BadOpcode != 1 || s.RoCEPackets != 37 || s.Frames != 37 {
		t.Errorf("frames %d, RoCE %d, reserved opcodes %d; want 37, 37, 1", s.Frames, s.RoCEPackets, s.BadOpcode)
	}
	if p := s.CM[0].Port; p != 18515 {
		t.Errorf("REQ port %d, want 18515", p)
	}
}

// TestGolden renders the summary, its JSON and a ladder of every fixture
// and compares them with testdata/pcap/golden (rewrite with -update).
func TestGolden(t *testing.T) {
	for _, file := range fixtures(t) {
		name := fixtureName(file)
		t.Run(name, func(t *testing.T) {
			s, l := summarize(t, file, 40)
			var txt, js bytes.Buffer
			if err := WriteText(&txt, s); err != nil {
				t.Fatal(err)
			}
			txt.WriteString("\n")
			if err := l.WriteLadder(&txt); err != nil {
				t.Fatal(err)
			}
			if err := WriteJSON(&js, s); err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join(pcapDir, "golden", name+".txt"), txt.Bytes())
			golden(t, filepath.Join(pcapDir, "golden", name+".json"), js.Bytes())
		})
	}
}

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if d := cmp.Diff(string(want), string(got)); d != "" {
		t.Errorf("%s differs (-want +got; go test -update rewrites it):\n%s", path, d)
	}
}

// TestICRC: the ICRC recomputed from the masked headers matches every
// packet of the capture recorded on real rxe, and a flipped bit anywhere
// under it (payload, BTH, IP source) is caught.
func TestICRC(t *testing.T) {
	raw := frames(t, filepath.Join(pcapDir, "roce-ib_write_bw-10x4KiB.pcap"))
	var p Packet
	for i, f := range raw {
		Decode(LinkEthernet, f, len(f), &p)
		if !p.ICRCChecked || !p.ICRCValid {
			t.Fatalf("frame %d: ICRC checked %v valid %v", i+1, p.ICRCChecked, p.ICRCValid)
		}
	}
	for _, off := range []int{14 + 12, 14 + 20 + 8 + 3, 14 + 20 + 8 + 30, len(raw[0]) - 5} {
		f := bytes.Clone(raw[0])
		f[off] ^= 0x10
		Decode(LinkEthernet, f, len(f), &p)
		if !p.ICRCChecked || p.ICRCValid {
			t.Errorf("bit flipped at %d: ICRC checked %v valid %v", off, p.ICRCChecked, p.ICRCValid)
		}
	}
	// TTL and the BTH's FECN/BECN bits are masked: changing them keeps it.
	for _, off := range []int{14 + 8, 14 + 20 + 8 + 4} {
		f := bytes.Clone(raw[0])
		f[off] ^= 0xc0
		Decode(LinkEthernet, f, len(f), &p)
		if !p.ICRCValid {
			t.Errorf("masked byte %d changed: ICRC no longer valid", off)
		}
	}
	tests := []struct {
		file         string
		checked, bad int64
	}{
		{"roce-ib_write_bw-10x4KiB.pcap", 50, 0},
		{"synth-rc-ud-cm.pcap", 36, 0},            // all but the reserved opcode
		{"synth-rc-ud-cm-snaplen128.pcap", 16, 0}, // the frames of up to 128 bytes
		{"synth-vlan-ipv6-tcp.pcap", 6, 1},        // one written with a zero ICRC
	}
	for _, tc := range tests {
		s, _ := summarize(t, filepath.Join(pcapDir, tc.file), 0)
		if s.ICRCChecked != tc.checked || s.ICRCBad != tc.bad {
			t.Errorf("%s: ICRC checked %d bad %d, want %d %d", tc.file, s.ICRCChecked, s.ICRCBad, tc.checked, tc.bad)
		}
	}
}

// TestFlowLimit: connections beyond MaxFlows share one overflow line and
// every packet is still counted once.
func TestFlowLimit(t *testing.T) {
	raw := frames(t, filepath.Join(pcapDir, "roce-ib_write_bw-10x4KiB.pcap"))
	s := NewSummary()
	var p Packet
	const n = MaxFlows + 500
	for i := 0; i < n; i++ {
		f := bytes.Clone(raw[0])
		f[14+20+8+5], f[14+20+8+6], f[14+20+8+7] = byte(i>>16), byte(i>>8), byte(i) // dest QP
		Decode(LinkEthernet, f, len(f), &p)
		s.Add(&p)
	}
	s.Finish()
	if len(s.Flows) != MaxFlows || s.Overflow == nil || s.Overflow.Packets != 500 {
		t.Fatalf("%d flows, overflow %+v; want %d and 500 packets", len(s.Flows), s.Overflow, MaxFlows)
	}
	var b bytes.Buffer
	if err := WriteText(&b, s); err != nil || !bytes.Contains(b.Bytes(), []byte("connections beyond the first")) {
		t.Errorf("text lacks the overflow line (err %v)", err)
	}
}

// TestICRCNotCheckedWithIPOptions: the ICRC's pseudo-header has no room
// for IPv4 options, so such a packet is decoded but its ICRC not judged.
func TestICRCNotCheckedWithIPOptions(t *testing.T) {
	raw := frames(t, filepath.Join(pcapDir, "roce-ib_write_bw-10x4KiB.pcap"))[11] // an ACK
	for _, optLen := range []int{4, 20} {
		f := append(append(bytes.Clone(raw[:34]), make([]byte, optLen)...), raw[34:]...)
		f[14] = 0x40 | byte((20+optLen)/4)
		total := int(f[16])<<8 | int(f[17]) + optLen
		f[16], f[17] = byte(total>>8), byte(total)
		var p Packet
		Decode(LinkEthernet, f, len(f), &p)
		if p.Problem != ProblemNone || p.AETH.MSN != 1 || p.ICRCChecked {
			t.Errorf("IPv4 options of %d bytes: problem %s, MSN %d, ICRC checked %v", optLen, p.Problem, p.AETH.MSN, p.ICRCChecked)
		}
	}
}

func TestLadderRows(t *testing.T) {
	_, l := summarize(t, filepath.Join(pcapDir, "roce-ib_write_bw-10x4KiB.pcap"), 13)
	rows := l.Rows()
	if len(rows) != 13 {
		t.Fatalf("%d rows, want 13", len(rows))
	}
	want := LadderRow{Frame: 12, Time: rows[11].Time, ToRight: false, Label: "Acknowledge PSN 11302721", Detail: "QP 0x00001a, ACK MSN 1"}
	if d := cmp.Diff(want, rows[11]); d != "" || rows[11].Time <= 0 {
		t.Errorf("row 12 (-want +got):\n%s", d)
	}
	if !rows[0].ToRight || l.A.String() != "10.99.0.2" || l.B.String() != "10.99.0.1" {
		t.Errorf("ends %s -> %s, first row to the right %v", l.A, l.B, rows[0].ToRight)
	}
}
