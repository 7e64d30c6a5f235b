package vm

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/engine/iwarp"
	"github.com/rlab-dev/rlab/engine/results"
)

// transportCaptures: what labs/transports.hcl's captures promise.
var transportCaptures = map[string]func(*testing.T, *captureSum){
	// RoCE v2 on the macvlan during write_rxe: the WRITEs coming in.
	"cap.rxe": func(t *testing.T, s *captureSum) {
		if s.count(opWrite) == 0 {
			t.Errorf("no RDMA WRITE packets in the rxe capture; have %v", s.ops)
		}
	},
	// iWARP is TCP on eth1 during write_siw: frames, and not one RoCEv2
	// packet (the siw's connection was not taken by the rxe).
	"cap.siw": func(t *testing.T, s *captureSum) {
		if len(s.ops) > 0 || len(s.cm) > 0 {
			t.Errorf("RoCEv2 packets in the iWARP capture: %v %v", s.ops, s.cm)
		}
		checkIWARPCapture(t, s, 1, iwarp.OpWrite) // engine/iwarp: the MPA handshake and the WRITEs
	},
}

// checkTransports (labs/transports.hcl, after the run): each of the three
// transfers measured, results.json says which transport each RDMA workload
// went over (RoCE on rxe without the RDMA CM, iWARP on siw with it),
// summary.md's and report.html's RDMA vs TCP tables hold all three side by
// side with their transports, and no rxe or siw is left on the guests (the
// macvlan the test made is removed).
func checkTransports(t *testing.T, ctx context.Context, gs []*guest, out string) {
	for _, g := range gs {
		links := g.must(t, ctx, "rdma", "link", "show")
		if strings.Contains(links, "rxe_mveth1") || strings.Contains(links, "siw_eth1") {
			t.Errorf("%s: a device outlived the run: %s", g.name, links)
		}
		g.must(t, ctx, "ip", "link", "del", "mveth1")
		g.must(t, ctx, "sysctl", "-w", "net.ipv4.conf.all.arp_ignore=0")
	}
	checkSamples(t, out, "write_rxe", "bw_avg")
	checkSamples(t, out, "write_siw", "bw_avg")
	checkSamples(t, out, "tcp", "tcp_bw")
	run, err := results.ReadRun(out)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"write_rxe": "RoCE (rxe)", "write_siw": "iWARP (siw)", "tcp": ""}
	for _, w := range run.Workloads {
		if over, ok := want[w.Name]; ok && w.RDMA != over {
			t.Errorf("results.json: workload %s went over %q, want %q", w.Name, w.RDMA, over)
		}
	}
	for _, s := range run.Samples {
		if s.Metric != "bw_avg" {
			continue
		}
		cm := s.Meta.Extra["rdma_cm"] == "on"
		if cm != (s.Meta.Workload == "write_siw") {
			t.Errorf("%s: RDMA CM %v; want it for siw only (perftest -R), rxe without it", s.Meta.Workload, cm)
		}
		t.Logf("%s: bw_avg %.3f %s (devices %v)", s.Meta.Workload, s.Value, s.Unit, s.Meta.Devices)
	}
	sum, err := os.ReadFile(filepath.Join(out, "summary.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, _ := strings.Cut(string(sum), "## RDMA vs TCP")
	table, _, _ = strings.Cut(table, "\n\n## ")
	for _, row := range []string{"| RDMA over RoCE (rxe) | write_rxe |", "| RDMA over iWARP (siw) | write_siw |", "| TCP | tcp |"} {
		if !strings.Contains(table, row) {
			t.Errorf("summary.md's RDMA vs TCP table has no row %q:\n%s", row, table)
		}
	}
	html, err := os.ReadFile(filepath.Join(out, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	_, cmp, ok := strings.Cut(string(html), `<section id="compare">`)
	cmp, _, _ = strings.Cut(cmp, "</section>")
	for _, cell := range []string{"write_rxe", "write_siw", ">tcp<", "RDMA over RoCE (rxe)", "RDMA over iWARP (siw)", ">TCP<"} {
		if !ok || !strings.Contains(cmp, cell) {
			t.Errorf("report.html's RDMA vs TCP section lacks %q", cell)
		}
	}
	if t.Failed() {
		logHostLogs(t, out)
	}
}
