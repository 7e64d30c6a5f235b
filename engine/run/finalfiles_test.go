package run

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"html"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/engine/results"
)

// TestRunFinalReport: the report.html a run writes is drawn from the
// finished run (issue 25: it drew the teardown as still running and lacked
// complete.json and manifest.json), and manifest.json's hashes are those of
// the files on disk at the end, report.html's included.
func TestRunFinalReport(t *testing.T) {
	res, _ := runLab(t, twoHosts+`
workload "hello" {
  tool    = "exec"
  host    = host.a
  command = ["echo", "hello from a"]
}
workload "bulk" {
  tool   = "tcp"
  server = host.a
  client = host.b
  bytes  = "1MiB"
}
`, Options{}, true)
	if res.Code != ExitOK {
		t.Fatalf("code %d, err %v", res.Code, res.Err)
	}
	if err := results.CheckComplete(res.Dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(res.Dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	page := html.UnescapeString(string(b))

	// The timeline: every step ended, the teardown among them with its
	// outcome (a bar's title is "<label>: <status>, <seconds> s from ...").
	bar := regexp.MustCompile(`(?m)<title>([^<]*): ([a-z]+), [0-9.]+ s from [0-9.]+ s</title>`)
	bars := bar.FindAllStringSubmatch(page, -1)
	if len(bars) == 0 {
		t.Fatal("report.html draws no timeline bar")
	}
	teardown := ""
	for _, m := range bars {
		if m[2] == "running" {
			t.Errorf("timeline: %q drawn as still running", m[1])
		}
		if m[1] == "phase teardown" {
			teardown = m[2]
		}
	}
	if teardown != "ok" {
		t.Errorf("timeline: teardown %q, want ok; bars %q", teardown, bars)
	}

	// The file list names every file of the finished run directory.
	i, j := strings.Index(page, `<section id="files">`), strings.LastIndex(page, `</section>`)
	if i < 0 || j < i {
		t.Fatal("report.html has no files section")
	}
	var listed []string
	for _, m := range regexp.MustCompile(`href="\./([^"]+)"`).FindAllStringSubmatch(page[i:j], -1) {
		p, err := url.PathUnescape(m[1])
		if err != nil {
			t.Fatal(err)
		}
		listed = append(listed, p)
	}
	var onDisk []string
	filepath.WalkDir(res.Dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			rel, _ := filepath.Rel(res.Dir, p)
			if rel != "report.html" {
				onDisk = append(onDisk, filepath.ToSlash(rel))
			}
		}
		return err
	})
	slices.Sort(listed)
	slices.Sort(onDisk)
	if !slices.Equal(listed, onDisk) {
		t.Errorf("report's file list:\n%q\nfiles of the run:\n%q", listed, onDisk)
	}
	for _, f := range []string{results.CompleteFile, results.ManifestFile} {
		if !slices.Contains(listed, f) {
			t.Errorf("report's file list lacks %s", f)
		}
	}

	// Every sha256 of manifest.json is its file's on disk at the end, and
	// the manifest covers every file but itself and complete.json.
	var man []ManifestEntry
	b, _ = os.ReadFile(filepath.Join(res.Dir, ManifestFile))
	if err := json.Unmarshal(b, &man); err != nil {
		t.Fatal(err)
	}
	var hashed []string
	for _, m := range man {
		hashed = append(hashed, m.Path)
		data, err := os.ReadFile(filepath.Join(res.Dir, filepath.FromSlash(m.Path)))
		if err != nil {
			t.Errorf("manifest names %s: %v", m.Path, err)
			continue
		}
		if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != m.SHA256 || int64(len(data)) != m.Size {
			t.Errorf("manifest: %s has sha256 %s, %d bytes; the file on disk %x, %d bytes", m.Path, m.SHA256, m.Size, sum, len(data))
		}
	}
	want := slices.DeleteFunc(append(slices.Clone(onDisk), "report.html"), func(p string) bool {
		return p == results.ManifestFile || p == results.CompleteFile
	})
	slices.Sort(want)
	slices.Sort(hashed)
	if !slices.Equal(hashed, want) {
		t.Errorf("manifest covers\n%q\nwant\n%q", hashed, want)
	}
}
