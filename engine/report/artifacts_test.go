package report

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/rlab-dev/rlab/engine/results"
)

// TestCapturesFromArtifacts: the report finds a run's captures in the list
// of artifacts results.json records (what the fetch steps pulled), not by
// the files' names: a capture named unlike one (wire.dump) is read, a log
// named like one (cap.notes.pcap.txt, in captures/) is not. A recorded run
// older than the list (testdata/report/run, schema 1) still has its
// captures found by name in hosts/*/captures/.
func TestCapturesFromArtifacts(t *testing.T) {
	pcap, err := os.ReadFile(filepath.Join(fixture, "hosts/server/captures/cap.roce.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		artifacts []results.Artifact // nil: results.json as recorded, without the list
		want      []string           // the captures' names, in page order
	}{
		{"older run: by name", nil, []string{"notes.pcap", "roce"}},
		{"listed", []results.Artifact{
			{Host: "server", Path: "hosts/server/captures/cap.roce.pcap", Type: results.ArtifactCapture},
			{Host: "server", Path: "hosts/server/captures/cap.notes.pcap.txt", Type: results.ArtifactLog},
			{Host: "client", Path: "hosts/client/captures/wire.dump", Type: results.ArtifactCapture},
			{Host: "server", Path: "hosts/server/logs/roce.tcpdump.txt", Type: results.ArtifactLog},
		}, []string{"roce", "wire"}},
		{"listed, none a capture", []results.Artifact{
			{Host: "server", Path: "hosts/server/logs/roce.tcpdump.txt", Type: results.ArtifactLog},
		}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := copyDir(t, fixture)
			// Files the names would mislead about: a log named like a
			// capture and a capture named like nothing.
			if err := os.WriteFile(filepath.Join(dir, "hosts/server/captures/cap.notes.pcap.txt"), []byte("not a capture\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Join(dir, "hosts/client/captures"), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "hosts/client/captures/wire.dump"), pcap, 0o600); err != nil {
				t.Fatal(err)
			}
			if c.artifacts != nil {
				r, err := results.ReadRun(dir)
				if err != nil {
					t.Fatal(err)
				}
				r.Artifacts = c.artifacts
				b, err := results.Encode(r)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, results.ResultsFile), b, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			d, err := Build(dir, Options{NoGraphviz: true})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, cp := range d.Captures {
				got = append(got, cp.Name)
				if cp.Name == "wire" && (cp.Error != "" || cp.Packets == 0 || cp.Host != "client") {
					t.Errorf("capture wire: host %q, %d packets, error %q; want client's, read", cp.Host, cp.Packets, cp.Error)
				}
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("captures %q, want %q", got, c.want)
			}
		})
	}
}
