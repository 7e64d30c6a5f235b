package report

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"flag"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlab-dev/rlab/engine/lab"
)

var update = flag.Bool("update", false, "rewrite golden files")

const fixture = "../../testdata/report/run"

// copyDir copies the fixture run directory so a test may write into it.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "20261125T210211Z")
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if d := cmp.Diff(string(want), string(got)); d != "" {
		t.Errorf("%s differs (-want +got):\n%s", path, d)
	}
}

// TestBuildGolden pins the report's data model for the fixture run: every
// table cell, chart coordinate and link.
func TestBuildGolden(t *testing.T) {
	dir := copyDir(t, fixture)
	d, err := Build(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // the golden file is for people: keep < > & as they are
	enc.SetIndent("", "  ")
	if err := enc.Encode(d); err != nil {
		t.Fatal(err)
	}
	golden(t, "fixture.data.json", b.Bytes())
}

func TestRenderWritesReport(t *testing.T) {
	dir := copyDir(t, fixture)
	if err := Render(dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<svg", "quickstart", "Bandwidth vs message size", "RDMA vs TCP", "RC RDMA WRITE First", "NOT held",
		"<th>machine</th><td>QEMU Standard PC (i440FX &#43; PIIX, 1996) pc-i440fx-7.2</td>", "<th>rdma-core</th><td>44.0</td>", "<code>1af4:1000</code>",
		// Metrics in their recorded unit, as summary.md and expect (sizes
		// in binary units); the exact value beside.
		`<td class="n" data-value="268435456" title="268435456 B">256 MiB</td>`, `<th>tcp_bw [Gb/s]</th>`,
		`<td class="n" data-value="0.00123" title="0.00123 Mpps">0.00123</td>`,
		// The workload table's result column: the headline.
		`<td>4 KiB 0.0384 Gb/s, 64 KiB 0.07552 Gb/s; 0.00123 Mpps at 4 KiB</td>`,
		"Compared: each RDMA workload at its largest message size", `<td class="n" data-value="10980" title="10980 B">10.72 KiB</td>`} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("report.html lacks %q", want)
		}
	}
}

// TestTopology: the report carries the lab's topology as DOT always, and
// as a picture when graphviz is installed.
func TestTopology(t *testing.T) {
	dir := copyDir(t, fixture)
	d, err := Build(dir, Options{NoGraphviz: true})
	if err != nil {
		t.Fatal(err)
	}
	if d.Topology == nil || !strings.Contains(d.Topology.DOT, "node GUID 5054:00ff:fe99:0002") || d.Topology.Image != "" {
		t.Fatalf("topology without graphviz = %+v, want the DOT with the facts' GUIDs and no picture", d.Topology)
	}
	if _, err := exec.LookPath("dot"); err != nil {
		t.Skip("no graphviz dot on PATH")
	}
	d, err = Build(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(d.Topology.Image), "data:image/svg+xml;base64,") {
		t.Errorf("topology picture = %.60q, want an SVG data URL", d.Topology.Image)
	}
}

