package iograph

import (
	"bytes"
	"encoding/xml"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/rlab-dev/rlab/engine/roce"
)

var update = flag.Bool("update", false, "rewrite golden files")

const pcapDir = "../../testdata/pcap"

func build(t *testing.T, file string, interval time.Duration) *Graph {
	t.Helper()
	b := NewBuilder(interval)
	if _, err := roce.ScanFile(filepath.Join(pcapDir, file), func(p *roce.Packet) error {
		b.Add(p)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return b.Graph()
}

// TestBuckets checks the bits per second of each series against sums done
// by hand from the fixtures' frame lengths.
func TestBuckets(t *testing.T) {
	// Frames 1-11 are WRITEs (3 First of 1098 bytes, 8 of 1082) and
	// frame 12 an ACK (62 bytes), all in the first 2 ms of 4.27 ms.
	g := build(t, "roce-ib_write_bw-10x4KiB.pcap", 2*time.Millisecond)
	want := map[string]float64{
		SeriesRoCE:  (3*1098 + 8*1082 + 62) * 8 / 0.002,
		SeriesWrite: (3*1098 + 8*1082) * 8 / 0.002,
		SeriesAck:   62 * 8 / 0.002,
	}
	got := map[string]float64{}
	for _, s := range g.Series {
		if len(s.BPS) != 3 {
			t.Errorf("%s: %d buckets, want 3", s.Name, len(s.BPS))
			continue
		}
		got[s.Name] = s.BPS[0]
		var total float64
		for _, v := range s.BPS {
			total += v * 0.002 / 8
		}
		if int64(total+0.5) != s.Bytes {
			t.Errorf("%s adds up to %v bytes, want %d", s.Name, total, s.Bytes)
		}
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("first bucket, bit/s (-want +got):\n%s", d)
	}
	if g.Series[0].Bytes != 44060 {
		t.Errorf("RoCEv2 series %d bytes, want 44060", g.Series[0].Bytes)
	}
}

// TestSeriesPerClass: every operation class and TCP gets its own series,
// each packet lands in RoCEv2 and in its class.
func TestSeriesPerClass(t *testing.T) {
	g := build(t, "synth-rc-ud-cm.pcap", time.Millisecond)
	pk := map[string]int64{}
	for _, s := range g.Series {
		pk[s.Name] = s.Packets
	}
	want := map[string]int64{SeriesRoCE: 37, SeriesWrite: 6, SeriesRead: 4, SeriesSend: 14, SeriesAtomic: 4, SeriesAck: 7}
	if d := cmp.Diff(want, pk); d != "" {
		t.Errorf("packets per series (-want +got):\n%s", d)
	}
	g = build(t, "synth-vlan-ipv6-tcp.pcap", time.Millisecond)
	pk = map[string]int64{}
	for _, s := range g.Series {
		pk[s.Name] = s.Packets
	}
	if pk[SeriesTCP] != 3 || pk[SeriesRoCE] != 6 {
		t.Errorf("TCP %d, RoCEv2 %d packets; want 3, 6", pk[SeriesTCP], pk[SeriesRoCE])
	}
}

// TestSVG renders each fixture's graph: well-formed XML, one path per
// series, axis labels; golden files pin the drawing (-update rewrites).
func TestSVG(t *testing.T) {
	for _, file := range []string{"roce-ib_write_bw-10x4KiB.pcap", "synth-rc-ud-cm.pcap", "synth-vlan-ipv6-tcp.pcap"} {
		t.Run(file, func(t *testing.T) {
			g := build(t, file, 500*time.Microsecond)
			var b bytes.Buffer
			if err := WriteSVG(&b, g); err != nil {
				t.Fatal(err)
			}
			paths, d := 0, xml.NewDecoder(bytes.NewReader(b.Bytes()))
			for {
				tok, err := d.Token()
				if err != nil {
					if err.Error() != "EOF" {
						t.Fatalf("SVG is not well-formed XML: %v", err)
					}
					break
				}
				if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "path" {
					for _, a := range se.Attr {
						if a.Name.Local == "class" && a.Value == "series" {
							paths++
						}
					}
				}
			}
			if paths != len(g.Series) || paths == 0 {
				t.Errorf("%d series paths, want %d", paths, len(g.Series))
			}
			for _, s := range []string{"time (s) since", "bit/s", "</svg>"} {
				if !strings.Contains(b.String(), s) {
					t.Errorf("SVG lacks %q", s)
				}
			}
			golden := filepath.Join(pcapDir, "golden", file+".iograph.svg")
			if *update {
				if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (go test -update writes it)", err)
			}
			if d := cmp.Diff(string(want), b.String()); d != "" {
				t.Errorf("%s differs (-want +got):\n%s", golden, d)
			}
		})
	}
}

// TestNiceScale: axis tops are 1, 2 or 5 times a power of ten, above the data.
func TestNiceScale(t *testing.T) {
	tests := []struct{ v, step, top float64 }{
		{0, 1, 1}, {0.0043, 0.001, 0.005}, {141e6, 50e6, 150e6}, {9.9e9, 2e9, 10e9}, {1, 0.2, 1},
	}
	for _, tc := range tests {
		step, top := niceScale(tc.v)
		if diff := step/tc.step - 1; diff > 1e-9 || diff < -1e-9 || top/tc.top-1 > 1e-9 || top/tc.top-1 < -1e-9 {
			t.Errorf("niceScale(%v) = %v, %v; want %v, %v", tc.v, step, top, tc.step, tc.top)
		}
	}
}

// TestBuilderBoundedOverWideSpan: a builder holds at most maxDense
// intervals per series whatever span its frames cover (past it every ten
// are summed into one, the graph's interval ten times wider), and the
// graph is what summing the fine intervals gives; builders of a split
// scan that coarsened differently merge into the graph of one builder
// over every frame. Before, two FPDUs MaxBuckets-1 intervals apart made
// each series hold 1,048,576 intervals (8 MiB; 5.4 GB over a report's
// captures and cores).
func TestBuilderBoundedOverWideSpan(t *testing.T) {
	iv := 100 * time.Millisecond
	t0 := time.Unix(1764111782, 0)
	at := func(i int64) time.Time { return t0.Add(time.Duration(i) * iv) }

	b := NewBuilder(iv)
	for _, op := range []string{SeriesWrite, SeriesRead, SeriesSend} {
		b.AddIWARP(at(0), 100, op)
		b.AddIWARP(at(MaxBuckets-1), 100, op)
	}
	for s, held := range b.bytes {
		if len(held) > maxDense {
			t.Errorf("series %s holds %d intervals, want at most %d", seriesNames[s], len(held), maxDense)
		}
	}
	g := b.Graph()
	if g.Interval != 100*iv {
		t.Errorf("interval %v, want %v", g.Interval, 100*iv)
	}
	for _, s := range g.Series {
		want := int64(200) // two FPDUs of its operation
		if s.Name == SeriesIWARP {
			want = 600
		}
		if s.Bytes != want || len(s.BPS) != (MaxBuckets-1)/100+1 || s.BPS[0] == 0 || s.BPS[len(s.BPS)-1] == 0 {
			t.Errorf("series %s: %d bytes over %d intervals", s.Name, s.Bytes, len(s.BPS))
		}
	}

	// Frames over 50,000 intervals: the graph sums them per 10.
	const span = 50_000
	one, early, late := NewBuilder(iv), NewBuilder(iv), NewBuilder(iv)
	early.SetStart(t0)
	late.SetStart(t0)
	want := make([]float64, span/10)
	for i := int64(0); i < span; i += 7 {
		n := int(i%13) + 1
		one.AddIWARP(at(i), n, SeriesSend)
		if i < 1000 {
			early.AddIWARP(at(i), n, SeriesSend)
		} else {
			late.AddIWARP(at(i), n, SeriesSend)
		}
		want[i/10] += float64(n) * 8 / (10 * iv).Seconds()
	}
	for name, g := range map[string]*Graph{"one builder": one.Graph(), "merged": Merge([]*Builder{early, late}).Graph()} {
		if g.Interval != 10*iv {
			t.Errorf("%s: interval %v, want %v", name, g.Interval, 10*iv)
		}
		for _, s := range g.Series {
			if len(s.BPS) != len(want) {
				t.Fatalf("%s: series %s of %d intervals, want %d", name, s.Name, len(s.BPS), len(want))
			}
			for i := range want {
				if math.Abs(s.BPS[i]-want[i]) > 1e-6 {
					t.Fatalf("%s: series %s interval %d: %v b/s, want %v", name, s.Name, i, s.BPS[i], want[i])
				}
			}
		}
	}
}

// TestIntervalCacheSameAsDividing: frames in time order, out of it, before
// the start, past MaxBuckets and across the coarsening of the intervals
// land in the same intervals with the builder's cached interval bounds as
// when every frame's interval is found by dividing (the cache cleared
// before each), for small and huge intervals.
func TestIntervalCacheSameAsDividing(t *testing.T) {
	for _, iv := range []time.Duration{time.Microsecond, time.Millisecond, time.Second, 1 << 50} {
		cached, divided := NewBuilder(iv), NewBuilder(iv)
		t0 := time.Unix(1_800_000_000, 0)
		at := t0
		var seed uint64 = 7
		for i := 0; i < 200_000; i++ {
			seed = seed*6364136223846793005 + 1442695040888963407
			r := seed >> 33
			switch r % 100 {
			case 0:
				at = t0.Add(-time.Duration(r%1000) * iv) // before the start
			case 1:
				at = t0.Add(time.Duration(MaxBuckets+int64(r%5)-2) * iv) // at the end
			case 2:
				at = at.Add(-time.Duration(r%3) * iv) // back
			case 3:
				at = at.Add(time.Duration(r%50_000) * iv) // ahead: the intervals coarsen
			case 4, 5: // on the next held interval's first nanosecond, or the last before it
				span := iv * time.Duration(cached.step())
				at = t0.Add((at.Sub(t0)/span+1)*span - time.Duration(r%100/5%2))
			default:
				at = at.Add(time.Duration(r % uint64(max(iv/3, 1))))
			}
			cached.AddIWARP(at, int(r%1500), SeriesWrite)
			divided.lo, divided.hi = 0, 0
			divided.AddIWARP(at, int(r%1500), SeriesWrite)
		}
		small := iv <= time.Second // the huge one: no frame is past MaxBuckets intervals
		if d := cmp.Diff(divided.Graph(), cached.Graph()); d != "" || small && (cached.dropped == 0 || cached.step() == 1) {
			t.Errorf("interval %s: dropped %d, step %d, graphs differ (-dividing +cached):\n%s", iv, cached.dropped, cached.step(), d)
		}
	}
}
