package report

import (
	"strconv"

	"github.com/rlab-dev/rlab/engine/results"
)

// compare puts every RDMA bandwidth workload beside every TCP baseline, in
// Gb/s: for RDMA the best median over message sizes (with the size it
// came at), for TCP the median over repeats. Nothing is drawn unless both kinds ran.
func (b *builder) compare() {
	var rows [][]string
	var groups []barGroup
	rdma, tcp := 0, 0
	for _, w := range b.d.Workloads {
		ss := b.samples[w.Name]
		switch {
		case rdmaTool(w.Tool) && has(ss, "bw_avg"):
			aggs := bySize(ss, "bw_avg")
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
			transport, label := "RDMA", w.Name
			if w.Bidirectional {
				transport += " (" + results.BothDirections + ")"
				label += " (both directions)"
			}
			rows = append(rows, []string{w.Name, w.Tool, transport, strconv.FormatInt(best.Size, 10), fmtNum(best.Median), fmtNum(gbpsToMiBps(best.Median))})
			groups = append(groups, barGroup{Label: label, Bars: []barIn{{"RDMA", best.Median, "Gb/s"}}})
		case w.Tool == "tcp" && has(ss, "tcp_bw"):
			tcp++
			for _, a := range bySize(ss, "tcp_bw") { // one per bytes setting, usually one
				rows = append(rows, []string{w.Name, w.Tool, "TCP", "", fmtNum(a.Median), fmtNum(gbpsToMiBps(a.Median))})
				groups = append(groups, barGroup{Label: w.Name, Bars: []barIn{{"TCP", a.Median, "Gb/s"}}})
			}
		}
	}
	if rdma == 0 || tcp == 0 {
		return
	}
	b.d.Compare = &Compare{
		Table: Table{Columns: []string{"workload", "tool", "transport", "best size [bytes]", "Gb/s", "MiB/s"}, Rows: rows},
		Chart: barChart("compare", "RDMA vs TCP throughput", "Gb/s", groups),
	}
}

func gbpsToMiBps(g float64) float64 { return g * 1e9 / 8 / (1 << 20) }