// TestTopologyNeedsVars: a lab whose variable has no default cannot be
// loaded from the run directory alone; the report says so and renders.
func TestTopologyNeedsVars(t *testing.T) {
	dir := copyDir(t, fixture)
	lab := "lab \"v\" {}\nvariable \"addr\" { type = string }\nhost \"a\" { address = var.addr }\n"
	if err := os.WriteFile(filepath.Join(dir, "lab/quickstart.hcl"), []byte(lab), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := Build(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Topology == nil || d.Topology.DOT != "" || !strings.Contains(d.Topology.Note, "--var") {
		t.Errorf("topology = %+v, want a note pointing to rlab graph --var", d.Topology)
	}
	if err := Write(io.Discard, d); err != nil {
		t.Fatal(err)
	}
}

// TestBrokenRunDirs: a run that died early or a directory edited by hand
// still gives a report, naming what could not be read.
func TestBrokenRunDirs(t *testing.T) {
	for _, tc := range []struct {
		name    string
		files   map[string]string
		warning string // a warning containing this, "" for none
		hostErr string // an error on the first host containing this
	}{
		{"empty", nil, "results.json is missing", ""},
		{"bad results", map[string]string{"results.json": "{"}, "read results.json", ""},
		{"bad facts", map[string]string{"results.json": "{}", "hosts/a/facts.json": "[1]"}, "", "read hosts/a/facts.json"},
		{"no facts", map[string]string{"results.json": "{}", "hosts/a/logs/x.txt": "x"}, "", "no facts.json"},
		{"bad pcap", map[string]string{"results.json": "{}", "hosts/a/facts.json": "{}", "hosts/a/captures/c.pcap": "not a pcap"}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, body := range tc.files {
				p := filepath.Join(dir, filepath.FromSlash(name))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := Render(dir); err != nil {
				t.Fatal(err)
			}
			d, err := Build(dir, Options{NoGraphviz: true})
			if err != nil {
				t.Fatal(err)
			}
			if tc.warning != "" && !strings.Contains(strings.Join(d.Warnings, "\n"), tc.warning) {
				t.Errorf("warnings %q lack %q", d.Warnings, tc.warning)
			}
			if tc.hostErr != "" && (len(d.Hosts) == 0 || !strings.Contains(strings.Join(d.Hosts[0].Errors, "\n"), tc.hostErr)) {
				t.Errorf("hosts %+v: want an error containing %q", d.Hosts, tc.hostErr)
			}
			if tc.name == "bad pcap" && (len(d.Captures) != 1 || d.Captures[0].Error == "") {
				t.Errorf("captures %+v: want one with an error", d.Captures)
			}
		})
	}
	if _, err := Build(filepath.Join(t.TempDir(), "nope"), Options{}); err == nil {
		t.Errorf("Build of a missing directory: want an error")
	}
}

// TestTopologyWithoutGraphviz: with no dot on PATH the picture is the
// built-in layout, and the page says how to get a better one.
func TestTopologyWithoutGraphviz(t *testing.T) {
	dir := copyDir(t, fixture)
	t.Setenv("PATH", t.TempDir())
	d, err := Build(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(d.Topology.Image), "data:image/svg+xml;base64,") || !strings.Contains(d.Topology.Note, "without Graphviz") {
		t.Errorf("topology = %.80q / %q: want the simple SVG and a note", d.Topology.Image, d.Topology.Note)
	}
}

// TestOptionsLab: the run hands in the lab it loaded (with its -var
// values), so even a lab that needs variables gets its topology and
// workload settings.
func TestOptionsLab(t *testing.T) {
	dir := copyDir(t, fixture)
	src := "lab \"v\" {}\nvariable \"addr\" { type = string }\nhost \"server\" { address = var.addr }\nhost \"client\" { address = \"192.0.2.2\" }\n" +
		"workload \"tcp\" {\n  tool = \"tcp\"\n  server = host.server\n  client = host.client\n  bytes = \"1MiB\"\n}\n"
	file := filepath.Join(dir, "lab/quickstart.hcl")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	l, diags := lab.Load([]string{file}, lab.LoadOptions{Vars: map[string]string{"addr": "192.0.2.1"}})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	d, err := Build(dir, Options{Lab: l, NoGraphviz: true})
	if err != nil {
		t.Fatal(err)
	}
	if d.Topology == nil || !strings.Contains(d.Topology.DOT, "192.0.2.1") || !strings.Contains(d.Topology.DOT, "hostname vm1") {
		t.Errorf("topology = %+v, want the lab's address and the run's facts", d.Topology)
	}
	for _, w := range d.Workloads {
		if w.Name == "tcp" && !strings.Contains(w.Config, "bytes 1 MiB") {
			t.Errorf("tcp config = %q, want the lab's bytes", w.Config)
		}
	}
}

// TestSensitiveRedacted: a sensitive variable's value (here in an exec
// command and a host address) shows nowhere the report draws from the lab.
func TestSensitiveRedacted(t *testing.T) {
	dir := copyDir(t, fixture)
	src := "lab \"v\" {}\nvariable \"token\" {\n  type = string\n  sensitive = true\n}\n" +
		"host \"server\" { address = \"192.0.2.1\" }\nhost \"client\" { address = \"${var.token}.example.org\" }\n" +
		"workload \"tcp\" {\n  tool = \"exec\"\n  host = host.server\n  command = [\"curl\", \"-H\", \"X-Token: ${var.token}\", \"https://example.org\"]\n}\n"
	file := filepath.Join(dir, "lab/quickstart.hcl")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	l, diags := lab.Load([]string{file}, lab.LoadOptions{Vars: map[string]string{"token": "s3cr3tZZ"}})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if err := RenderWith(dir, Options{Lab: l}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	d, err := Build(dir, Options{Lab: l, NoGraphviz: true})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(d.Topology.DOT, "(sensitive).example.org") {
		t.Errorf("topology DOT lacks the redacted address:\n%s", d.Topology.DOT)
	}
	if strings.Contains(string(b), "s3cr3tZZ") || strings.Contains(d.Topology.DOT, "s3cr3tZZ") {
		t.Errorf("the sensitive value is in the report")
	}
	// The picture is base64: decode it and look there too.
	pic, err := Build(dir, Options{Lab: l})
	if err != nil {
		t.Fatal(err)
	}
	svg, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(string(pic.Topology.Image), "data:image/svg+xml;base64,"))
	if err != nil || !bytes.Contains(svg, []byte("<svg")) || bytes.Contains(svg, []byte("s3cr3tZZ")) {
		t.Errorf("topology picture: %v; has svg %v, has the secret %v", err, bytes.Contains(svg, []byte("<svg")), bytes.Contains(svg, []byte("s3cr3tZZ")))
	}
	for _, w := range d.Workloads {
		if strings.Contains(w.Config, "s3cr3tZZ") {
			t.Errorf("workload %s config shows the secret: %s", w.Name, w.Config)
		}
	}
}

func TestLinkSpeed(t *testing.T) {
	for _, tc := range []struct {
		mbps int
		want string
	}{{-1, ""}, {0, ""}, {100, "100 Mb/s"}, {1000, "1 Gb/s"}, {2500, "2.5 Gb/s"}, {25000, "25 Gb/s"}, {100000, "100 Gb/s"}} {
		if got := linkSpeed(tc.mbps); got != tc.want {
			t.Errorf("linkSpeed(%d) = %q, want %q", tc.mbps, got, tc.want)
		}
	}
}

// TestGuardAroundLabLoad: rlab report loads a received run directory's
// lab under the command's evaluation guard (SECURITY 109): Guard is called
// with lab/ before the load and its stop after, once; a run's own lab
// (Options.Lab) is not loaded again, so not guarded.
func TestGuardAroundLabLoad(t *testing.T) {
	for _, own := range []bool{false, true} {
		dir := copyDir(t, fixture)
		var calls []string
		opts := Options{NoGraphviz: true, Guard: func(p string) func() {
			calls = append(calls, "start "+p)
			return func() { calls = append(calls, "stop") }
		}}
		if own {
			l, diags := lab.Load([]string{filepath.Join(dir, "lab")}, lab.LoadOptions{})
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			opts.Lab = l
		}
		d, err := Build(dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"start " + filepath.Join(dir, "lab"), "stop"}
		if own {
			want = nil
		}
		if !slices.Equal(calls, want) {
			t.Errorf("own lab %t: guard calls %q, want %q", own, calls, want)
		}
		if d.Topology == nil || d.Topology.DOT == "" {
			t.Errorf("own lab %t: no topology: the lab was not loaded", own)
		}
	}
}
