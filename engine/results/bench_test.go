package results

import (
	"fmt"
	"testing"
)

// classRun is a class lab of 100 student pairs (200 hosts): per pair a
// bandwidth workload at 3 sizes and a latency workload, 3 repeats each.
func classRun(scale float64) *Run {
	r := &Run{Lab: "class", ID: "bench", Status: RunOK}
	for p := 0; p < 100; p++ {
		hosts := []string{fmt.Sprintf("s%03d", p), fmt.Sprintf("c%03d", p)}
		bw, lat := fmt.Sprintf("bw_%03d", p), fmt.Sprintf("lat_%03d", p)
		r.Workloads = append(r.Workloads,
			Workload{Name: bw, Tool: "ib_write_bw", Status: StatusOK, Hosts: hosts, Expects: []Expect{{Condition: "result.bw_avg_gbps > 0.01", Held: true}}},
			Workload{Name: lat, Tool: "ib_write_lat", Status: StatusOK, Hosts: hosts})
		for rep := 0; rep < 3; rep++ {
			for _, size := range []int64{4096, 65536, 1 << 20} {
				for _, m := range []string{"bw_peak", "bw_avg", "msg_rate"} {
					r.Samples = append(r.Samples, Sample{Metric: m, Value: scale * float64(size) / 1e6, Unit: unitOf(m),
						Meta: Meta{Workload: bw, Tool: "ib_write_bw", Size: size, Repeat: rep, Hosts: hosts}})
				}
			}
			for _, m := range []string{"lat_min", "lat_typical", "lat_p99", "lat_p999"} {
				r.Samples = append(r.Samples, Sample{Metric: m, Value: 600 / scale, Unit: unitOf(m),
					Meta: Meta{Workload: lat, Tool: "ib_write_lat", Size: 2, Repeat: rep, Hosts: hosts}})
			}
		}
	}
	return r
}

func BenchmarkCompareClass(b *testing.B) {
	a, c := classRun(1), classRun(0.8)
	b.ReportMetric(float64(len(a.Samples)), "samples/run")
	for b.Loop() {
		if !Compare(a, c, CompareOptions{}).Failed() {
			b.Fatal("20% drop not flagged")
		}
	}
}

func BenchmarkSummaryClass(b *testing.B) {
	r := classRun(1)
	for b.Loop() {
		Summary(r, "runs/class/bench")
	}
}

func BenchmarkJUnitClass(b *testing.B) {
	r := classRun(1)
	for b.Loop() {
		if _, err := JUnit(r); err != nil {
			b.Fatal(err)
		}
	}
}

func unitOf(metric string) string {
	m, _ := MetricByName(metric)
	return m.Unit
}
