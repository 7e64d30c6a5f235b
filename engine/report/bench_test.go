package report

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/engine/results"
)

// classRun writes a run directory of a class lab: pairs server/client
// pairs, each with a bandwidth workload (3 sizes x 3 repeats), a latency
// workload and a TCP baseline, and facts for every host.
func classRun(b testing.TB, pairs int) string {
	dir := b.TempDir()
	doc := map[string]any{"schema": 1, "lab": "class", "status": "ok"}
	var wls []map[string]any
	var samples []results.Sample
	for p := 0; p < pairs; p++ {
		srv, cli := fmt.Sprintf("server.s%03d", p), fmt.Sprintf("client.s%03d", p)
		for _, tool := range []string{"ib_write_bw", "ib_write_lat", "tcp"} {
			name := fmt.Sprintf("%s[\"s%03d\"]", tool, p)
			wls = append(wls, map[string]any{"name": name, "tool": tool, "status": "ok", "hosts": []string{srv, cli},
				"expects": []map[string]any{{"condition": "result.exit_code == 0", "held": true}}})
			for _, size := range []int64{4096, 65536, 1 << 20} {
				for r := 0; r < 3; r++ {
					m := results.Meta{Workload: name, Tool: tool, Size: size, Repeat: r, Hosts: []string{srv, cli}}
					v := float64(p%7+1) * float64(size) / 1e6
					switch tool {
					case "ib_write_bw":
						samples = append(samples, results.Sample{Metric: "bw_avg", Value: v, Unit: "Gb/s", Meta: m},
							results.Sample{Metric: "bw_peak", Value: v * 1.2, Unit: "Gb/s", Meta: m},
							results.Sample{Metric: "msg_rate", Value: v / 10, Unit: "Mpps", Meta: m})
					case "ib_write_lat":
						for _, met := range []string{"lat_min", "lat_typical", "lat_avg", "lat_p99", "lat_p999", "lat_max"} {
							samples = append(samples, results.Sample{Metric: met, Value: v * 100, Unit: "usec", Meta: m})
						}
					case "tcp":
						if size == 1<<20 {
							samples = append(samples, results.Sample{Metric: "tcp_bw", Value: v, Unit: "Gb/s", Meta: m})
						}
					}
				}
			}
		}
		for _, h := range []string{srv, cli} {
			f := proto.Facts{Hostname: h, Kernel: "6.1.0-56-amd64", OS: "Debian GNU/Linux 12 (bookworm)",
				Netdevs: []proto.Netdev{{Name: "eth1", MTU: 1500, State: "up", Addrs: []string{"10.99.0.1/24"}}},
				RDMA: []proto.RDMADevice{{Name: "rxe0", Driver: "rxe", Parent: "eth1", NodeGUID: "5054:00ff:fe99:0001",
					Ports: []proto.RDMAPort{{Port: 1, State: "ACTIVE", ActiveMTU: 1024, MaxMTU: 4096}}}}}
			fb, _ := json.Marshal(f)
			hd := filepath.Join(dir, "hosts", h)
			if err := os.MkdirAll(filepath.Join(hd, "logs"), 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(hd, "facts.json"), fb, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	doc["workloads"], doc["samples"] = wls, samples
	db, _ := json.Marshal(doc)
	if err := os.WriteFile(filepath.Join(dir, "results.json"), db, 0o644); err != nil {
		b.Fatal(err)
	}
	return dir
}

// BenchmarkRenderClass100 builds and renders the report of a 100-pair
// class run (300 workloads, 200 hosts, ~8,000 samples).
func BenchmarkRenderClass100(b *testing.B) {
	dir := classRun(b, 100)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		d, err := Build(dir, Options{NoGraphviz: true})
		if err != nil {
			b.Fatal(err)
		}
		if err := Write(io.Discard, d); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRenderFixture renders the fixture run (with its capture).
func BenchmarkRenderFixture(b *testing.B) {
	for i := 0; i < b.N; i++ {
		d, err := Build(fixture, Options{NoGraphviz: true})
		if err != nil {
			b.Fatal(err)
		}
		if err := Write(io.Discard, d); err != nil {
			b.Fatal(err)
		}
	}
}

// TestClassRunRenders checks a large class run renders with one chart set
// per workload and every host.
func TestClassRunRenders(t *testing.T) {
	dir := classRun(t, 20)
	d, err := Build(dir, Options{NoGraphviz: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Workloads) != 60 || len(d.Hosts) != 40 || d.Expects.Held != 60 {
		t.Errorf("got %d workloads, %d hosts, %d held expects; want 60, 40, 60", len(d.Workloads), len(d.Hosts), d.Expects.Held)
	}
	if d.Compare == nil || len(d.Compare.Table.Rows) != 40 {
		t.Errorf("RDMA vs TCP should list 20 RDMA and 20 TCP workloads")
	}
	if err := Write(io.Discard, d); err != nil {
		t.Fatal(err)
	}
}
