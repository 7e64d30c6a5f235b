// Package iograph turns the frames of a capture into throughput over time
// (bits per second per interval, per series: all RoCEv2, each RDMA
// operation class, TCP) and draws it as a self-contained SVG chart that a
// run report can embed inline. It depends on engine/roce for decoded frames
// and on nothing outside the standard library for drawing (internal/archtest
// checks it).
package iograph

import (
	"math"
	"time"

	"github.com/rlab-dev/rlab/engine/roce"
)

// Series is one line of the graph.
type Series struct {
	Name    string    `json:"name"`
	Packets int64     `json:"packets"`
	Bytes   int64     `json:"bytes"`
	BPS     []float64 `json:"bits_per_second"` // one value per interval
}

// Graph is throughput over time.
type Graph struct {
	Start    time.Time     `json:"start"`
	Interval time.Duration `json:"interval_ns"`
	Series   []Series      `json:"series"`
	// Dropped counts frames after MaxBuckets intervals (a clock jump).
	Dropped int64 `json:"dropped,omitempty"`
	// Marks are the windows of the workloads that ran while the capture
	// did, drawn as labelled bands (set by the caller).
	Marks []Mark `json:"marks,omitempty"`
}

// Mark is one workload's window, from Graph.Start.
type Mark struct {
	Name  string        `json:"name"`
	Start time.Duration `json:"start_ns"`
	End   time.Duration `json:"end_ns"`
}

// MaxBuckets bounds the intervals of one graph so a frame with a wild
// timestamp cannot make it allocate without end.
const MaxBuckets = 1 << 20

// maxDense bounds the intervals a Builder holds per series: past it, every
// ten are summed into one (the graph's interval grows tenfold), as the
// report and the SVG would merge them anyway to draw at most 1,000 and
// 2,000 points (so at least 2,000 remain). A builder held up to MaxBuckets
// per series (8 MiB each) however few frames it was given, and the report
// reads its captures on every core, each split over every core: two
// frames 29 hours apart made a 57 KB capture take 250 MB, and eight such
// captures 5.4 GB on eight cores (cores squared). Now at most 160 KB.
const maxDense = 20_000

// Series names, in legend order.
const (
	SeriesRoCE   = "RoCEv2"
	SeriesWrite  = "WRITE"
	SeriesRead   = "READ"
	SeriesSend   = "SEND"
	SeriesAtomic = "ATOMIC"
	SeriesAck    = "ACK"
	SeriesTCP    = "TCP"
	// SeriesIWARP is the FPDU bytes of iWARP connections (inside TCP);
	// AddIWARP also counts them in WRITE, READ or SEND.
	SeriesIWARP = "iWARP"
)

var seriesNames = []string{SeriesRoCE, SeriesWrite, SeriesRead, SeriesSend, SeriesAtomic, SeriesAck, SeriesTCP, SeriesIWARP}

const (
	sRoCE = iota
	sWrite
	sRead
	sSend
	sAtomic
	sAck
	sTCP
	sIWARP
	nSeries
)

// classSeries maps an operation class to its series (-1: only in RoCEv2).
var classSeries = [...]int{
	roce.ClassOther: -1, roce.ClassSend: sSend, roce.ClassWrite: sWrite, roce.ClassRead: sRead,
	roce.ClassAtomic: sAtomic, roce.ClassAck: sAck, roce.ClassCNP: -1, roce.ClassFlush: -1,
}

// Builder accumulates frames into a Graph.
type Builder struct {
	interval time.Duration
	scale    int64 // base intervals per held interval: 1, 10, 100, ... (0: 1)
	start    int64 // ns
	started  bool
	bytes    [nSeries][]int64
	packets  [nSeries]int64
	total    [nSeries]int64
	dropped  int64
	// [lo, hi) are the times (ns) of held interval at, the last one
	// added to: frames come in time order, and comparing costs less
	// than the two or three divisions that find an interval.
	lo, hi int64
	at     int
}

// NewBuilder returns a Builder with buckets of the given width.
func NewBuilder(interval time.Duration) *Builder { return &Builder{interval: interval} }

// Add accounts one decoded frame by its length on the wire.
func (b *Builder) Add(p *roce.Packet) {
	var s1, s2 = -1, -1
	switch p.Proto {
	case roce.ProtoTCP:
		s1 = sTCP
	case roce.ProtoRoCE:
		s1 = sRoCE
		if p.Problem != roce.ProblemMalformed && p.Problem != roce.ProblemBadOpcode {
			if c := p.Op().Class; int(c) < len(classSeries) {
				s2 = classSeries[c]
			}
		}
	default:
		return
	}
	b.add(p.Time.UnixNano(), int64(p.WireLen), s1, s2)
}

