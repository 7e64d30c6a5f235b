package report

import (
	"os"
	"testing"
	"time"
)

// BenchmarkAnalyzeSplit reads the capture RLAB_BENCH_PCAP names (make one
// with bench/pcap/gen) as `rlab pcap --iograph` does, on one goroutine
// (workers 1) and on two: for `go test -cpuprofile` (bench/pcap/cores.sh
// times the CLI). Skipped without the variable.
func BenchmarkAnalyzeSplit(b *testing.B) {
	file := os.Getenv("RLAB_BENCH_PCAP")
	if file == "" {
		b.Skip("RLAB_BENCH_PCAP names no capture")
	}
	for _, w := range []int{1, 2} {
		b.Run(map[int]string{1: "workers=1", 2: "workers=2"}[w], func(b *testing.B) {
			var frames int64
			for i := 0; i < b.N; i++ {
				a, ok, err := AnalyzeSplit([]string{file}, w, time.Second, true)
				if err != nil || !ok {
					b.Fatal(err, ok)
				}
				frames += a.Summary.Frames
			}
			b.ReportMetric(float64(frames)/b.Elapsed().Seconds(), "frames/s")
		})
	}
}
