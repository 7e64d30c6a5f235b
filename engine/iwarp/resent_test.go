package iwarp

import (
	"path/filepath"
	"testing"

	"github.com/rlab-dev/rlab/engine/roce"
)

// TestOnResentMatchesCounts: OnResent is called once for every segment
// the directions count as retransmitted, on the project's iWARP captures
// (iwarp-markers-crc holds one: frame 15, as tshark's
// tcp.analysis.retransmission says).
func TestOnResentMatchesCounts(t *testing.T) {
	files, _ := filepath.Glob("../../testdata/iwarp/*.pcap")
	public, _ := filepath.Glob("../../testdata/iwarp/public/*.pcap")
	files = append(files, public...)
	if len(files) == 0 {
		t.Fatal("no captures")
	}
	total := 0
	for _, f := range files {
		a := NewAnalyzer()
		var frames []int
		a.OnResent = func(e *Event) {
			if !e.Resent || e.Conn == nil || e.Len <= 0 {
				t.Errorf("%s: resent event %+v", filepath.Base(f), e)
			}
			frames = append(frames, e.Frame)
		}
		if _, err := roce.ScanFile(f, func(p *roce.Packet) error { a.Add(p); return nil }); err != nil {
			t.Fatal(err)
		}
		var want int64
		for _, c := range a.Finish().Conns {
			for _, d := range c.Dirs {
				want += d.Retransmits
			}
		}
		if int64(len(frames)) != want {
			t.Errorf("%s: OnResent called for frames %v, the directions count %d", filepath.Base(f), frames, want)
		}
		if filepath.Base(f) == "iwarp-markers-crc.pcap" && (len(frames) != 1 || frames[0] != 15) {
			t.Errorf("iwarp-markers-crc.pcap: resent frames %v, want [15]", frames)
		}
		total += len(frames)
	}
	if total == 0 {
		t.Error("no capture had a retransmission: the test checks nothing")
	}
}
