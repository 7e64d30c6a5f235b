package kinds

import (
	"testing"
	"time"
)

// TestPaceRun: a run bound by a duration takes it, one bound by bytes
// takes them at the rate, one bound by iterations takes each the larger of
// the time per iteration and the size at the rate, with the tool's default
// count and size when the lab sets none; each adds Start. An unknown run
// counts as Start.
func TestPaceRun(t *testing.T) {
	p := Pace{Start: 6 * time.Second, PerIteration: time.Millisecond, Rate: 1e6, Iterations: 1000, Size: 100}
	tests := []struct {
		name string
		p    Pace
		o    Options
		size int64
		want time.Duration
		rule string
	}{
		{"duration", p, Options{Duration: 3 * time.Second, Iterations: 99}, 1 << 20, 9 * time.Second, "3s each + 6s to start"},
		{"iterations, small size", p, Options{Iterations: 300}, 64, 6*time.Second + 300*time.Millisecond, "300 iterations at 1ms (or the size at 0.008 Gb/s) each + 6s to start"},
		{"iterations, large size", p, Options{Iterations: 10}, 100000, 6*time.Second + 10*100*time.Millisecond, ""},
		{"defaults", p, Options{}, 0, 7 * time.Second, "1000 iterations at 1ms (or the size at 0.008 Gb/s) each + 6s to start"},
		{"bytes", Pace{Start: time.Second, Rate: 1e6}, Options{Bytes: 5e6}, 0, 6 * time.Second, "5000000B at 0.008 Gb/s + 1s to start"},
		{"bytes, MiB", Pace{Start: time.Second, Rate: 1 << 20}, Options{Bytes: 1 << 30}, 0, time.Second + 1024*time.Second, "1GiB at 0.00839 Gb/s + 1s to start"},
		{"unknown", Pace{Start: time.Second, Unknown: "the command's own time"}, Options{Duration: time.Hour}, 0, time.Second, "the command's own time: counted as 1s"},
		{"minutes", Pace{Start: 90 * time.Second}, Options{Duration: 2 * time.Minute}, 0, 210 * time.Second, "2m each + 1m30s to start"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.p.Run(tc.o, tc.size); got != tc.want {
				t.Errorf("Run = %s, want %s", got, tc.want)
			}
			if tc.rule != "" {
				if got := tc.p.Rule(tc.o); got != tc.rule {
					t.Errorf("Rule = %q, want %q", got, tc.rule)
				}
			}
		})
	}
}
