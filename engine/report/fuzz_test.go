package report

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/rlab-dev/rlab/engine/lab"
)

// FuzzResultsJSON feeds any results.json through Build and the template:
// whatever a run (or a hand edit) left there, the report renders.
func FuzzResultsJSON(f *testing.F) {
	seed, err := os.ReadFile(filepath.Join(fixture, "results.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte(`{"samples":[{"metric":"bw_avg","value":1e308,"unit":"Gb/s","metadata":{"workload":"w","tool":"ib_write_bw","size":-1}}]}`))
	f.Add([]byte(`{"workloads":[{"name":"","tool":"ib_write_lat","expects":[{"repeat":-5}]}],"samples":[{"metric":"lat_p99","value":-3,"metadata":{"size":0}}]}`))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, "results.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		sameTwice(t, func() (*Data, error) { return Build(dir, Options{}) })
	})
}

// FuzzSummarizePcap feeds any bytes to the capture reader: a truncated or
// corrupt capture is an error or a count of invalid packets, never a panic.
func FuzzSummarizePcap(f *testing.F) {
	seed, err := os.ReadFile(filepath.Join(fixture, "hosts/server/captures/cap.roce.pcap"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add(seed[:200])
	file := filepath.Join(f.TempDir(), "c.pcap")
	f.Fuzz(func(t *testing.T, b []byte) {
		if err := os.WriteFile(file, b, 0o644); err != nil {
			t.Fatal(err)
		}
		st, err := SummarizePcap(file)
		if err != nil {
			return
		}
		c := captureSection("c", "h", Link{Path: "hosts/h/captures/c.pcap"}, st, nil)
		if err := Write(io.Discard, &Data{Captures: []Capture{c}}); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzLabHeader reads the lab block of any file without panicking.
func FuzzLabHeader(f *testing.F) {
	seed, err := os.ReadFile(filepath.Join(fixture, "lab/quickstart.hcl"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte(`lab "x" { description = 1 }`))
	f.Fuzz(func(t *testing.T, b []byte) {
		// The report's title is the lab's name as the loader reads it.
		name, _ := labHeader("f.hcl", b)
		if l, diags := lab.LoadSource("f.hcl", b, ".", lab.LoadOptions{}); l != nil && !diags.HasErrors() && name != l.Name {
			t.Fatalf("labHeader says %q, the loader %q", name, l.Name)
		}
	})
}

// FuzzFacts renders any facts.json a host (or a hostile agent) reported.
func FuzzFacts(f *testing.F) {
	seed, err := os.ReadFile(filepath.Join(fixture, "hosts/server/facts.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte(`{"rdma_devices":[{"name":"x","ports":[{"gids":[{"index":-1}]}]}],"mem_bytes":18446744073709551615,"memlock_soft":-1}`))
	dir := f.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "hosts/h"), 0o755); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, "hosts/h/facts.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		sameTwice(t, func() (*Data, error) { return Build(dir, Options{NoGraphviz: true}) })
	})
}

// sameTwice builds and writes a report twice: it renders, and the same run
// directory gives the same report.html (a map ranged in random order would
// fail CI at random).
func sameTwice(t *testing.T, build func() (*Data, error)) {
	t.Helper()
	var out [2]bytes.Buffer
	for i := range out {
		d, err := build()
		if err != nil {
			t.Fatal(err)
		}
		if err := Write(&out[i], d); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(out[0].Bytes(), out[1].Bytes()) {
		a, b := out[0].String(), out[1].String()
		i := 0
		for i < len(a) && i < len(b) && a[i] == b[i] {
			i++
		}
		t.Fatalf("two reports of one run differ from byte %d: %q / %q", i, a[max(0, i-200):min(len(a), i+200)], b[max(0, i-200):min(len(b), i+200)])
	}
}
