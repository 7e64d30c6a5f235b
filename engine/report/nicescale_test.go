package report

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestNiceScaleHuge: an axis over a value near the largest float64 ends
// (SECURITY 124): the rounded top overflowed to +Inf and the tick loop
// never did, so a received results.json with a sample of 1.7e308 hung
// rlab report, its memory growing. Ordinary axes keep their ticks.
func TestNiceScaleHuge(t *testing.T) {
	for _, max := range []float64{1.7e308, math.MaxFloat64, 9e307, 5e-324} {
		done := make(chan int, 1)
		go func() { _, ticks := niceScale(max); done <- len(ticks) }()
		select {
		case n := <-done:
			if n == 0 || n > 12 {
				t.Errorf("niceScale(%g): %d ticks", max, n)
			}
		case <-time.After(time.Second):
			t.Fatalf("niceScale(%g) did not end", max)
		}
	}
	top, ticks := niceScale(7.3)
	if top != 8 || len(ticks) != 5 || ticks[4] != 8 {
		t.Errorf("niceScale(7.3) = %g, %v; want 8 and 0, 2, 4, 6, 8", top, ticks)
	}

	// The report of a run whose samples are all 1.7e308.
	dir := copyDir(t, fixture)
	p := filepath.Join(dir, "results.json")
	b, err := os.ReadFile(p)
	must(t, err)
	var doc map[string]any
	must(t, json.Unmarshal(b, &doc))
	for _, s := range doc["samples"].([]any) {
		s.(map[string]any)["value"] = 1.7e308
	}
	b, err = json.Marshal(doc)
	must(t, err)
	must(t, os.WriteFile(p, b, 0o644))
	done := make(chan error, 1)
	go func() { _, err := Build(dir, Options{NoGraphviz: true}); done <- err }()
	select {
	case err := <-done:
		must(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("Build did not end")
	}
}
