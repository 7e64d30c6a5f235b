package report

import (
	"fmt"
	"sort"

	"github.com/rlab-dev/rlab/engine/results"
)

// Link impairments in the report: each impaired workload says what was in
// force (its samples' metadata extra "impair", written by the run), and a
// loss sweep (labs/lossy.hcl) is charted as throughput against loss, RDMA
// beside TCP, from the samples' "impair_loss" (percent).

// impairOf is the impairment in force during a workload, as its samples
// record it ("" when none).
func impairOf(samples []results.Sample) string {
	for _, s := range samples {
		if v := s.Meta.Extra["impair"]; v != "" {
			return v
		}
	}
	return ""
}

// lossOf is the loss in percent a workload ran under, if its samples say.
func lossOf(samples []results.Sample) (float64, bool) {
	for _, s := range samples {
		if v := s.Meta.ImpairLoss; v != nil {
			return *v, *v >= 0 && *v <= 100
		}
	}
	return 0, false
}

// lossSweep draws throughput (each tool's View.Throughput) against loss
// when the run measured RDMA or TCP bandwidth at two loss points or more:
// RDMA's median at its largest message size (results.RDMAvsTCPRule, as RDMA
// vs TCP), TCP's median over repeats, one point per workload.
func (b *builder) lossSweep() {
	type pt struct {
		loss, gbps float64
		name       string
		why        *Why
	}
	var rdma, tcp []pt
	for _, w := range b.d.Workloads {
		ss := b.samples[w.Name]
		loss, ok := lossOf(ss)
		if !ok {
			continue
		}
		thr, overRDMA := throughputOf(w.Tool)
		switch {
		case thr == "" || !has(ss, thr):
		case overRDMA:
			aggs := bySize(ss, thr)
			rdma = append(rdma, pt{loss, aggs[len(aggs)-1].Median, w.Name, w.Why})
		default:
			for _, a := range bySize(ss, thr) {
				tcp = append(tcp, pt{loss, a.Median, w.Name, w.Why})
			}
		}
	}
	points := map[float64]bool{}
	for _, p := range append(append([]pt{}, rdma...), tcp...) {
		points[p.loss] = true
	}
	if len(points) < 2 {
		return
	}
	var in []seriesIn
	var rows [][]string
	for _, s := range []struct {
		name string
		pts  []pt
	}{{"RDMA", rdma}, {"TCP", tcp}} {
		if len(s.pts) == 0 {
			continue
		}
		sort.SliceStable(s.pts, func(i, j int) bool { return s.pts[i].loss < s.pts[j].loss })
		si := seriesIn{Name: s.name}
		for _, p := range s.pts {
			si.Pts = append(si.Pts, xy{X: p.loss, Y: p.gbps, Title: p.name + ": " + results.FormatValue(p.gbps) + " Gb/s at " + fmtNum(p.loss) + " % loss"})
			// Beside each point, why: the trouble counters that moved
			// (retransmissions, sequence errors) and the wire analysis of
			// the point's own capture (why.go).
			trouble, retrans, naks := "not read", "–", "–"
			if p.why != nil {
				trouble = p.why.Trouble
				if p.why.Retransmits != nil {
					retrans, naks = fmt.Sprint(*p.why.Retransmits), fmt.Sprint(*p.why.NAKs)
				}
			}
			rows = append(rows, []string{fmtNum(p.loss), s.name, p.name, results.FormatValue(p.gbps), trouble, retrans, naks})
		}
		in = append(in, si)
	}
	b.d.LossSweep = &Compare{
		Table: Table{Columns: []string{"loss [%]", "transport", "workload", "Gb/s", "trouble counters that moved", "retransmitted PSNs (capture)", "NAKs (capture)"}, Rows: rows},
		Chart: lineChart("loss", "Throughput vs packet loss", "loss [%]", "Gb/s", false, in),
	}
}
