package report

import "strconv"

// compare puts every RDMA bandwidth workload beside every TCP baseline, in
// Gb/s: for RDMA the best mean over message sizes (with the size it came
// at), for TCP the mean over repeats. Nothing is drawn unless both kinds ran.
func (b *builder) compare() {
	var rows [][]string
	var groups []barGroup
	rdma, tcp := 0, 0
	for _, w := range b.d.Workloads {
		ss := b.samples[w.Name]
		switch {
		case rdmaTool(w.Tool) && has(ss, "bw_avg"):
			sizes, means, _ := meanBySize(ss, "bw_avg")
			best := 0
			for i := range means {
				if means[i] > means[best] {
					best = i
				}
			}
			rdma++
			rows = append(rows, []string{w.Name, w.Tool, "RDMA", strconv.FormatInt(sizes[best], 10), fmtNum(means[best]), fmtNum(gbpsToMiBps(means[best]))})
			groups = append(groups, barGroup{Label: w.Name, Bars: []barIn{{"RDMA", means[best], "Gb/s"}}})
		case w.Tool == "tcp" && has(ss, "tcp_bw"):
			_, means, _ := meanBySize(ss, "tcp_bw")
			tcp++
			for _, m := range means { // one per bytes setting, usually one
				rows = append(rows, []string{w.Name, w.Tool, "TCP", "", fmtNum(m), fmtNum(gbpsToMiBps(m))})
				groups = append(groups, barGroup{Label: w.Name, Bars: []barIn{{"TCP", m, "Gb/s"}}})
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
