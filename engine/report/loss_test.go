package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
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
