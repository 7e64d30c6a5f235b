package roce

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"testing"
	"testing/iotest"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
)

// splitScan runs ScanSplit over data and returns every packet (merged by
// Ord), the merged summary (nil when Merge cannot say it) and the result.
// It fails t when one worker sees a flow's packets out of file order, when
// a flow's packets reach two workers, or when reading data in large reads
// and one byte per read (every record cut across reads, as a pipe or a
// slow disk may hand it over) differ in any of these.
func splitScan(t testing.TB, data []byte, workers int) ([]packetLog, *Summary, ScanResult, error) {
	t.Helper()
	all, s, res, err := splitScanFrom(t, ReaderSource(bytes.NewReader(data)), workers)
	mall, ms, mres, merr := splitScanFrom(t, ReaderSource(iotest.OneByteReader(bytes.NewReader(data))), workers)
	if fmt.Sprint(err) != fmt.Sprint(merr) || res != mres {
		t.Errorf("one byte per read: %+v %v; large reads: %+v %v", mres, merr, res, err)
	}
	if !reflect.DeepEqual(all, mall) {
		t.Errorf("one byte per read: %d packets differ from the %d of large reads", len(mall), len(all))
	}
	if (s == nil) != (ms == nil) || s != nil && summaryJSON(t, s) != summaryJSON(t, ms) {
		t.Errorf("one byte per read: the merged summary differs from the one of large reads")
	}
	return all, s, res, err
}

func splitScanFrom(t testing.TB, src Source, workers int) ([]packetLog, *Summary, ScanResult, error) {
	logs := make([][]packetLog, workers)
	sums := make([]*Summary, workers)
	for i := range sums {
		sums[i] = NewSummary()
	}
	res, err := ScanSplit([]Source{src}, workers, func(w int, p *Packet) {
		q := *p
		q.Payload = nil
		if n := len(logs[w]); n > 0 && logs[w][n-1].P.ord >= p.ord {
			t.Errorf("worker %d: frame ord %d after %d", w, p.ord, logs[w][n-1].P.ord)
		}
		logs[w] = append(logs[w], packetLog{q, append([]byte(nil), p.Payload...)})
		sums[w].Add(p)
	})
	owner := map[string]int{}
	var all []packetLog
	for w, l := range logs {
		for _, pl := range l {
			if k := flowName(&pl.P); k != "" {
				if o, ok := owner[k]; ok && o != w {
					t.Errorf("flow %s on workers %d and %d", k, o, w)
				}
				owner[k] = w
			}
		}
		all = append(all, l...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].P.ord < all[j].P.ord })
	s, ok := Merge(sums)
	if ok {
		s.CutShort = res.CutShort
		s.Finish()
	}
	return all, s, res, err
}

// flowName is what must stay on one worker: a RoCEv2 flow as Summary keys
// it, a TCP connection both ways.
func flowName(p *Packet) string {
	switch {
	case p.Proto == ProtoRoCE && p.Problem != ProblemMalformed && p.HasBTH:
		return p.Src.String() + ">" + p.Dst.String() + " " + string(rune(p.BTH.DestQP))
	case p.Proto == ProtoTCP && p.Problem == ProblemNone:
		a, b := p.Src.String()+":"+string(rune(p.SrcPort)), p.Dst.String()+":"+string(rune(p.DstPort))
		if b < a {
			a, b = b, a
		}
		return "tcp " + a + " " + b
	}
	return ""
}

// oneSummary is the summary of Scan, with its result.
func oneSummary(data []byte) (*Summary, ScanResult, error) {
	s := NewSummary()
	res, err := Scan(bytes.NewReader(data), func(p *Packet) error { s.Add(p); return nil })
	s.CutShort = res.CutShort
	s.Finish()
	return s, res, err
}

