package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestCompareNamesTransport: the RDMA vs TCP table says how each RDMA
// workload's devices carried it when results.json records it (workloads[].rdma,
// labs/transports.hcl: rxe and siw beside TCP), and plain RDMA when it does
// not (older runs: the fixture's read_bw).
func TestCompareNamesTransport(t *testing.T) {
	dir := copyDir(t, fixture)
	p := filepath.Join(dir, "results.json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for _, w := range doc["workloads"].([]any) {
		if m := w.(map[string]any); m["name"] == "write_bw" {
			m["rdma"] = "iWARP (siw)"
		}
	}
	if b, err = json.Marshal(doc); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := Build(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Compare == nil {
		t.Fatal("no RDMA vs TCP comparison")
	}
	got := map[string]string{}
	for _, row := range d.Compare.Table.Rows {
		got[row[0]] = row[2]
	}
	want := map[string]string{"write_bw": "RDMA over iWARP (siw)", "read_bw": "RDMA", "tcp": "TCP"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("transport column (-want +got):\n%s", diff)
	}
}
