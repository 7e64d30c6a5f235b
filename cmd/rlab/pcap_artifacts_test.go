package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/engine/results"
)

// TestPcapRunReadsArtifacts: `rlab pcap RUN` summarises the captures the
// run's results.json lists as artifacts, not the files named like one: a
// capture named wire.dump is read, a log in captures/ named like a capture
// is not, and a listed path that leaves the run directory is ignored. (A
// run without the list is found by name: TestPcapSeveralFiles.)
func TestPcapRunReadsArtifacts(t *testing.T) {
	run := filepath.Join(t.TempDir(), "2026-11-27T100000Z")
	capDir := filepath.Join(run, "hosts", "server", "captures")
	if err := os.MkdirAll(capDir, 0o755); err != nil {
		t.Fatal(err)
	}
	whole, err := os.ReadFile(pcapFixture)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"wire.dump": whole, "cap.notes.pcap": []byte("not a capture\n")} {
		if err := os.WriteFile(filepath.Join(capDir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := &results.Run{Lab: "quickstart", ID: filepath.Base(run), Status: results.RunOK, Artifacts: []results.Artifact{
		{Host: "server", Path: "hosts/server/captures/wire.dump", Type: results.ArtifactCapture},
		{Host: "server", Path: "hosts/server/captures/cap.notes.pcap", Type: results.ArtifactLog},
		{Host: "server", Path: "../outside.pcap", Type: results.ArtifactCapture},
	}}
	if err := results.WriteRun(run, r); err != nil {
		t.Fatal(err)
	}
	out, err := runPcap(t, run)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if n := strings.Count(out, " frames"); n != 1 || !strings.Contains(out, "wire.dump") || strings.Contains(out, "cap.notes.pcap") || strings.Contains(out, "outside") {
		t.Errorf("%d summaries, want wire.dump's alone:\n%s", n, out)
	}
}
