package plan

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/rlab-dev/rlab/engine/lab"
)

// classLab writes labs/class.hcl next to a generated Terraform output with
// n students (2n hosts) and returns the lab's path.
func classLab(tb testing.TB, n int) string {
	tb.Helper()
	dir := tb.TempDir()
	src, err := os.ReadFile("../../labs/class.hcl")
	if err != nil {
		tb.Fatal(err)
	}
	students := map[string]any{}
	for i := 0; i < n; i++ {
		students[fmt.Sprintf("student%03d", i)] = map[string]string{
			"server_ip": fmt.Sprintf("10.%d.%d.10", 20+i/250, i%250),
			"client_ip": fmt.Sprintf("10.%d.%d.11", 20+i/250, i%250),
		}
	}
	out := map[string]any{
		"bastion_ip": map[string]any{"sensitive": false, "type": "string", "value": "203.0.113.5"},
		"students":   map[string]any{"sensitive": false, "type": []any{"map", []any{"object", map[string]string{"client_ip": "string", "server_ip": "string"}}}, "value": students},
	}
	js, _ := json.Marshal(out)
	if err := os.WriteFile(filepath.Join(dir, "class-terraform-output.json"), js, 0o644); err != nil {
		tb.Fatal(err)
	}
	p := filepath.Join(dir, "class.hcl")
	if err := os.WriteFile(p, src, 0o644); err != nil {
		tb.Fatal(err)
	}
	return p
}

// BenchmarkClass200 is load + validate + plan of a class lab with 100
// students: 200 student hosts (+ the bastion), 200 rxe, 300 workloads.
func BenchmarkClass200(b *testing.B) {
	p := classLab(b, 100)
	b.ReportAllocs()
	for b.Loop() {
		l, diags := lab.Load([]string{p}, lab.LoadOptions{})
		if diags.HasErrors() {
			b.Fatal(diags.Error())
		}
		if _, err := New(l); err != nil {
			b.Fatal(err)
		}
	}
}

func TestClass200(t *testing.T) {
	l := load(t, classLab(t, 100), lab.LoadOptions{})
	p, err := New(l)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Hosts) != 201 || len(p.Waves) != 3 || len(p.Waves[0].Workloads) != 100 {
		t.Errorf("%d hosts, %d waves", len(p.Hosts), len(p.Waves))
	}
	checkDAG(t, p)
}
