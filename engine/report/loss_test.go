package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// tagLoss marks the samples of the fixture's workloads as a loss sweep's
// points, as the run writes them (metadata extra impair, impair_loss).
func tagLoss(t *testing.T, dir string, loss map[string]string) {
	t.Helper()
	p := filepath.Join(dir, "results.json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for _, s := range doc["samples"].([]any) {
		m := s.(map[string]any)["metadata"].(map[string]any)
		if l, ok := loss[m["workload"].(string)]; ok {
			extra, _ := m["extra"].(map[string]any)
			if extra == nil {
				extra = map[string]any{}
			}
			extra["impair"] = `loss["` + l + `"]: loss ` + l + "%"
			extra["impair_loss"] = l
			m["extra"] = extra
		}
	}
	if b, err = json.Marshal(doc); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestLossSweep: workloads run under loss get a "Throughput vs packet loss"
// chart with RDMA and TCP side by side, one point per workload at its loss,
// and each says which impairment was in force; a run without impairments
// gets neither (TestBuildGolden's fixture).
func TestLossSweep(t *testing.T) {
	dir := copyDir(t, fixture)
	tagLoss(t, dir, map[string]string{"write_bw": "0", "read_bw": "5", "tcp": "5"})
	d, err := Build(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d.LossSweep == nil {
		t.Fatal("no loss sweep")
	}
	var got [][]string
	for _, r := range d.LossSweep.Table.Rows {
		got = append(got, r[:3])
	}
	want := [][]string{{"0", "RDMA", "write_bw"}, {"5", "RDMA", "read_bw"}, {"5", "TCP", "tcp"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("loss table (-want +got):\n%s", diff)
	}
	var names []string
	for _, s := range d.LossSweep.Chart.Series {
		names = append(names, s.Name)
		if s.Name == "RDMA" && len(s.Dots) != 2 {
			t.Errorf("RDMA series has %d points, want 2", len(s.Dots))
		}
	}
	if diff := cmp.Diff([]string{"RDMA", "TCP"}, names); diff != "" {
		t.Errorf("series (-want +got):\n%s", diff)
	}
	impair := map[string]string{}
	for _, w := range d.Workloads {
		impair[w.Name] = w.Impair
	}
	if impair["read_bw"] != `loss["5"]: loss 5%` || impair["pingpong"] != "" {
		t.Errorf("impairments in force: %v", impair)
	}
	if err := Render(dir); err != nil {
		t.Fatal(err)
	}
	html, _ := os.ReadFile(filepath.Join(dir, FileName))
	for _, s := range []string{`<section id="loss">`, "Throughput vs packet loss", `link impairment in force: loss[&#34;5&#34;]: loss 5%`} {
		if !bytes.Contains(html, []byte(s)) {
			t.Errorf("report.html lacks %q", s)
		}
	}

	plain, err := Build(copyDir(t, fixture), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if plain.LossSweep != nil {
		t.Error("a run without impairments has a loss sweep")
	}
}

// editRun rewrites the fixture's results.json with fn.
func editRun(t *testing.T, dir string, fn func(doc map[string]any)) {
	t.Helper()
	p := filepath.Join(dir, "results.json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	fn(doc)
	if b, err = json.Marshal(doc); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// counterSample is a counter delta as the run records it.
func counterSample(workload, host, device, metric, folder string, v float64) map[string]any {
	m := map[string]any{"workload": workload, "hosts": []any{host}, "extra": map[string]any{"counter": folder}}
	if device != "" {
		m["devices"] = []any{device}
	}
	return map[string]any{"metric": metric, "value": v, "unit": "packets", "metadata": m}
}

// TestLossSweepWhy: beside each point of the sweep, the trouble counters
// that moved (summed per host, traffic counters left out, "none of N moved"
// when none did, "not read" without any) and the wire analysis of the
// captures results.json lists as the workload's own ("–" without); each
// workload says the same in its own "slow because of what" row.
func TestLossSweepWhy(t *testing.T) {
	dir := copyDir(t, fixture)
	tagLoss(t, dir, map[string]string{"write_bw": "0", "read_bw": "5", "tcp": "5"})
	editRun(t, dir, func(doc map[string]any) {
		doc["samples"] = append(doc["samples"].([]any),
			counterSample("write_bw", "server", "rxe0", "out_of_seq_request", "hw_counters", 0),
			counterSample("write_bw", "client", "rxe0", "rcvd_seq_err", "hw_counters", 0),
			counterSample("read_bw", "server", "rxe0", "out_of_seq_request", "hw_counters", 31),
			counterSample("read_bw", "client", "rxe0", "rcvd_seq_err", "hw_counters", 29),
			counterSample("read_bw", "client", "eth1", "tx_dropped", "statistics", 2),
			counterSample("read_bw", "client", "rxe0", "sent_pkts", "hw_counters", 5000), // traffic: not a why
			counterSample("tcp", "client", "", "tcpi_total_retrans", "tcp_info", 12),
		)
		for _, w := range doc["workloads"].([]any) {
			if m := w.(map[string]any); m["name"] == "write_bw" {
				m["captures"] = []any{"hosts/server/captures/cap.roce.pcap"}
			}
		}
	})
	d, err := Build(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d.LossSweep == nil {
		t.Fatal("no loss sweep")
	}
	want := [][]string{
		{"0", "RDMA", "write_bw", "none of 2 moved", "0", "0"},
		{"5", "RDMA", "read_bw", "out_of_seq_request 31 on server, rcvd_seq_err 29 on client, tx_dropped 2 on client", "–", "–"},
		{"5", "TCP", "tcp", "tcpi_total_retrans 12 on client", "–", "–"},
	}
	var got [][]string
	for _, r := range d.LossSweep.Table.Rows {
		got = append(got, append(r[:3:3], r[4:]...))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("loss table (-want +got):\n%s", diff)
	}
	why := map[string]*Why{}
	for _, w := range d.Workloads {
		why[w.Name] = w.Why
	}
	if y := why["write_bw"]; y == nil || y.Impair != `loss["0"]: loss 0%` || y.Wire != "50 RoCEv2 packets: 0 retransmitted PSNs, 0 NAKs, 0 RNR NAKs, 0 CNPs" {
		t.Errorf("write_bw: %+v", y)
	}
	if y := why["pingpong"]; y != nil {
		t.Errorf("pingpong (no impairment, counters or capture of its own): %+v", y)
	}
	if err := Render(dir); err != nil {
		t.Fatal(err)
	}
	html, _ := os.ReadFile(filepath.Join(dir, FileName))
	for _, s := range []string{"Slow because of what", "out_of_seq_request 31 on server", "retransmitted PSNs (capture)"} {
		if !bytes.Contains(html, []byte(s)) {
			t.Errorf("report.html lacks %q", s)
		}
	}
}

// lossyFixture is a real run of labs/lossy.hcl at 0 and 1 % loss on two VMs
// with rxe and netem (its README says how it was recorded).
const lossyFixture = "../../testdata/report/lossy"

// TestLossyRunGolden pins, for the recorded loss sweep, the loss table and
// each workload's "slow because of what": at 1 % the sequence errors and
// the NAKs of the point's own capture, at 0 % none of either (its resends
// are ACK timeouts: duplicate_request and completer_retry_err, no NAK).
func TestLossyRunGolden(t *testing.T) {
	d, err := Build(copyDir(t, lossyFixture), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d.LossSweep == nil {
		t.Fatal("no loss sweep")
	}
	type why struct {
		Workload string `json:"workload"`
		Why      *Why   `json:"why"`
	}
	got := struct {
		Table Table `json:"loss_table"`
		Whys  []why `json:"whys"`
	}{Table: d.LossSweep.Table}
	got.Table.Raw = nil
	for _, w := range d.Workloads {
		got.Whys = append(got.Whys, why{w.Name, w.Why})
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(got); err != nil {
		t.Fatal(err)
	}
	golden(t, "lossy.why.json", b.Bytes())

	rows := map[string][]string{}
	for _, r := range d.LossSweep.Table.Rows {
		rows[r[2]] = r
	}
	at1, at0 := rows[`rdma["1"]`], rows[`rdma["0"]`]
	if len(at1) < 7 || !strings.Contains(at1[4], "out_of_seq_request") || !strings.Contains(at1[4], "rcvd_seq_err") || at1[5] == "0" || at1[6] == "0" {
		t.Errorf("1 %% point: %q, want sequence errors, resent PSNs and NAKs", at1)
	}
	if len(at0) < 7 || strings.Contains(at0[4], "seq") || at0[6] != "0" {
		t.Errorf("0 %% point: %q, want no sequence error and no NAK", at0)
	}
	if r := rows[`tcp["1"]`]; len(r) < 7 || !strings.Contains(r[4], "tcpi_total_retrans 37 on client") {
		t.Errorf("tcp 1 %% point: %q, want the sender's resent segments", r)
	}
}