func summaryJSON(t testing.TB, s *Summary) string {
	var b bytes.Buffer
	if err := json.NewEncoder(&b).Encode(s); err != nil {
		t.Fatal(err)
	}
	if err := WriteText(&b, s); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestScanSplitSameAsScan: on every capture of the project's testdata
// (RoCEv2, CM, iWARP recorded from siw, SLL2, pcapng, gzip), whole and cut
// short inside a frame, ScanSplit with 1, 2 and 7 workers hands out the
// packets Scan hands out (each exactly once, each flow's in order on one
// worker), and the merged summary prints and marshals byte for byte as
// Scan's.
func TestScanSplitSameAsScan(t *testing.T) {
	var files []string
	for _, g := range []string{"../../testdata/pcap/*.pcap*", "../../testdata/pcap/recorded/*.pcap", "../../testdata/iwarp/*.pcap",
		"../../testdata/iwarp/recorded/*.pcap*", "../../testdata/report/*/hosts/*/captures/*.pcap*",
		"../../testdata/attrib/*/hosts/*/captures/*.pcap*"} {
		m, _ := filepath.Glob(g)
		files = append(files, m...)
	}
	if len(files) < 25 {
		t.Fatalf("only %d captures found", len(files))
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range []struct {
			name string
			data []byte
		}{{"whole", data}, {"cut", data[:len(data)*2/3]}} {
			want, wres, werr := logScan(t, v.data, 0, 0)
			wsum, _, _ := oneSummary(v.data)
			for _, w := range []int{1, 2, 7} {
				got, sum, res, err := splitScan(t, v.data, w)
				name := filepath.Base(f) + " " + v.name
				if (err == nil) != (werr == nil) || err != nil && err.Error() != werr.Error() {
					t.Errorf("%s workers %d: error %v, Scan's %v", name, w, err, werr)
				}
				if res != wres {
					t.Errorf("%s workers %d: %+v, Scan's %+v", name, w, res, wres)
				}
				if len(got) != len(want) {
					t.Errorf("%s workers %d: %d packets, Scan %d", name, w, len(got), len(want))
					continue
				}
				for i := range want {
					if !reflect.DeepEqual(want[i], got[i]) {
						t.Errorf("%s workers %d: packet %d differs:\nScan      %+v\nScanSplit %+v", name, w, i, want[i], got[i])
						break
					}
				}
				if sum == nil {
					t.Errorf("%s workers %d: the summaries did not merge", name, w)
				} else if a, b := summaryJSON(t, wsum), summaryJSON(t, sum); a != b {
					t.Errorf("%s workers %d: merged summary differs:\nScan  %s\nSplit %s", name, w, a, b)
				}
			}
		}
	}
}

// FuzzScanSplit: on any bytes, ScanSplit hands out Scan's packets and
// error, and the merged summary is Scan's (or says it cannot merge, only
// past MaxFlows), and so is ScanSplitSummaries' on 3 workers.
func FuzzScanSplit(f *testing.F) {
	for _, g := range []string{"../../testdata/pcap/*.pcap*", "../../testdata/iwarp/*.pcap"} {
		m, _ := filepath.Glob(g)
		for _, file := range m {
			if b, err := os.ReadFile(file); err == nil && len(b) < 64<<10 {
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		want, wres, werr := logScan(t, data, 0, 0)
		wsum, _, _ := oneSummary(data)
		got, sum, res, err := splitScan(t, data, 3)
		if (err == nil) != (werr == nil) || err != nil && err.Error() != werr.Error() || res != wres {
			t.Fatalf("ScanSplit %+v %v, Scan %+v %v", res, err, wres, werr)
		}
		a, _ := json.Marshal(want)
		b, _ := json.Marshal(got)
		if !bytes.Equal(a, b) {
			t.Fatalf("packets differ")
		}
		if sum == nil {
			if len(wsum.Flows) < MaxFlows {
				t.Fatalf("%d flows did not merge", len(wsum.Flows))
			}
			return
		}
		if a, b := summaryJSON(t, wsum), summaryJSON(t, sum); a != b {
			t.Fatalf("merged summary differs:\nScan  %s\nSplit %s", a, b)
		}
		// And counting where decoded (ScanSplitSummaries): the same summary.
		sums := []*Summary{NewSummary(), NewSummary(), NewSummary()}
		res, err = ScanSplitSummaries([]Source{ReaderSource(bytes.NewReader(data))}, sums, nil, nil)
		if (err == nil) != (werr == nil) || err != nil && err.Error() != werr.Error() || res != wres {
			t.Fatalf("ScanSplitSummaries %+v %v, Scan %+v %v", res, err, wres, werr)
		}
		if sum, ok := Merge(sums); ok {
			sum.CutShort = res.CutShort
			sum.Finish()
			if a, b := summaryJSON(t, wsum), summaryJSON(t, sum); a != b {
				t.Fatalf("ScanSplitSummaries: merged summary differs:\nScan  %s\nSplit %s", a, b)
			}
		} else if len(wsum.Flows) < MaxFlows {
			t.Fatalf("ScanSplitSummaries: %d flows did not merge", len(wsum.Flows))
		}
	})
}

// bigCapture is 5,000 frames of the recorded RoCEv2, CM and siw captures
// in turn (many batches and many reads), a time apart each, in the byte
// order and time unit asked for.
func bigCapture(t *testing.T, bigEndian, nanos bool) []byte {
	var raw [][]byte
	for _, f := range []string{"../../testdata/pcap/recorded/roce-ib_write_bw-10x4KiB.pcap", "../../testdata/iwarp/recorded/transports-server-siw-0.pcap",
		"../../testdata/pcap/recorded/rdma-cm-rping.pcap"} {
		if _, err := os.Stat(f); err == nil {
			raw = append(raw, frames(t, f)...)
		}
	}
	if len(raw) < 50 {
		t.Fatalf("%d frames in the recorded captures", len(raw))
	}
	var buf bytes.Buffer
	w := pcapgo.NewWriter(&buf)
	if nanos {
		w = pcapgo.NewWriterNanos(&buf)
	}
	if err := w.WriteFileHeader(1<<18, layers.LinkTypeEthernet); err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1_800_000_000, 0)
	for i := 0; i < 5_000; i++ {
		f := raw[i%len(raw)]
		ci := gopacket.CaptureInfo{Timestamp: t0.Add(time.Duration(i) * 1234567), CaptureLength: len(f), Length: len(f) + i%3}
		if err := w.WritePacket(ci, f); err != nil {
			t.Fatal(err)
		}
	}
	b := buf.Bytes()
	if bigEndian { // the same file as a big-endian host writes it
		swap := func(b []byte) { slices.Reverse(b) }
		swap(b[0:4])
		swap(b[4:6])
		swap(b[6:8])
		for i := 8; i < 24; i += 4 {
			swap(b[i : i+4])
		}
		for off := 24; off+16 <= len(b); {
			n := int(binary.LittleEndian.Uint32(b[off+8:]))
			for i := 0; i < 16; i += 4 {
				swap(b[off+i : off+i+4])
			}
			off += 16 + n
		}
	}
	return b
}

// TestScanSplitBig: a capture of many batches, little- and big-endian, in
// micro- and nanoseconds, whole and cut at every place near its end
// (inside the last record's header, right after it, inside its data)
// and at random places, reads the same with ScanSplit's block reader as with
// Scan's gopacket reader: packets, times, result and error.
func TestScanSplitBig(t *testing.T) {
	for _, v := range []struct{ be, ns bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
		data := bigCapture(t, v.be, v.ns)
		order := binary.ByteOrder(binary.LittleEndian)
		if v.be {
			order = binary.BigEndian
		}
		last := 24 // where the last record starts
		for off := 24; off < len(data); off += 16 + int(order.Uint32(data[off+8:])) {
			last = off
		}
		cuts := []int{len(data), len(data) - 1, last, last + 1, last + 8, last + 15, last + 16, last + 17}
		rng := rand.New(rand.NewPCG(1, 2))
		for k := 0; k < 3; k++ {
			cuts = append(cuts, 24+rng.IntN(len(data)-24))
		}
		for _, c := range cuts {
			want, wres, werr := logScan(t, data[:c], 0, 0)
			got, sum, res, err := splitScan(t, data[:c], 2)
			name := fmt.Sprintf("big-endian %v ns %v cut at %d of %d", v.be, v.ns, c, len(data))
			if (err == nil) != (werr == nil) || err != nil && err.Error() != werr.Error() || res != wres {
				t.Fatalf("%s: %+v %v, Scan's %+v %v", name, res, err, wres, werr)
			}
			if len(got) != len(want) || !reflect.DeepEqual(want, got) {
				t.Fatalf("%s: %d packets differ from Scan's %d", name, len(got), len(want))
			}
			if wsum, _, _ := oneSummary(data[:c]); sum == nil || summaryJSON(t, wsum) != summaryJSON(t, sum) {
				t.Fatalf("%s: merged summary differs", name)
			}
		}
	}
}

// TestScanSplitBadRecords: records that gopacket refuses (longer than the
// snaplen rlab allows, or captured longer than on the wire) stop
// ScanSplit at the same frame with the same error as Scan.
func TestScanSplitBadRecords(t *testing.T) {
	data := bigCapture(t, false, false)
	for _, v := range []struct {
		name      string
		cap, wire uint32
	}{{"past snaplen", snapMax + 1, snapMax + 1}, {"longer than the wire", 100, 99}} {
		b := slices.Clone(data)
		off, n := 24, 0
		for ; n < 1500; n++ { // the 1501st record, in the third batch
			off += 16 + int(binary.LittleEndian.Uint32(b[off+8:]))
		}
		binary.LittleEndian.PutUint32(b[off+8:], v.cap)
		binary.LittleEndian.PutUint32(b[off+12:], v.wire)
		_, wres, werr := logScan(t, b, 0, 0)
		got, _, res, err := splitScan(t, b, 2)
		if werr == nil || err == nil || err.Error() != werr.Error() || res != wres || len(got) != 1500 {
			t.Errorf("%s: %d packets, %+v %v; Scan %+v %v", v.name, len(got), res, err, wres, werr)
		}
	}
}

// TestMergePastMaxFlows: past MaxFlows the overflow line's PSN accounting
// depends on the order across flows, so Merge says it cannot merge (the
// caller reads on one core), and below it merges.
func TestMergePastMaxFlows(t *testing.T) {
	raw := frames(t, filepath.Join(pcapDir, "roce-ib_write_bw-10x4KiB.pcap"))
	var f []byte
	for _, r := range raw { // a RoCEv2 frame over IPv4 without options
		if len(r) > 50 && r[12] == 0x08 && r[13] == 0 && r[14] == 0x45 && r[23] == 17 {
			f = slices.Clone(r)
			break
		}
	}
	if f == nil {
		t.Fatal("no RoCEv2 frame")
	}
	for _, n := range []int{MaxFlows, MaxFlows + 3} {
		var buf bytes.Buffer
		w := pcapgo.NewWriter(&buf)
		if err := w.WriteFileHeader(1<<18, layers.LinkTypeEthernet); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < n; i++ {
			put24(f[14+20+8+5:], uint32(i)) // the BTH's destination QP
			if err := w.WritePacket(gopacket.CaptureInfo{CaptureLength: len(f), Length: len(f)}, f); err != nil {
				t.Fatal(err)
			}
		}
		_, sum, _, err := splitScan(t, buf.Bytes(), 2)
		if err != nil || (sum != nil) != (n <= MaxFlows) {
			t.Errorf("%d flows: merged %v, err %v", n, sum != nil, err)
		}
		if wsum, _, _ := oneSummary(buf.Bytes()); sum != nil && summaryJSON(t, wsum) != summaryJSON(t, sum) {
			t.Errorf("%d flows: merged summary differs", n)
		}
	}
}

// TestScanSplitFileShrinks: a capture file that another program truncates
// while ScanSplit reads it ends the scan as a capture cut short (the whole
// frames before the cut, no error, no crash), on one worker and on two; and
// a file left alone reads every frame.
func TestScanSplitFileShrinks(t *testing.T) {
	data := bigCapture(t, false, false)
	path := filepath.Join(t.TempDir(), "cap.pcap")
	for _, shrink := range []bool{false, true} {
		for _, w := range []int{1, 2} {
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			fs := FileSource(path)
			src := Source{name: fs.name, open: func() (frameFunc, *pcapBlocks, func(), error) {
				next, pb, closeSrc, err := fs.open()
				if shrink { // opened and its header read: now cut it
					if err := os.Truncate(path, 4096); err != nil {
						t.Fatal(err)
					}
				}
				return next, pb, closeSrc, err
			}}
			counts := make([]int, w)
			res, err := ScanSplit([]Source{src}, w, func(w int, _ *Packet) { counts[w]++ })
			n := 0
			for _, c := range counts {
				n += c
			}
			switch {
			case shrink && (err != nil || res.Frames == 0 || res.Frames >= 5000 || n != res.Frames):
				t.Errorf("shrunk, workers %d: %+v %v, %d packets", w, res, err, n)
			case !shrink && (err != nil || res.Frames != 5000 || n != 5000):
				t.Errorf("workers %d: %+v %v, %d packets", w, res, err, n)
			}
		}
	}
}

// TestScanSplitDecodesAhead: a worker whose next batch another worker is
// still decoding reads and decodes the batch after it meanwhile, hands fn
// nothing of it yet, and once the first is decoded hands fn its packets
// of both in file order, as Scan's.
func TestScanSplitDecodesAhead(t *testing.T) {
	data := bigCapture(t, false, false)
	// Cut data after its first two batches: the scan ends there.
	_, pb, err := openSplit(bytes.NewReader(data))
	if err != nil || pb == nil {
		t.Fatal("not a classic pcap", err)
	}
	end, sizes := 24, [2]int{}
	for i := range sizes {
		var b batch
		if sizes[i], err = pb.fill(&b); err != nil || sizes[i] == 0 {
			t.Fatalf("batch %d: %d frames, %v", i, sizes[i], err)
		}
		end += len(b.arena)
	}
	data = data[:end]
	want, _, err := logScan(t, data, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	const workers, w = 2, 1
	rd := &splitReader{sources: []Source{ReaderSource(bytes.NewReader(data))}, free: make(chan *splitBatch, 6),
		in: []chan *splitBatch{make(chan *splitBatch, 6), make(chan *splitBatch, 6)}}
	for range 6 {
		rd.free <- &splitBatch{recs: make([]liteRec, batchFrames)}
	}
	// Worker 0 reads batch 0 and has not decoded it yet.
	b0 := <-rd.free
	if !rd.read(b0) || b0.n != sizes[0] {
		t.Fatalf("batch 0: %d frames, want %d", b0.n, sizes[0])
	}
	var got []packetLog
	fn := func(w int, p *Packet) {
		if w != 1 {
			return
		}
		q := *p
		q.Payload = nil
		got = append(got, packetLog{q, append([]byte(nil), p.Payload...)})
	}
	finished := make(chan struct{})
	go func() {
		splitLoop(w, workers, rd, &splitCfg{all: fn})
		close(finished)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for len(rd.free) != 4 || len(rd.in[0]) != 2 {
		if time.Now().After(deadline) {
			t.Fatal("batch 1 not read while batch 0 was being decoded")
		}
		time.Sleep(time.Millisecond)
	}
	var b1 *splitBatch
	for i := range 2 {
		if b := <-rd.in[0]; i == 1 {
			b1 = b
		}
	}
	select {
	case <-b1.done:
	case <-time.After(10 * time.Second):
		t.Fatal("batch 1 not decoded ahead while batch 0 was being decoded")
	}
	if len(got) != 0 {
		t.Fatalf("fn had %d packets before batch 0 was decoded", len(got))
	}
	var dec, own, seg Packet
	cfg := &splitCfg{all: func(int, *Packet) { t.Error("fn called for a batch decoded without inline") }}
	decodeBatch(0, workers, b0, false, &dec, cfg)
	for _, b := range []*splitBatch{b0, b1} {
		accountBatch(0, b, &own, &seg, &splitCfg{all: fn})
		if b.refs.Add(-1) == 0 {
			rd.free <- b
		}
	}
	<-finished
	var mine []packetLog
	for _, pl := range want {
		if flowOwner(&pl.P, workers) == w {
			mine = append(mine, pl)
		}
	}
	if len(mine) == 0 {
		t.Fatal("worker 1 owns no packet of the first two batches: pick another capture")
	}
	for i := range got {
		got[i].P.ord = 0 // logScan's packets carry none
	}
	for i := range mine {
		mine[i].P.ord = 0
	}
	if !reflect.DeepEqual(mine, got) {
		t.Errorf("worker 1 got %d packets, want Scan's %d of its flows, in order", len(got), len(mine))
	}
	if len(rd.free) != 6 {
		t.Errorf("%d of 6 batches back in the pool", len(rd.free))
	}
}

// resendCapture is frames of two RoCEv2 conversations and a TCP connection
// in turn over many batches: WRITEs whose PSNs now and then go back (a
// go-back-N resend), their ACKs and NAKs, in the recorded capture's bytes.
func resendCapture(t *testing.T) []byte {
	var write, ack []byte
	for _, f := range frames(t, "../../testdata/pcap/recorded/rdma-write-10x4KiB.pcap") {
		var p Packet
		Decode(1, f, len(f), &p)
		switch {
		case p.Proto != ProtoRoCE || !p.HasBTH || p.Headers&^(HdrAETH|HdrRETH) != 0:
		case write == nil && opTable[p.BTH.Opcode].request:
			write = f
		case ack == nil && p.Headers&HdrAETH != 0:
			ack = f
		}
	}
	var tcp [][]byte
	for _, f := range frames(t, "../../testdata/iwarp/recorded/transports-server-siw-0.pcap") {
		var p Packet
		if Decode(1, f, len(f), &p); p.Proto == ProtoTCP && p.Problem == ProblemNone {
			tcp = append(tcp, f)
		}
	}
	if write == nil || ack == nil || len(tcp) == 0 {
		t.Fatal("no WRITE, ACK or TCP frame in the recordings")
	}
	var buf bytes.Buffer
	w := pcapgo.NewWriter(&buf)
	if err := w.WriteFileHeader(1<<18, layers.LinkTypeEthernet); err != nil {
		t.Fatal(err)
	}
	bth := func(f []byte) []byte { return f[14+20+8:] } // plain IPv4 and UDP
	rng := rand.New(rand.NewPCG(5, 6))
	psn := [2]uint32{}
	t0 := time.Unix(1_800_000_000, 0)
	for i := 0; i < 6000; i++ {
		var f []byte
		switch c := i % 2; {
		case i%3 == 2:
			f = tcp[i%len(tcp)]
		case rng.IntN(4) == 0:
			f = append([]byte(nil), ack...)
			b := bth(f)
			b[7] ^= byte(c) // the other conversation's QP
			if rng.IntN(8) == 0 {
				b[12] = 0x60 | byte(rng.IntN(3)) // a NAK, of code 0 to 2
			}
		default:
			f = append([]byte(nil), write...)
			b := bth(f)
			b[7] ^= byte(c)
			if rng.IntN(10) == 0 {
				psn[c] -= uint32(rng.IntN(40)) // back: a resend
			}
			psn[c] = (psn[c] + 1) & 0xffffff
			b[9], b[10], b[11] = byte(psn[c]>>16), byte(psn[c]>>8), byte(psn[c])
		}
		ci := gopacket.CaptureInfo{Timestamp: t0.Add(time.Duration(i) * time.Microsecond), CaptureLength: len(f), Length: len(f)}
		if err := w.WritePacket(ci, f); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// TestScanSplitSummariesSameAsAdd: on every capture of the project's
// testdata, on bigCapture and on resendCapture (two conversations of
// go-back-N resends and NAKs, their frames in turn over many batches, and
// a TCP connection), ScanSplitSummaries on 1, 2, 3 and 7 workers, merged,
// prints and marshals byte for byte as one Summary.Add of every frame in
// file order: a count lost or doubled in the merge, or a flow's PSNs
// compared out of order (by the worker that decoded them rather than the
// owner), shows. Each hands every frame once, in file order on each
// worker; tcp every TCP frame once, a connection's in order on one worker.
func TestScanSplitSummariesSameAsAdd(t *testing.T) {
	var files []string
	for _, g := range []string{"../../testdata/pcap/*.pcap*", "../../testdata/pcap/recorded/*.pcap", "../../testdata/iwarp/*.pcap",
		"../../testdata/iwarp/recorded/*.pcap*", "../../testdata/report/*/hosts/*/captures/*.pcap*",
		"../../testdata/attrib/*/hosts/*/captures/*.pcap*"} {
		m, _ := filepath.Glob(g)
		files = append(files, m...)
	}
	type capture struct {
		name string
		data []byte
	}
	var captures []capture
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		captures = append(captures, capture{filepath.Base(f), data})
	}
	captures = append(captures, capture{"big", bigCapture(t, false, false)}, capture{"resends", resendCapture(t)})
	for _, c := range captures {
		want, wres, werr := oneSummary(c.data)
		wantSegs := map[int64]string{} // by Packet.ord, as Scan decodes them
		Scan(bytes.NewReader(c.data), func(p *Packet) error {
			if p.Proto == ProtoTCP && p.Problem == ProblemNone {
				wantSegs[p.ord] = tcpSegView(p)
			}
			return nil
		})
		if c.name == "resends" {
			if r := want.Flows[0].Retransmits + want.Flows[1].Retransmits; len(want.Flows) != 4 || r < 50 {
				t.Fatalf("resends: %d flows, %d resent", len(want.Flows), r)
			}
		}
		for _, w := range []int{1, 2, 3, 7} {
			name := fmt.Sprintf("%s workers %d", c.name, w)
			sums := make([]*Summary, w)
			for i := range sums {
				sums[i] = NewSummary()
			}
			each := make([][]int64, w)
			tcp := make([][]packetLog, w)
			segs := make([]map[int64]string, w)
			for i := range segs {
				segs[i] = map[int64]string{}
			}
			res, err := ScanSplitSummaries([]Source{ReaderSource(bytes.NewReader(c.data))}, sums,
				func(w int, p *Packet) { each[w] = append(each[w], p.ord) },
				func(w int, p *Packet) {
					q := *p
					q.Payload = nil
					tcp[w] = append(tcp[w], packetLog{q, nil})
					segs[w][p.ord] = tcpSegView(p)
				})
			if fmt.Sprint(err) != fmt.Sprint(werr) || res != wres {
				t.Errorf("%s: %+v %v, Scan's %+v %v", name, res, err, wres, werr)
			}
			var ords []int64
			for w, e := range each {
				if !slices.IsSorted(e) {
					t.Errorf("%s: worker %d was handed frames out of file order", name, w)
				}
				ords = append(ords, e...)
			}
			slices.Sort(ords)
			for i, o := range ords {
				if o != int64(i+1) {
					t.Errorf("%s: each was handed frame %d as the %dth", name, o, i+1)
					break
				}
			}
			owner, n := map[string]int{}, int64(0)
			for w, l := range tcp {
				for i, pl := range l {
					k := flowName(&pl.P)
					if o, ok := owner[k]; ok && o != w || i > 0 && l[i-1].P.ord >= pl.P.ord {
						t.Errorf("%s: TCP connection %s on workers %d and %d, or out of order", name, k, o, w)
					}
					owner[k] = w
					n++
				}
			}
			if n != want.TCPPackets-countTCPProblems(t, c.data) {
				t.Errorf("%s: tcp was handed %d frames, want %d", name, n, want.TCPPackets)
			}
			for _, m := range segs {
				for ord, got := range m {
					if want := wantSegs[ord]; got != want {
						t.Errorf("%s: tcp was handed frame %d as\n%s\nwant\n%s", name, ord, got, want)
					}
				}
			}
			s, ok := Merge(sums)
			if !ok {
				t.Errorf("%s: the summaries did not merge", name)
				continue
			}
			s.CutShort = res.CutShort
			s.Finish()
			if a, b := summaryJSON(t, want), summaryJSON(t, s); a != b {
				t.Errorf("%s: merged summary differs:\nAdd   %s\nSplit %s", name, a, b)
			}
		}
	}
}

// tcpSegView is what ScanSplitSummaries promises tcp of a TCP segment,
// printed.
func tcpSegView(p *Packet) string {
	return fmt.Sprintf("%d %d %s %d %v %v %s:%d > %s:%d %d %+v %q", p.Number, p.Ord(), p.Time, p.WireLen, p.Proto, p.Problem,
		p.Src, p.SrcPort, p.Dst, p.DstPort, p.L4Payload, p.TCP, p.Payload)
}

// countTCPProblems is how many TCP frames of data have a problem (tcp is
// not handed those).
func countTCPProblems(t *testing.T, data []byte) int64 {
	var n int64
	if _, err := Scan(bytes.NewReader(data), func(p *Packet) error {
		if p.Proto == ProtoTCP && p.Problem != ProblemNone {
			n++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return n
}
