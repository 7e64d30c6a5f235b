package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/rlab-dev/rlab/engine/results"
)

// hashRunDir is what a manifest of dir holds, computed here: every
// regular file but manifest.json and complete.json, by path.
func hashRunDir(t *testing.T, dir string) map[string]results.ManifestEntry {
	t.Helper()
	out := map[string]results.ManifestEntry{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == results.ManifestFile || rel == results.CompleteFile {
			return nil
		}
		b, err := os.ReadFile(p)
		sum := sha256.Sum256(b)
		out[filepath.ToSlash(rel)] = results.ManifestEntry{Path: filepath.ToSlash(rel), Size: int64(len(b)), SHA256: hex.EncodeToString(sum[:])}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func readManifest(t *testing.T, dir string) map[string]results.ManifestEntry {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, results.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	var es []results.ManifestEntry
	if err := json.Unmarshal(b, &es); err != nil {
		t.Fatal(err)
	}
	out := map[string]results.ManifestEntry{}
	for _, e := range es {
		out[e.Path] = e
	}
	return out
}

// TestReportKeepsManifest (issue 25 item 7): `rlab report` re-renders
// report.html of a complete run and brings manifest.json's entry for it to
// the new page (complete.json names the new manifest), so every sha256 of
// the manifest still matches its file; the other entries stay the run's.
// An incomplete run directory is left incomplete and its manifest as it was.
func TestReportKeepsManifest(t *testing.T) {
	for _, complete := range []bool{true, false} {
		name := map[bool]string{true: "complete", false: "incomplete"}[complete]
		t.Run(name, func(t *testing.T) {
			dir := copyRunDir(t)
			// The run's own page, then its manifest (one stale entry
			// elsewhere shows rlab report rewrites only its own).
			if err := os.WriteFile(filepath.Join(dir, "report.html"), []byte("the page the run drew\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			man := hashRunDir(t, dir)
			stale := man["results.json"]
			stale.SHA256 = "00" + stale.SHA256[2:]
			man["results.json"] = stale
			var list []results.ManifestEntry
			for _, e := range man {
				list = append(list, e)
			}
			b, _ := json.MarshalIndent(list, "", "  ")
			if err := os.WriteFile(filepath.Join(dir, results.ManifestFile), append(b, '\n'), 0o600); err != nil {
				t.Fatal(err)
			}
			if complete {
				if err := results.MarkComplete(dir); err != nil {
					t.Fatal(err)
				}
			}
			before := readManifest(t, dir)

			if code, _, errs := runCmd(t, newReportCmd(), dir); code != exitOK {
				t.Fatalf("rlab report: exit %d: %s", code, errs)
			}
			after, disk := readManifest(t, dir), hashRunDir(t, dir)
			if !complete {
				if _, err := os.Stat(filepath.Join(dir, results.CompleteFile)); err == nil {
					t.Error("rlab report marked an incomplete run complete")
				}
				if after["report.html"] != before["report.html"] {
					t.Error("rlab report changed the manifest of an incomplete run")
				}
				return
			}
			if err := results.CheckComplete(dir); err != nil {
				t.Errorf("after rlab report: %v", err)
			}
			if after["report.html"] != disk["report.html"] {
				t.Errorf("manifest's report.html %+v, the file %+v", after["report.html"], disk["report.html"])
			}
			if after["results.json"] != stale {
				t.Errorf("rlab report rewrote results.json's entry: %+v, the run's %+v", after["results.json"], stale)
			}
			for p, e := range after {
				if p != "results.json" && e != disk[p] {
					t.Errorf("manifest %s: %+v, on disk %+v", p, e, disk[p])
				}
			}
			if len(after) != len(disk) {
				t.Errorf("manifest has %d entries, the directory %d files", len(after), len(disk))
			}
		})
	}
}
