package report

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

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

// TestLinkedCaptureReadOnce: promise 83's read-once holds when a received
// run directory names one capture by many files: symlinks inside the run
// directory (which rundir follows) and hard links (a tar stores each as a
// header only). 2,000 links to the run's capture were read 2,000 times
// (over a large capture, a hang with no practical end); now the capture
// is read once, as one file.
func TestLinkedCaptureReadOnce(t *testing.T) {
	dir := copyDir(t, fixture)
	r, err := results.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	const p = "hosts/server/captures/cap.roce.pcap"
	for i := range 2000 {
		name := fmt.Sprintf("hosts/server/captures/cap.%d.pcap", i)
		link := os.Symlink
		if i%2 == 1 {
			link = func(old, new string) error { return os.Link(filepath.Join(dir, p), new) }
		}
		if err := link("cap.roce.pcap", filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
		r.Artifacts = append(r.Artifacts, results.Artifact{Host: "server", Path: name, Type: results.ArtifactCapture})
	}
	b, err := results.Encode(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, results.ResultsFile), b, 0o600); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	d, err := Build(dir, Options{NoGraphviz: true})
	if err != nil {
		t.Fatal(err)
	}
	read := 0
	for _, c := range d.Captures {
		if c.Packets > 0 {
			read++
		}
	}
	if read != 1 {
		t.Errorf("%d captures read (in %s), want the one capture read once", read, time.Since(start).Round(time.Millisecond))
	}
	// rlab pcap RUN's list, both from the artifacts and by name.
	if rels, err := results.CapturesOf(r, dir, IsCaptureFile); err != nil || len(rels) != 1 {
		t.Errorf("results.CapturesOf: %d paths, %v; want one", len(rels), err)
	}
	if rels, err := results.CapturesOf(&results.Run{}, dir, IsCaptureFile); err != nil || len(rels) != 1 {
		t.Errorf("results.CapturesOf by name: %d paths, %v; want one", len(rels), err)
	}
}

// TestLinkedFactsReadOnce: one facts.json hard-linked into many host
// folders (a tar stores each link as a header only) is read for one host;
// up to 256 MiB each, it was read and decoded once per folder.
func TestLinkedFactsReadOnce(t *testing.T) {
	dir := copyDir(t, fixture)
	src := filepath.Join(dir, "hosts", "server", "facts.json")
	for i := range 50 {
		h := filepath.Join(dir, "hosts", fmt.Sprintf("h%d", i))
		if err := os.MkdirAll(h, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Link(src, filepath.Join(h, "facts.json")); err != nil {
			t.Fatal(err)
		}
	}
	d, err := Build(dir, Options{NoGraphviz: true})
	if err != nil {
		t.Fatal(err)
	}
	read, linked := 0, 0
	for _, h := range d.Hosts {
		switch {
		case h.FactsLink != "":
			read++
		case strings.Contains(strings.Join(h.Errors, "\n"), "same file as another host's"):
			linked++
		}
	}
	if read > 2 || linked != 50 {
		t.Errorf("%d hosts' facts read, %d said to be links; want the linked file read once", read, linked)
	}
}

// TestInflatingCaptureRefused: a received run directory's capture that
// reads as far more bytes than it stores is not read (issue 24, attack
// round 5): a gzip member of zeros after a pcap header (64 KiB that
// inflate to 64 MiB of zero-length frames; 1 MB of it held `rlab report`
// 9 s, so the 20 GiB a host may send would take days), and a sparse file
// (a tar extracts terabytes of holes from a few bytes). The run's own
// capture is still read, and so is the same gzip file named by
// SummarizePcap (rlab pcap FILE).
func TestInflatingCaptureRefused(t *testing.T) {
	dir := copyDir(t, fixture)
	r, err := results.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	hdr := []byte{0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0, 1, 0, 0, 0}
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	zw.Write(hdr)
	zw.Write(make([]byte, 64<<20))
	zw.Close()
	bomb := filepath.Join(dir, "hosts/server/captures/cap.bomb.pcap")
	if err := os.WriteFile(bomb, gz.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	sparse := filepath.Join(dir, "hosts/server/captures/cap.sparse.pcap")
	if err := os.WriteFile(sparse, hdr, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(sparse, 1<<30); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"hosts/server/captures/cap.bomb.pcap", "hosts/server/captures/cap.sparse.pcap"} {
		r.Artifacts = append(r.Artifacts, results.Artifact{Host: "server", Path: p, Type: results.ArtifactCapture})
	}
	b, err := results.Encode(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, results.ResultsFile), b, 0o600); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	d, err := Build(dir, Options{NoGraphviz: true})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, c := range d.Captures {
		got[c.Name] = c.Error
		if c.Name == "roce" && c.Packets == 0 {
			t.Errorf("the run's own capture: no packets read (%s)", c.Error)
		}
	}
	for _, name := range []string{"bomb", "sparse"} {
		if !strings.Contains(got[name], "not a capture rlab pulled") {
			t.Errorf("capture %s: error %q, want it refused as not a capture rlab pulled", name, got[name])
		}
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("report took %s", el)
	}
	if st, err := SummarizePcap(bomb); err != nil || st.Summary.Frames == 0 {
		t.Errorf("the gzip file named itself: %v, want it read", err)
	}
}
