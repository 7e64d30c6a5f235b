package report

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
)

// CaptureStats is what the report shows of one capture file.
type CaptureStats struct {
	Packets, Bytes int64 // every packet read; Bytes counts wire lengths
	Invalid        int64 // packets too short or malformed to classify
	First, Last    time.Time
	Opcodes        []OpcodeStat // RoCEv2 by BTH opcode, then TCP, then other
	Interval       time.Duration
	IO             []IOSeries // bits per second per Interval, from First
	Notes          []string
}

// OpcodeStat counts one opcode (or traffic class).
type OpcodeStat struct {
	Name    string
	Packets int64
	Bytes   int64
}

// IOSeries is throughput over time for one class of traffic.
type IOSeries struct {
	Name string
	Bps  []float64
}

// Summarizer reads a capture file. The run engine may hand in a richer
// decoder (engine/roce); SummarizePcap is the built-in one.
type Summarizer func(file string) (*CaptureStats, error)

// roceUDPPort is RoCEv2's UDP destination port.
const roceUDPPort = 4791

// SummarizePcap reads a pcap or pcapng file and counts RoCEv2 packets by
// BTH opcode, TCP and other traffic, and bins throughput for an IO graph.
// Truncated or malformed packets are counted as invalid, never fatal.
func SummarizePcap(file string) (*CaptureStats, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return summarize(bufio.NewReaderSize(f, 1<<20))
}

// packetSource hides whether a file is pcap or pcapng.
type packetSource interface {
	ReadPacketData() ([]byte, captureInfo, error)
}

type captureInfo struct {
	Timestamp time.Time
	Length    int
}

type pcapReader struct{ r *pcapgo.Reader }

func (p pcapReader) ReadPacketData() ([]byte, captureInfo, error) {
	d, ci, err := p.r.ReadPacketData()
	return d, captureInfo{ci.Timestamp, ci.Length}, err
}

type ngReader struct{ r *pcapgo.NgReader }

func (p ngReader) ReadPacketData() ([]byte, captureInfo, error) {
	d, ci, err := p.r.ReadPacketData()
	return d, captureInfo{ci.Timestamp, ci.Length}, err
}

func summarize(br *bufio.Reader) (*CaptureStats, error) {
	magic, err := br.Peek(4)
	if err != nil {
		return nil, fmt.Errorf("read capture header: %w", err)
	}
	var src packetSource
	var link layers.LinkType
	if binary.LittleEndian.Uint32(magic) == 0x0A0D0D0A {
		r, err := pcapgo.NewNgReader(br, pcapgo.DefaultNgReaderOptions)
		if err != nil {
			return nil, fmt.Errorf("read pcapng header: %w", err)
		}
		src, link = ngReader{r}, r.LinkType()
	} else {
		r, err := pcapgo.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("read pcap header: %w", err)
		}
		src, link = pcapReader{r}, r.LinkType()
	}
	st := &CaptureStats{}
	counts := map[string]*OpcodeStat{}
	bins := newBinner()
	for {
		data, ci, err := src.ReadPacketData()
		if err == io.EOF {
			break
		}
		if err != nil {
			// A capture cut short (tcpdump killed mid-write) ends here:
			// keep what was read and say so.
			st.Notes = append(st.Notes, fmt.Sprintf("capture ends early after %d packets: %v", st.Packets, err))
			break
		}
		st.Packets++
		st.Bytes += int64(ci.Length)
		if st.First.IsZero() || ci.Timestamp.Before(st.First) {
			st.First = ci.Timestamp
		}
		if ci.Timestamp.After(st.Last) {
			st.Last = ci.Timestamp
		}
		name, class, ok := classify(link, data)
		if !ok {
			st.Invalid++
		}
		c := counts[name]
		if c == nil {
			c = &OpcodeStat{Name: name}
			counts[name] = c
		}
		c.Packets++
		c.Bytes += int64(ci.Length)
		bins.add(ci.Timestamp, class, ci.Length)
	}
	for _, c := range counts {
		st.Opcodes = append(st.Opcodes, *c)
	}
	sort.Slice(st.Opcodes, func(i, j int) bool {
		a, b := st.Opcodes[i], st.Opcodes[j]
		if ra, rb := opcodeRank(a.Name), opcodeRank(b.Name); ra != rb {
			return ra < rb
		}
		return a.Name < b.Name
	})
	if st.Packets == 0 {
		return st, nil
	}
	st.Interval, st.IO = bins.series(ioInterval(st.Last.Sub(st.First)))
	return st, nil
}

// maxBins bounds the IO graph's memory and points, whatever the span of
// the timestamps (a corrupt capture can claim years).
const maxBins = 20000

