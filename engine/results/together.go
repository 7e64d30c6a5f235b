package results

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/rlab-dev/rlab/kinds"
)

// RDMAOver is the transport cell of an RDMA workload in the RDMA vs TCP
// tables: "RDMA over iWARP (siw)" when the run recorded how its devices
// carry RDMA (Workload.RDMA), plain "RDMA" otherwise (older runs).
func RDMAOver(carrier string) string {
	if carrier == "" {
		return "RDMA"
	}
	return "RDMA over " + carrier
}

// aloneVsTogether puts the throughput of each workload that ran in a group
// (an incast's clients, a ring's nodes) beside that of a workload that ran
// alone between the same hosts and devices with the same tool, at the same
// message size: what sharing the link and the CPUs cost each of them. The
// alone workload is the first such in file order; a grouped workload with
// none is listed with "–". Nothing is written when no grouped workload
// measured a throughput.
func aloneVsTogether(b *bytes.Buffer, r *Run, aggs []Agg) {
	// the throughput of each workload at its largest size
	type tp struct {
		agg Agg
		ok  bool
	}
	at := map[string]map[int64]Agg{} // workload → size → its tool's View.Throughput
	largest := map[string]int64{}
	for _, a := range aggs {
		if _, ok := kinds.Throughput(a.Metric); !ok {
			continue
		}
		if at[a.Workload] == nil {
			at[a.Workload] = map[int64]Agg{}
		}
		at[a.Workload][a.Size] = a
		if s, ok := largest[a.Workload]; !ok || a.Size > s {
			largest[a.Workload] = a.Size
		}
	}
	var rows []string
	for _, wl := range r.Workloads {
		if wl.Group == "" {
			continue
		}
		size, ok := largest[wl.Name]
		if !ok {
			continue
		}
		together := at[wl.Name][size]
		alone := tp{}
		aloneName := "–"
		for _, o := range r.Workloads {
			if o.Group != "" || o.Tool != wl.Tool || !slices.Equal(o.Hosts, wl.Hosts) || !slices.Equal(o.Devices, wl.Devices) {
				continue
			}
			if a, ok := at[o.Name][size]; ok {
				alone, aloneName = tp{a, true}, o.Name
				break
			}
		}
		what := "bulk"
		if size > 0 {
			what = HumanSize(size)
		}
		aloneCell, ratio := "–", "–"
		if alone.ok {
			aloneCell = HumanValue(alone.agg.Median, alone.agg.Unit)
			if alone.agg.Median > 0 {
				ratio = fmt.Sprintf("%.2fx", together.Median/alone.agg.Median)
			}
		}
		rows = append(rows, fmt.Sprintf("| %s | %s | %s | %s | %s | %s | %s | %s |", mdCell(wl.Group), mdCell(wl.Name), mdCell(kinds.Arrow(wl.Tool, wl.Hosts)), what,
			mdCell(aloneName), aloneCell, HumanValue(together.Median, together.Unit), ratio))
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(b, "## Alone vs together\n\nEach workload of a group (run together with the group's others) beside the workload that ran alone between the same hosts and devices with the same tool, at the same message size (medians):\n\n")
	fmt.Fprintf(b, "| group | together | hosts | size | alone | alone throughput | together throughput | together / alone |\n|---|---|---|---|---|---:|---:|---:|\n")
	for _, row := range rows {
		fmt.Fprintln(b, row)
	}
	fmt.Fprintln(b)
}
