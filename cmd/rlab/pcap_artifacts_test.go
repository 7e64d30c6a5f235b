package main

import (
	"bytes"
	"compress/gzip"
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

// TestPcapRunConfined: rlab pcap RUN (and a run's captures folder) reads
// the run directory's own files only, as report does (engine/rundir): a
// received run directory whose capture is a symlink to a file of the
// reader's (the listed artifact, the name the fallback globs, a host
// folder linked out) had that file read and summarised (issue 24 attack
// round). The run's other captures are still read, the skipped one named.
func TestPcapRunConfined(t *testing.T) {
	whole, err := os.ReadFile(pcapFixture)
	if err != nil {
		t.Fatal(err)
	}
	// The reader's own capture, outside the received run directory.
	private := filepath.Join(t.TempDir(), "private")
	if err := os.MkdirAll(filepath.Join(private, "captures"), 0o700); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(private, "captures", "mine.pcap")
	if err := os.WriteFile(secret, whole, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		artifacts bool   // results.json lists the captures (else by name)
		arg       string // "" the run; else a path under it
		plant     func(t *testing.T, run string)
	}{
		{"listed capture a symlink out", true, "", func(t *testing.T, run string) {
			must(t, os.Symlink(secret, filepath.Join(run, "hosts", "server", "captures", "cap.leak.pcap")))
		}},
		{"globbed capture a symlink out", false, "", func(t *testing.T, run string) {
			must(t, os.Symlink(secret, filepath.Join(run, "hosts", "server", "captures", "cap.leak.pcap")))
		}},
		{"host folder a symlink out", false, "", func(t *testing.T, run string) {
			must(t, os.Symlink(private, filepath.Join(run, "hosts", "client")))
		}},
		{"captures folder named", false, "hosts/server/captures", func(t *testing.T, run string) {
			must(t, os.Symlink(secret, filepath.Join(run, "hosts", "server", "captures", "cap.leak.pcap")))
		}},
		// Not a leak: a gzip member inflates a thousand times (issue 24,
		// attack round 5); rlab's captures never are gzipped.
		{"listed capture gzip-compressed", true, "", func(t *testing.T, run string) {
			var gz bytes.Buffer
			zw := gzip.NewWriter(&gz)
			zw.Write(whole)
			zw.Close()
			must(t, os.WriteFile(filepath.Join(run, "hosts", "server", "captures", "cap.leak.pcap"), gz.Bytes(), 0o600))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := filepath.Join(t.TempDir(), "2026-11-27T100000Z")
			capDir := filepath.Join(run, "hosts", "server", "captures")
			must(t, os.MkdirAll(capDir, 0o755))
			must(t, os.WriteFile(filepath.Join(capDir, "cap.own.pcap"), whole, 0o644))
			tc.plant(t, run)
			r := &results.Run{Lab: "quickstart", ID: filepath.Base(run), Status: results.RunOK}
			if tc.artifacts {
				r.Artifacts = []results.Artifact{
					{Host: "server", Path: "hosts/server/captures/cap.own.pcap", Type: results.ArtifactCapture},
					{Host: "server", Path: "hosts/server/captures/cap.leak.pcap", Type: results.ArtifactCapture},
				}
			}
			must(t, results.WriteRun(run, r))
			arg := run
			if tc.arg != "" {
				arg = filepath.Join(run, filepath.FromSlash(tc.arg))
			}
			out, err := runPcap(t, arg)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if n := strings.Count(out, " frames"); n != 1 || !strings.Contains(out, "cap.own.pcap") {
				t.Errorf("%d summaries, want cap.own.pcap's alone:\n%s", n, out)
			}
			if !strings.Contains(out, "leaves the run directory") && !strings.Contains(out, "leaves the folder") && !strings.Contains(out, "gzip-compressed") {
				t.Errorf("the capture that leads out is not named as skipped:\n%s", out)
			}
		})
	}
}
