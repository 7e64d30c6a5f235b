package report

import (
	"strconv"

	"github.com/rlab-dev/rlab/engine/results"
)

// compare puts every RDMA bandwidth workload beside every TCP baseline (the
// throughput metric each tool's View declares, RDMA or not as its tool),
// by results.RDMAvsTCPRule, as the run's table and summary.md do: for RDMA
// the median at its largest message size, for TCP the median over
// repeats; each in its recorded unit. Nothing is drawn unless both kinds
// ran.
func (b *builder) compare() {
	t := Table{Columns: []string{"workload", "tool", "transport", "size", "throughput"}, Units: []string{"", "", "", "B", ""}}
	var groups []barGroup
	rdma, tcp := 0, 0
	for _, w := range b.d.Workloads {
		ss := b.samples[w.Name]
		thr, overRDMA := throughputOf(w.Tool)
		switch {
		case thr == "" || !has(ss, thr):
		case overRDMA:
			aggs := bySize(ss, thr)
			if len(aggs) == 0 {
				continue
			}
			at := aggs[len(aggs)-1] // results.ThroughputAt: the largest size
			unit := unitOf(ss, thr)
			t.Units[4] = unit
			rdma++
			transport, label := results.RDMAOver(w.RDMA), w.Name
			if w.Bidirectional {
				transport += " (" + results.BothDirections + ")"
				label += " (both directions)"
			}
			t.add([]string{w.Name, w.Tool, transport, results.HumanSize(at.Size), results.HumanValue(at.Median, unit)},
				[]string{"", "", "", strconv.FormatInt(at.Size, 10), rawNum(at.Median)})
			groups = append(groups, barGroup{Label: label, Bars: []barIn{{"RDMA", at.Median, unit}}})
		default:
			tcp++
			unit := unitOf(ss, thr)
			for _, a := range bySize(ss, thr) { // one per bytes setting, usually one
				t.add([]string{w.Name, w.Tool, "TCP", "", results.HumanValue(a.Median, unit)},
					[]string{"", "", "", "", rawNum(a.Median)})
				groups = append(groups, barGroup{Label: w.Name, Bars: []barIn{{"TCP", a.Median, unit}}})
			}
		}
	}
	if rdma == 0 || tcp == 0 {
		return
	}
	b.d.Compare = &Compare{
		Rule:  "Compared: " + results.RDMAvsTCPRule + ".",
		Table: t,
		Chart: barChart("compare", "RDMA vs TCP throughput", t.Units[4], groups),
	}
}