// binner sums bytes per time bin and class. It starts at 1 µs bins and
// coarsens by tens when there would be more than maxBins, so a capture of
// any length is read in bounded memory.
type binner struct {
	res   time.Duration
	t0    time.Time
	bins  map[string]map[int64]float64
	order []string
	n     int
}

func newBinner() *binner {
	return &binner{res: time.Microsecond, bins: map[string]map[int64]float64{}}
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func (b *binner) add(t time.Time, class string, n int) {
	if b.t0.IsZero() {
		b.t0 = t
	}
	m := b.bins[class]
	if m == nil {
		m = map[int64]float64{}
		b.bins[class] = m
		b.order = append(b.order, class)
	}
	i := floorDiv(int64(t.Sub(b.t0)), int64(b.res))
	if _, ok := m[i]; !ok {
		b.n++
	}
	m[i] += float64(n)
	for b.n > maxBins {
		b.coarsen()
	}
}

func (b *binner) coarsen() {
	b.res *= 10
	b.n = 0
	for c, m := range b.bins {
		nm := map[int64]float64{}
		for i, v := range m {
			nm[floorDiv(i, 10)] += v
		}
		b.bins[c] = nm
		b.n += len(nm)
	}
}

// series returns bits per second per interval (at least the bin size)
// for each class, from the earliest bin.
func (b *binner) series(want time.Duration) (time.Duration, []IOSeries) {
	for b.res < want {
		b.coarsen()
	}
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for _, m := range b.bins {
		for i := range m {
			lo, hi = min(lo, i), max(hi, i)
		}
	}
	for hi-lo+1 > maxBins {
		b.coarsen()
		lo, hi = floorDiv(lo, 10), floorDiv(hi, 10)
	}
	order := append([]string(nil), b.order...)
	sort.SliceStable(order, func(i, j int) bool { return opcodeRank(order[i]) < opcodeRank(order[j]) })
	var out []IOSeries
	for _, c := range order {
		bps := make([]float64, hi-lo+1)
		for i, v := range b.bins[c] {
			bps[i-lo] = v * 8 / b.res.Seconds()
		}
		out = append(out, IOSeries{Name: c, Bps: bps})
	}
	return b.res, out
}

// ioInterval is 100 ms, shortened by decades for short captures so the
// graph has at least 20 points.
func ioInterval(span time.Duration) time.Duration {
	iv := 100 * time.Millisecond
	for iv > time.Microsecond && span/iv < 20 {
		iv /= 10
	}
	return iv
}

func opcodeRank(name string) int {
	switch {
	case name == "RoCEv2":
		return 0
	case strings.HasPrefix(name, "RC "), strings.HasPrefix(name, "UC "), strings.HasPrefix(name, "RD "),
		strings.HasPrefix(name, "UD "), strings.HasPrefix(name, "CNP"), strings.HasPrefix(name, "XRC "):
		return 1
	case name == "TCP":
		return 2
	case name == "invalid":
		return 4
	}
	return 3
}

// classify names a packet's opcode (RoCEv2) or protocol, and its IO-graph
// class. ok is false for packets too short to tell.
func classify(link layers.LinkType, b []byte) (name, class string, ok bool) {
	if link != layers.LinkTypeEthernet {
		return "other", "other", true
	}
	if len(b) < 14 {
		return "invalid", "other", false
	}
	et := binary.BigEndian.Uint16(b[12:14])
	b = b[14:]
	for et == 0x8100 || et == 0x88a8 {
		if len(b) < 4 {
			return "invalid", "other", false
		}
		et = binary.BigEndian.Uint16(b[2:4])
		b = b[4:]
	}
	var proto byte
	switch et {
	case 0x0800:
		if len(b) < 20 || b[0]>>4 != 4 {
			return "invalid", "other", false
		}
		ihl := int(b[0]&0x0f) * 4
		if ihl < 20 || len(b) < ihl {
			return "invalid", "other", false
		}
		proto = b[9]
		b = b[ihl:]
	case 0x86dd:
		if len(b) < 40 {
			return "invalid", "other", false
		}
		proto = b[6]
		b = b[40:]
	default:
		return "other", "other", true
	}
	switch proto {
	case 6:
		return "TCP", "TCP", true
	case 17:
		if len(b) < 8 {
			return "invalid", "other", false
		}
		if binary.BigEndian.Uint16(b[2:4]) != roceUDPPort {
			return "other", "other", true
		}
		if len(b) < 8+12 {
			return "invalid", "RoCEv2", false
		}
		return opcodeName(b[8]), "RoCEv2", true
	}
	return "other", "other", true
}

var rcOps = map[byte]string{
	0x00: "SEND First", 0x01: "SEND Middle", 0x02: "SEND Last", 0x03: "SEND Last with Immediate",
	0x04: "SEND Only", 0x05: "SEND Only with Immediate", 0x06: "RDMA WRITE First", 0x07: "RDMA WRITE Middle",
	0x08: "RDMA WRITE Last", 0x09: "RDMA WRITE Last with Immediate", 0x0a: "RDMA WRITE Only",
	0x0b: "RDMA WRITE Only with Immediate", 0x0c: "RDMA READ Request", 0x0d: "RDMA READ Response First",
	0x0e: "RDMA READ Response Middle", 0x0f: "RDMA READ Response Last", 0x10: "RDMA READ Response Only",
	0x11: "Acknowledge", 0x12: "ATOMIC Acknowledge", 0x13: "CmpSwap", 0x14: "FetchAdd",
	0x16: "SEND Last with Invalidate", 0x17: "SEND Only with Invalidate",
}

// opcodeName names a BTH opcode as "<transport> <operation>".
func opcodeName(op byte) string {
	if op == 0x81 {
		return "CNP"
	}
	classes := []string{"RC", "UC", "RD", "UD", "CNP", "XRC", "", ""}
	cls := classes[op>>5]
	if name, ok := rcOps[op&0x1f]; ok && cls != "" {
		return cls + " " + name
	}
	return fmt.Sprintf("opcode 0x%02x", op)
}

// captureSection turns stats into the report's capture section.
func captureSection(name, host, rel string, size string, st *CaptureStats) Capture {
	c := Capture{Name: name, Host: host, Link: Link{Path: rel, Label: rel, Size: size},
		Packets: st.Packets, Bytes: st.Bytes, Invalid: st.Invalid, Notes: st.Notes}
	if !st.First.IsZero() {
		c.Span = fmt.Sprintf("%s to %s (%s)", st.First.UTC().Format("2006-01-02 15:04:05.000000"),
			st.Last.UTC().Format("15:04:05.000000"), st.Last.Sub(st.First))
	}
	c.Opcodes = Table{Columns: []string{"opcode", "packets", "bytes", "share of packets"}, Rows: [][]string{}}
	for _, o := range st.Opcodes {
		share := 0.0
		if st.Packets > 0 {
			share = float64(o.Packets) / float64(st.Packets) * 100
		}
		c.Opcodes.Rows = append(c.Opcodes.Rows, []string{o.Name, fmt.Sprint(o.Packets), fmt.Sprint(o.Bytes), fmt.Sprintf("%.1f %%", share)})
	}
	if st.Invalid > 0 {
		c.Notes = append(c.Notes, fmt.Sprintf("%d packets could not be decoded (truncated by the snaplen, or not RoCEv2)", st.Invalid))
	}
	if len(st.IO) > 0 && st.Interval > 0 {
		var in []seriesIn
		for _, s := range st.IO {
			si := seriesIn{Name: s.Name}
			for i, v := range s.Bps {
				t := float64(i) * st.Interval.Seconds() * 1000
				si.Pts = append(si.Pts, xy{t, v / 1e6, fmt.Sprintf("%s at %s ms: %s Mb/s", s.Name, fmtNum(t), fmtNum(v/1e6))})
			}
			in = append(in, si)
		}
		ch := lineChart("cap-"+anchorSafe(name), "IO graph: throughput per "+st.Interval.String(), "time since first packet [ms]", "Mb/s", false, in)
		c.IOGraph = ch
	}
	return c
}

// anchorSafe keeps only characters safe in an id attribute.
func anchorSafe(s string) string {
	var sb strings.Builder
	for _, r := range s {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			sb.WriteRune(r)
		} else {
			sb.WriteByte('_')
		}
	}
	return sb.String()
}

// captures summarises every hosts/<slug>/captures/* file.
func (b *builder) captures() {
	b.d.Captures = []Capture{}
	for _, l := range b.all {
		parts := strings.Split(l.Path, "/")
		if len(parts) != 4 || parts[0] != "hosts" || parts[2] != "captures" {
			continue
		}
		base := parts[3]
		name := strings.TrimSuffix(strings.TrimSuffix(base, path.Ext(base)), ".pcap")
		if !strings.Contains(base, ".pcap") {
			continue
		}
		st, err := b.opts.Summarize(b.dir + "/" + l.Path)
		if err != nil {
			b.d.Captures = append(b.d.Captures, Capture{Name: name, Host: parts[1], Link: l,
				Opcodes: Table{Columns: []string{}, Rows: [][]string{}},
				Error:   fmt.Sprintf("read capture %s: %v", l.Path, err)})
			continue
		}
		b.d.Captures = append(b.d.Captures, captureSection(name, parts[1], l.Path, l.Size, st))
	}
}
