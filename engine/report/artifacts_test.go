package report

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/agent/proto"
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

// TestListedCaptureReadOnce: a capture results.json lists more than once,
// under the same name or another spelling of it, is read once (issue 24
// attack round): a received results.json of 1.7 MB listing a 44 KB capture
// 20,000 times held rlab report past two minutes (2,000 times: 49 s), each
// listing read as one more file of a ring, so a few MB listing a real
// capture held it for days.
func TestListedCaptureReadOnce(t *testing.T) {
	dir := copyDir(t, fixture)
	once, err := Build(dir, Options{NoGraphviz: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(once.Captures) != 1 || once.Captures[0].Packets == 0 {
		t.Fatalf("the fixture's capture: %+v", once.Captures)
	}
	want := once.Captures[0].Packets
	r, err := results.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	const p = "hosts/server/captures/cap.roce.pcap"
	for _, spelled := range []string{p, "hosts/server/captures/./cap.roce.pcap", "hosts//server/captures/cap.roce.pcap", "hosts/server/../server/captures/cap.roce.pcap"} {
		for range 500 {
			r.Artifacts = append(r.Artifacts, results.Artifact{Host: "server", Path: spelled, Type: results.ArtifactCapture})
		}
	}
	b, err := results.Encode(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, results.ResultsFile), b, 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := Build(dir, Options{NoGraphviz: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Captures) != 1 || d.Captures[0].Packets != want || d.Captures[0].Error != "" {
		got := []string{}
		for _, c := range d.Captures {
			got = append(got, fmt.Sprintf("%s: %d packets %q", c.Link.Path, c.Packets, c.Error))
		}
		t.Errorf("captures %q, want the one capture read once (%d packets)", got, want)
	}
	rels, err := results.CapturesOf(r, dir, IsCaptureFile)
	if err != nil || !slices.Equal(rels, []string{p}) {
		t.Errorf("results.CapturesOf: %d paths (%q…), %v; want %q once", len(rels), rels[:min(len(rels), 2)], err, p)
	}
}

// TestFactsOfEmptyObjectsRefused: a received facts.json of empty netdevs
// (15 MB took rlab report to 3.9 GB and past two minutes) is refused
// before it is decoded, said on the host, and the report is still made.
func TestFactsOfEmptyObjectsRefused(t *testing.T) {
	dir := copyDir(t, fixture)
	doc := `{"hostname":"x","netdevs":[` + strings.TrimSuffix(strings.Repeat("{},", proto.MaxValues+1), ",") + `]}`
	if err := os.WriteFile(filepath.Join(dir, "hosts", "server", "facts.json"), []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := Build(dir, Options{NoGraphviz: true})
	if err != nil {
		t.Fatal(err)
	}
	var errs []string
	for _, h := range d.Hosts {
		if h.Slug == "server" {
			errs = h.Errors
		}
	}
	if !strings.Contains(strings.Join(errs, "\n"), "refusing to decode") {
		t.Errorf("host server's errors %q, want the facts refused", errs)
	}
}
