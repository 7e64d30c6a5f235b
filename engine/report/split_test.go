package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/engine/iograph"
	"github.com/rlab-dev/rlab/engine/iwarp"
	"github.com/rlab-dev/rlab/engine/roce"
)

// onePass is what rlab pcap made before the split: one summary, iWARP
// analyzer and graph fed every frame in file order.
func onePass(t *testing.T, files []string, iv time.Duration, finishIntoGraph bool) *Analysis {
	s := roce.NewSummary()
	g := iograph.NewBuilder(iv)
	iw := iwarpFeeding(g)
	res, err := ScanCapture(files, func(p *roce.Packet) error {
		s.Add(p)
		iw.Add(p)
		g.Add(p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	s.CutShort = res.CutShort
	s.Finish()
	a := &Analysis{Summary: s, Result: res}
	if !finishIntoGraph {
		a.IO = g.Graph()
	}
	a.IWARP = iw.Finish()
	if finishIntoGraph {
		a.IO = g.Graph()
	}
	return a
}

// analysisText is everything the outputs show of an analysis: the JSON and
// text of both summaries, the graph, and the order of the TCP connections
// that carried no iWARP (what attribution names).
func analysisText(t *testing.T, a *Analysis) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for _, v := range []any{a.Summary, a.IWARP, a.IO, a.Result} {
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
	}
	if err := roce.WriteText(&b, a.Summary); err != nil {
		t.Fatal(err)
	}
	if err := iwarp.WriteText(&b, a.IWARP, a.Summary.First); err != nil {
		t.Fatal(err)
	}
	for _, c := range a.IWARP.TCP {
		fmt.Fprintln(&b, "tcp", c.Dirs[0].Src, c.Dirs[0].Dst, c.Dirs[0].Segments, c.BeganBefore)
	}
	return b.String()
}

// TestAnalyzeSplitSameAsOnePass: on every capture of the project's
// testdata (the siw recordings, the report and attribution runs, the
// RoCEv2 ones) and on a ring of files read as one capture, AnalyzeSplit on
// 1, 2, 3, 5 and 7 workers makes byte for byte the summaries, iWARP analysis and
// IO graph (both ways of drawing the FPDUs given up at the end) that one
// pass over every frame makes.
func TestAnalyzeSplitSameAsOnePass(t *testing.T) {
	var captures [][]string
	for _, g := range []string{"../../testdata/pcap/*.pcap*", "../../testdata/pcap/recorded/*.pcap", "../../testdata/iwarp/*.pcap",
		"../../testdata/iwarp/recorded/*.pcap*", "../../testdata/report/*/hosts/*/captures/*.pcap*",
		"../../testdata/attrib/*/hosts/*/captures/*.pcap*"} {
		m, _ := filepath.Glob(g)
		for _, f := range m {
			captures = append(captures, []string{f})
		}
	}
	rec, _ := filepath.Glob("../../testdata/iwarp/recorded/*.pcap")
	if len(captures) < 25 || len(rec) < 2 {
		t.Fatalf("%d captures, %d recorded siw ones", len(captures), len(rec))
	}
	captures = append(captures, OrderCaptureFiles(append(rec, "../../testdata/pcap/roce-ib_write_bw-10x4KiB.pcap")))
	for _, files := range captures {
		for _, fin := range []bool{false, true} {
			for _, iv := range []time.Duration{time.Millisecond, 100 * time.Millisecond} {
				want := analysisText(t, onePass(t, files, iv, fin))
				for _, w := range []int{1, 2, 3, 5, 7} {
					a, ok, err := AnalyzeSplit(files, w, iv, fin)
					if err != nil || !ok {
						t.Fatalf("%v workers %d: %v %v", files, w, ok, err)
					}
					if got := analysisText(t, a); got != want {
						t.Errorf("%v workers %d interval %s finish drawn %v:\none pass %s\nsplit %s", files, w, iv, fin, want, got)
					}
				}
			}
		}
	}
}
