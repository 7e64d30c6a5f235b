package results

import (
	"strings"
	"testing"
)

// TestSummaryAloneVsTogether: summary.md puts each workload of a group
// beside the workload that ran alone between the same hosts and devices
// with the same tool, at the same size (an incast's clients); one with no
// such workload gets "–"; a run without groups has no such section.
func TestSummaryAloneVsTogether(t *testing.T) {
	bw := func(wl, client string, size int64, v float64) Sample {
		return Sample{Metric: "bw_avg", Value: v, Unit: "Gb/s", Meta: Meta{Workload: wl, Tool: "ib_write_bw", Size: size, Hosts: []string{"server", client}}}
	}
	wl := func(name, client, group string) Workload {
		return Workload{Name: name, Tool: "ib_write_bw", Status: StatusOK, Hosts: []string{"server", client}, Devices: []string{"rxe_eth1", "rxe_eth1"}, Group: group}
	}
	lone := wl("c_together", "c", "incast")
	lone.Devices = []string{"rxe_eth1", "rxe_eth2"} // no alone run on these devices
	r := &Run{Lab: "incast", Status: RunOK,
		Workloads: []Workload{wl("a_alone", "a", ""), wl("b_alone", "b", ""), wl("a_together", "a", "incast"), wl("b_together", "b", "incast"), lone, wl("other", "a", "")},
		Samples: []Sample{
			bw("a_alone", "a", 65536, 2), bw("a_alone", "a", 4096, 1), bw("b_alone", "b", 65536, 1.5),
			bw("a_together", "a", 65536, 1), bw("a_together", "a", 4096, 0.9), bw("b_together", "b", 65536, 0.6),
			bw("c_together", "c", 65536, 0.5), bw("other", "a", 65536, 9),
		},
	}
	md := string(Summary(r, ""))
	_, sec, ok := strings.Cut(md, "## Alone vs together\n")
	if !ok {
		t.Fatalf("no alone vs together section:\n%s", md)
	}
	for _, want := range []string{
		"| incast | a_together | a → server | 64 KiB | a_alone | 2 Gb/s | 1 Gb/s | 0.50x |",
		"| incast | b_together | b → server | 64 KiB | b_alone | 1.5 Gb/s | 0.6 Gb/s | 0.40x |",
		"| incast | c_together | c → server | 64 KiB | – | – | 0.5 Gb/s | – |",
	} {
		if !strings.Contains(sec, want) {
			t.Errorf("alone vs together lacks %q:\n%s", want, sec)
		}
	}
	if strings.Contains(sec, "| other |") || strings.Contains(sec, "9 Gb/s") {
		t.Errorf("a later alone workload taken instead of the first:\n%s", sec)
	}
	for i := range r.Workloads {
		r.Workloads[i].Group = ""
	}
	if md := string(Summary(r, "")); strings.Contains(md, "Alone vs together") {
		t.Errorf("a run without groups has an alone vs together section:\n%s", md)
	}
}

// TestSummaryRDMAOver: the RDMA vs TCP table names how each RDMA workload's
// devices carried it when the run recorded it (transports.hcl), and says
// plain RDMA for runs that did not.
func TestSummaryRDMAOver(t *testing.T) {
	s := func(wl, tool, metric string, size int64, v float64) Sample {
		return Sample{Metric: metric, Value: v, Unit: "Gb/s", Meta: Meta{Workload: wl, Tool: tool, Size: size, Hosts: []string{"server", "client"}}}
	}
	r := &Run{Lab: "transports", Status: RunOK,
		Workloads: []Workload{
			{Name: "write_rxe", Tool: "ib_write_bw", Status: StatusOK, RDMA: "RoCE (rxe)"},
			{Name: "write_siw", Tool: "ib_write_bw", Status: StatusOK, RDMA: "iWARP (siw)"},
			{Name: "write_old", Tool: "ib_write_bw", Status: StatusOK},
			{Name: "tcp", Tool: "tcp", Status: StatusOK},
		},
		Samples: []Sample{s("write_rxe", "ib_write_bw", "bw_avg", 65536, 0.2), s("write_siw", "ib_write_bw", "bw_avg", 65536, 0.3),
			s("write_old", "ib_write_bw", "bw_avg", 65536, 0.1), s("tcp", "tcp", "tcp_bw", 0, 0.4)},
	}
	md := string(Summary(r, ""))
	for _, want := range []string{
		"| RDMA over RoCE (rxe) | write_rxe | ib_write_bw |",
		"| RDMA over iWARP (siw) | write_siw | ib_write_bw |",
		"| RDMA | write_old | ib_write_bw |",
		"| TCP | tcp | tcp |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("summary.md lacks %q:\n%s", want, md)
		}
	}
}
