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
	s.File = filepath.Base(file)
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
		name := filepath.Base(file)
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