// AddIWARP accounts n bytes of one iWARP FPDU at t in the iWARP series and
// in op's (SeriesWrite, SeriesRead, SeriesSend; "" for none). The frames
// that carried it are counted in TCP by Add.
func (b *Builder) AddIWARP(t time.Time, n int, op string) {
	s2 := -1
	switch op {
	case SeriesWrite:
		s2 = sWrite
	case SeriesRead:
		s2 = sRead
	case SeriesSend:
		s2 = sSend
	}
	b.add(t.UnixNano(), int64(n), sIWARP, s2)
}

func (b *Builder) add(t, n int64, s1, s2 int) {
	if !b.started {
		b.start, b.started = t, true
	}
	i := 0
	switch {
	case t <= b.start:
	case t >= b.lo && t < b.hi:
		i = b.at
	default:
		i64 := (t - b.start) / int64(b.interval)
		if i64 >= MaxBuckets {
			b.dropped++
			return
		}
		for i64/b.step() >= maxDense {
			b.coarsen(10)
		}
		i = int(i64 / b.step())
		span := int64(b.interval) * b.step()
		b.lo, b.at = b.start+int64(i)*span, i
		b.hi = satAdd(b.lo, span)
		if b.interval <= math.MaxInt64/MaxBuckets {
			b.hi = min(b.hi, satAdd(b.start, MaxBuckets*int64(b.interval))) // past it a frame is dropped
		}
	}
	for _, s := range [2]int{s1, s2} {
		if s < 0 {
			continue
		}
		for len(b.bytes[s]) <= i {
			b.bytes[s] = append(b.bytes[s], 0)
		}
		b.bytes[s][i] += n
		b.packets[s]++
		b.total[s] += n
	}
}

// satAdd is a+b (b >= 0), at most math.MaxInt64.
func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// step is how many base intervals one held interval spans.
func (b *Builder) step() int64 { return max(b.scale, 1) }

// coarsen sums every n held intervals into one.
func (b *Builder) coarsen(n int64) {
	if n <= 1 {
		return
	}
	for s, old := range b.bytes {
		if len(old) == 0 {
			continue
		}
		nw := make([]int64, (int64(len(old))+n-1)/n)
		for i, v := range old {
			nw[int64(i)/n] += v
		}
		b.bytes[s] = nw
	}
	b.scale = b.step() * n
	b.lo, b.hi = 0, 0 // the intervals changed
}

// Graph returns the graph so far: every series with at least one packet,
// all of the same length, in bits per second.
func (b *Builder) Graph() *Graph {
	g := &Graph{Start: time.Unix(0, b.start).UTC(), Interval: b.interval * time.Duration(b.step()), Dropped: b.dropped}
	n := 0
	for s := range b.bytes {
		n = max(n, len(b.bytes[s]))
	}
	perSec := 8 / g.Interval.Seconds()
	for s := 0; s < nSeries; s++ {
		if b.packets[s] == 0 {
			continue
		}
		bps := make([]float64, n)
		for i, v := range b.bytes[s] {
			bps[i] = float64(v) * perSec
		}
		g.Series = append(g.Series, Series{Name: seriesNames[s], Packets: b.packets[s], Bytes: b.total[s], BPS: bps})
	}
	return g
}

// SetStart fixes the graph's start (its first interval begins at t), as
// the first frame or FPDU added would: the builders of a split scan
// (roce.ScanSplit) all start where one builder over every frame in file
// order would have, so that Merge only adds their intervals up. Call it
// before the first Add.
func (b *Builder) SetStart(t time.Time) {
	b.start, b.started, b.lo, b.hi = t.UnixNano(), true, 0, 0
}

// Merge is the builder of every frame and FPDU the parts were given, the
// parts having the same interval and start (SetStart).
func Merge(parts []*Builder) *Builder {
	m := &Builder{interval: parts[0].interval}
	for _, p := range parts {
		m.scale = max(m.step(), p.step()) // each a power of ten
	}
	for _, p := range parts {
		if p.started && !m.started {
			m.start, m.started = p.start, true
		}
		n := m.step() / p.step()
		for s := range p.bytes {
			if l := (len(p.bytes[s]) + int(n) - 1) / int(n); len(m.bytes[s]) < l {
				m.bytes[s] = append(m.bytes[s], make([]int64, l-len(m.bytes[s]))...)
			}
			for i, v := range p.bytes[s] {
				m.bytes[s][int64(i)/n] += v
			}
			m.packets[s] += p.packets[s]
			m.total[s] += p.total[s]
		}
		m.dropped += p.dropped
	}
	return m
}
