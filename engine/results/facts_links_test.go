package results

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestRunHostsLinkedFacts: rlab compare reads every host's facts.json of
// both runs; a received run directory whose hosts' folders hold one
// facts.json under many names (hard links) is read once, not once per
// host (SECURITY 119): each copy's strings were kept, so 20 links to a
// 16 MiB facts.json made 20 times its memory, and a thousand to a 256 MiB
// one far more than the machine has.
func TestRunHostsLinkedFacts(t *testing.T) {
	dir := t.TempDir()
	first := filepath.Join(dir, "hosts", "h00", "facts.json")
	for i := range 20 {
		d := filepath.Join(dir, "hosts", fmt.Sprintf("h%02d", i))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		if i == 0 {
			err = os.WriteFile(first, []byte(`{"hostname":"h","kernel":"`+strings.Repeat("k", 16<<20)+`"}`), 0o644)
		} else {
			err = os.Link(first, filepath.Join(d, "facts.json"))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	hosts := runHosts(dir)
	runtime.ReadMemStats(&after)
	if made := after.TotalAlloc - before.TotalAlloc; made > 100<<20 {
		t.Errorf("runHosts allocated %d MiB for one 16 MiB facts.json under 20 hosts", made>>20)
	}
	read := 0
	for _, f := range hosts {
		if f != nil {
			read++
		}
	}
	if len(hosts) != 20 || read != 1 {
		t.Errorf("%d hosts, %d with facts read; want 20 and 1", len(hosts), read)
	}
}
