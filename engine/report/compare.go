package report

import (
	"strconv"

	"github.com/rlab-dev/rlab/engine/results"
)

// compare puts every RDMA bandwidth workload beside every TCP baseline (the
// throughput metric each tool's View declares, RDMA or not as its tool), in
// human units (3.4 Gb/s, 405 MiB/s; the recorded Gb/s kept as Raw): for RDMA the best median over message sizes (with the size it
// came at), for TCP the median over repeats. Nothing is drawn unless both kinds ran.
func (b *builder) compare() {
	t := Table{Columns: []string{"workload", "tool", "transport", "best size", "throughput", "bytes per second"}, Units: []string{"", "", "", "B", "Gb/s", "MiB/s"}}
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
			best := aggs[0]
			for _, a := range aggs {
				if a.Median > best.Median {
					best = a
				}
			}
			rdma++
			transport, label := results.RDMAOver(w.RDMA), w.Name
			if w.Bidirectional {
				transport += " (" + results.BothDirections + ")"
				label += " (both directions)"
			}
			t.add([]string{w.Name, w.Tool, transport, results.HumanSize(best.Size), results.HumanValue(best.Median, "Gb/s"), results.HumanValue(gbpsToMiBps(best.Median), "MiB/s")},
				[]string{"", "", "", strconv.FormatInt(best.Size, 10), rawNum(best.Median), rawNum(gbpsToMiBps(best.Median))})
			groups = append(groups, barGroup{Label: label, Bars: []barIn{{"RDMA", best.Median, "Gb/s"}}})
		default:
			tcp++
			for _, a := range bySize(ss, thr) { // one per bytes setting, usually one
				t.add([]string{w.Name, w.Tool, "TCP", "", results.HumanValue(a.Median, "Gb/s"), results.HumanValue(gbpsToMiBps(a.Median), "MiB/s")},
					[]string{"", "", "", "", rawNum(a.Median), rawNum(gbpsToMiBps(a.Median))})
				groups = append(groups, barGroup{Label: w.Name, Bars: []barIn{{"TCP", a.Median, "Gb/s"}}})
			}
		}
	}
	if rdma == 0 || tcp == 0 {
		return
	}
	b.d.Compare = &Compare{
		Table: t,
		Chart: barChart("compare", "RDMA vs TCP throughput", "Gb/s", groups),
	}
}

func gbpsToMiBps(g float64) float64 { return g * 1e9 / 8 / (1 << 20) }
