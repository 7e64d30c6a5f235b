package graph

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/engine/lab"
)

var update = flag.Bool("update", false, "rewrite golden files")

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

// TestDOTGolden pins the DOT of a lab file, of a for_each class lab, and
// of a run directory where the hosts' facts add GUIDs, GIDs and MTUs.
func TestDOTGolden(t *testing.T) {
	for _, tc := range []struct{ name, path, golden string }{
		{"lab file", "../../testdata/report/run/lab/quickstart.hcl", "quickstart.lab.dot"},
		{"run dir", "../../testdata/report/run", "quickstart.run.dot"},
		{"class", "../../testdata/report/graph/class.hcl", "class.dot"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, diags, err := Load(tc.path, lab.LoadOptions{})
			if err != nil {
				t.Fatalf("%v: %v", err, diags)
			}
			var b bytes.Buffer
			if err := WriteDOT(&b, g); err != nil {
				t.Fatal(err)
			}
			golden(t, tc.golden, b.Bytes())
		})
	}
}

func TestIsRunDir(t *testing.T) {
	for _, tc := range []struct {
		path string
		want bool
	}{
		{"../../testdata/report/run", true},
		{"../../testdata/report/run/lab", false},
		{"../../testdata/report/graph", false},
	} {
		if got := IsRunDir(tc.path); got != tc.want {
			t.Errorf("IsRunDir(%s) = %v, want %v", tc.path, got, tc.want)
		}
	}
}

// hostileGraph is a topology whose every string tries to break out of a
// DOT string or inject markup into the SVG.
func hostileGraph() *Graph {
	h := `x" ] ; evil [label="pwned"] ; "\" <script>alert(1)</script>` + "\nline"
	g := &Graph{Name: h, Hosts: []*Host{{ID: "h0", Name: h, Detail: []string{h}}}}
	g.AddFacts(h, &proto.Facts{Hostname: h, OS: h, Netdevs: []proto.Netdev{{Name: h, Addrs: []string{h}}},
		RDMA: []proto.RDMADevice{{Name: h, Driver: "rxe", Parent: h, NodeGUID: h}}})
	g.Workloads = []*Edge{{From: "h0_n0_r0", To: "h0", Name: h, Tool: h, RDMA: true}}
	return g
}

func TestDOTQuotesHostileStrings(t *testing.T) {
	var b bytes.Buffer
	if err := WriteDOT(&b, hostileGraph()); err != nil {
		t.Fatal(err)
	}
	checkQuoted(t, b.String(), "evil", "pwned")
	if _, err := exec.LookPath("dot"); err != nil {
		t.Skip("no graphviz dot on PATH")
	}
	var svg bytes.Buffer
	if err := WriteSVG(context.Background(), &svg, hostileGraph()); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(svg.String(), "<script") {
		t.Errorf("SVG carries a <script> element")
	}
}

// FuzzDOTQuoting: whatever a name holds, it stays inside its DOT string.
func FuzzDOTQuoting(f *testing.F) {
	f.Add(`x" ] ; evil [label="pwned"] ; "\`)
	f.Add("a\\\"" + "\n" + "b" + "\r")
	f.Fuzz(func(t *testing.T, s string) {
		g := &Graph{Name: s, Hosts: []*Host{{ID: "h0", Name: s, Detail: []string{s}}}}
		g.AddFacts(s, &proto.Facts{Hostname: s, Netdevs: []proto.Netdev{{Name: s}}, RDMA: []proto.RDMADevice{{Name: s, Parent: s, NodeGUID: s}}})
		g.Workloads = []*Edge{{From: "h0", To: "h0", Name: s, Tool: s}}
		var b bytes.Buffer
		if err := WriteDOT(&b, g); err != nil {
			t.Fatal(err)
		}
		checkQuoted(t, b.String(), "ZZinjectedZZ")
	})
}

// checkQuoted walks DOT's quoted strings: the text must not end inside
// one, and none of bad may appear outside them.
func checkQuoted(t *testing.T, dot string, bad ...string) {
	t.Helper()
	var outside strings.Builder
	in, esc := false, false
	for _, r := range dot {
		switch {
		case esc:
			esc = false
		case in && r == '\\':
			esc = true
		case r == '"':
			in = !in
		case !in:
			outside.WriteRune(r)
		}
	}
	if in {
		t.Fatalf("DOT ends inside a string:\n%s", dot)
	}
	for _, b := range bad {
		if strings.Contains(outside.String(), b) {
			t.Errorf("%q escaped its quotes:\n%s", b, dot)
		}
	}
}

// TestSVGWithDot renders the run directory's graph with graphviz and checks
// every host, rxe device, GUID and workload is drawn.
func TestSVGWithDot(t *testing.T) {
	if _, err := exec.LookPath("dot"); err != nil {
		t.Skip("no graphviz dot on PATH (apt package graphviz)")
	}
	g, diags, err := Load("../../testdata/report/run", lab.LoadOptions{})
	if err != nil {
		t.Fatalf("%v: %v", err, diags)
	}
	var b bytes.Buffer
	if err := WriteSVG(context.Background(), &b, g); err != nil {
		t.Fatal(err)
	}
	svg := b.String()
	for _, want := range []string{"<svg", "host server", "host client", "rdma rxe0", "node GUID 5054:00ff:fe99:0001",
		"GID[1] ::ffff:10.99.0.2", "write_bw", "ib_write_bw", "capture roce", "tcp"} {
		if !strings.Contains(svg, want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
}

// TestSimpleSVG pins the Graphviz-free drawing of the run directory and
// checks hostile strings stay text in it.
func TestSimpleSVG(t *testing.T) {
	g, diags, err := Load("../../testdata/report/run", lab.LoadOptions{})
	if err != nil {
		t.Fatalf("%v: %v", err, diags)
	}
	var b bytes.Buffer
	if err := WriteSimpleSVG(&b, g); err != nil {
		t.Fatal(err)
	}
	golden(t, "quickstart.run.simple.svg", b.Bytes())
	for _, want := range []string{"host server", "rdma rxe0 (rxe.client)", "node GUID 5054:00ff:fe99:0002", "write_bw", "ib_write_bw", "capture roce"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("simple SVG lacks %q", want)
		}
	}
	b.Reset()
	if err := WriteSimpleSVG(&b, hostileGraph()); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "<script") || strings.Contains(b.String(), `label="pwned"`) {
		t.Errorf("a hostile string became markup in the simple SVG")
	}
}

// TestPlaceHosts: hosts joined by workloads share a row, next to each
// other; a group that fits in a row never straddles two.
func TestPlaceHosts(t *testing.T) {
	hosts := func(n int) []*Host {
		var hs []*Host
		for i := 0; i < n; i++ {
			hs = append(hs, &Host{ID: fmt.Sprintf("h%d", i)})
		}
		return hs
	}
	for _, tc := range []struct {
		name  string
		n     int
		edges [][2]string
		want  [][]int
	}{
		{"none", 0, nil, nil},
		{"pair", 2, [][2]string{{"h1_n0_r0", "h0_n0_r0"}}, [][]int{{0, 1, -1, -1}}},
		{"class order: servers then clients", 5, [][2]string{{"h3", "h1"}, {"h4_n0_r0", "h2_n0_r0"}},
			[][]int{{0, 1, 3, -1}, {2, 4, -1, -1}}},
		{"a group wider than a row wraps", 6, [][2]string{{"h0", "h1"}, {"h1", "h2"}, {"h2", "h3"}, {"h3", "h4"}, {"h5", "h0"}},
			[][]int{{0, 1, 5, 2}, {3, 4, -1, -1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &Graph{Hosts: hosts(tc.n)}
			for _, e := range tc.edges {
				g.Workloads = append(g.Workloads, &Edge{From: e[0], To: e[1]})
			}
			if d := cmp.Diff(tc.want, placeHosts(g, 4)); d != "" {
				t.Errorf("placeHosts (-want +got):\n%s", d)
			}
		})
	}
}

func TestLoadRedactsSensitive(t *testing.T) {
	file := filepath.Join(t.TempDir(), "l.hcl")
	// The login user is the value too, and an rxe without become makes a
	// warning that quotes it ("logs in as %q"): rlab graph printed it raw
	// (attack round 12), while validate and plan redact their diagnostics.
	src := "lab \"v\" {}\nvariable \"token\" {\n  type = string\n  sensitive = true\n}\nhost \"a\" {\n  address = \"${var.token}.example.org\"\n  user = var.token\n}\nrxe \"a\" {\n  host = host.a\n  netdev = \"eth1\"\n}\n"
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	g, diags, err := Load(file, lab.LoadOptions{Vars: map[string]string{"token": "s3cr3tZZ"}})
	if err != nil {
		t.Fatalf("%v: %v", err, diags)
	}
	if len(diags) == 0 {
		t.Fatal("no warning: the lab no longer makes the one that quotes the login user")
	}
	for _, d := range diags {
		if strings.Contains(d.Summary+d.Detail, "s3cr3tZZ") {
			t.Errorf("a diagnostic shows the sensitive value: %s: %s", d.Summary, d.Detail)
		}
	}
	var b bytes.Buffer
	if err := WriteDOT(&b, g); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "s3cr3tZZ") || !strings.Contains(b.String(), "(sensitive).example.org") {
		t.Errorf("DOT should show the address redacted:\n%s", b.String())
	}
}

// TestDOTFabric pins a lab with siw and rdma blocks, and the facts of a host
// with hardware beside them: an mlx5 (RoCE port, its netdev from sysfs
// device/net) that an rdma block names, an InfiniBand port, an iWARP NIC
// and a siw device, as agent/server's sysfs fixtures read them.
func TestDOTFabric(t *testing.T) {
	l, diags := lab.Load([]string{"../../testdata/labs/valid/devices.hcl"}, lab.LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	g := FromLab(l)
	g.AddFacts("a", &proto.Facts{Hostname: "a", Kernel: "6.8.0-45-generic",
		Netdevs: []proto.Netdev{{Name: "eth1", MTU: 1500, State: "up", Addrs: []string{"10.0.0.1/24"}}, {Name: "ens2f0", MTU: 9000, State: "up"}},
		RDMA: []proto.RDMADevice{
			{Name: "mlx5_0", Driver: "hw", NodeType: "CA", Netdevs: []string{"ens2f0"}, NodeGUID: "b859:9f03:00a1:b2c3", SysImageGUID: "b859:9f03:00a1:b2c3",
				Ports: []proto.RDMAPort{{Port: 1, State: "DOWN", LinkLayer: "Ethernet"}, {Port: 2, State: "ACTIVE", LinkLayer: "Ethernet", Rate: "100 Gb/sec (4X EDR)",
					GIDs: []proto.GID{{Index: 3, GID: "::ffff:10.1.0.1", Type: "RoCE v2", Netdev: "ens2f0"}}}}},
			{Name: "mlx5_1", Driver: "hw", NodeType: "CA", NodeGUID: "b859:9f03:00a1:b2c4", SysImageGUID: "b859:9f03:00a1:b2c3",
				Ports: []proto.RDMAPort{{Port: 1, State: "ACTIVE", LinkLayer: "InfiniBand", Rate: "100 Gb/sec (4X EDR)", LID: 5}}},
			{Name: "irdma0", Driver: "hw", NodeType: "RNIC", Netdevs: []string{"eth1"}, Ports: []proto.RDMAPort{{Port: 1, State: "ACTIVE", LinkLayer: "Ethernet", Rate: "25 Gb/sec (1X EDR)"}}},
			{Name: "siw_eth2", Driver: "siw", NodeType: "RNIC", Netdevs: []string{"eth2"}, NodeGUID: "5254:0012:3456:0000", Ports: []proto.RDMAPort{{Port: 1, State: "ACTIVE", LinkLayer: "Ethernet"}}},
		}})
	var b bytes.Buffer
	if err := WriteDOT(&b, g); err != nil {
		t.Fatal(err)
	}
	golden(t, "fabric.run.dot", b.Bytes())
	for _, want := range []string{"found: port 2; rlab never deletes it", "hw, iWARP", "LID 5", "siw (soft-iWARP)", "sys image GUID b859:9f03:00a1:b2c3"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("DOT lacks %q", want)
		}
	}
	if strings.Count(b.String(), `"mlx5_0`) > 2 {
		t.Errorf("mlx5_0 drawn more than once per host:\n%s", b.String())
	}
}

// TestSVGWellFormedWithControlFacts: a control character, an invalid byte
// or an XML noncharacter in one host's facts (a hostname with ESC or NUL)
// leaves the topology SVG well-formed XML, drawn by the built-in layout and
// by graphviz (the report's picture did not load), and reaches neither it
// nor the DOT text raw.
func TestSVGWellFormedWithControlFacts(t *testing.T) {
	ctl := "h\x00o\x01s\x1b]0;title\x07t\x08\u0085\u009b\ufffe\uffff\xff\u202e"
	mk := func() *Graph {
		g := &Graph{Name: "lab" + ctl, Hosts: []*Host{{ID: "h0", Name: "a" + ctl, Detail: []string{ctl}}}}
		g.AddFacts("a"+ctl, &proto.Facts{Hostname: ctl, OS: ctl, Kernel: ctl, Netdevs: []proto.Netdev{{Name: ctl, Addrs: []string{ctl}}},
			RDMA: []proto.RDMADevice{{Name: ctl, Driver: "rxe", Parent: ctl, NodeGUID: ctl}}})
		g.Workloads = []*Edge{{From: "h0", To: "h0", Name: ctl, Tool: ctl, RDMA: true}}
		return g
	}
	wellFormed := func(name string, b []byte) {
		t.Helper()
		d := xml.NewDecoder(bytes.NewReader(b))
		for {
			_, err := d.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s is not well-formed XML: %v", name, err)
			}
		}
	}
	raw := func(name, s string) {
		t.Helper()
		if !utf8.ValidString(s) {
			t.Errorf("%s is not UTF-8", name)
		}
		if i := strings.IndexFunc(s, func(r rune) bool {
			return (r < 0x20 && r != '\n' && r != '\t') || (r >= 0x7f && r <= 0x9f) || r == 0xfffe || r == 0xffff || r == 0x202e
		}); i >= 0 {
			t.Errorf("%s carries a raw control character at %d: %q", name, i, s[max(0, i-20):min(len(s), i+20)])
		}
	}
	var simple, dot bytes.Buffer
	if err := WriteSimpleSVG(&simple, mk()); err != nil {
		t.Fatal(err)
	}
	wellFormed("the built-in SVG", simple.Bytes())
	raw("the built-in SVG", simple.String())
	if err := WriteDOT(&dot, mk()); err != nil {
		t.Fatal(err)
	}
	raw("the DOT text", dot.String())
	if _, err := exec.LookPath("dot"); err != nil {
		t.Skip("no graphviz dot on PATH for the graphviz SVG")
	}
	var svg bytes.Buffer
	if err := WriteSVG(context.Background(), &svg, mk()); err != nil {
		t.Fatal(err)
	}
	wellFormed("graphviz's SVG", svg.Bytes())
}

// TestLoadRunDirConfined: a run directory may be someone else's, so its
// lab/ is read confined, as rlab report reads it (SECURITY 115): a lab file
// linked to a file of the reader's, or lab/ itself linked to a folder of
// theirs, is refused without its text being read (before, the first
// line of the reader's ~/.netrc was printed in the diagnostic).
func TestLoadRunDirConfined(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "netrc")
	if err := os.WriteFile(secret, []byte("machine example.com login alice password s3cr3t\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	elsewhere := t.TempDir()
	if err := os.WriteFile(filepath.Join(elsewhere, "mine.hcl"), []byte("lab \"mine\" {\n  description = \"s3cr3t\"\n}\nhost \"h\" {\n  address = \"192.0.2.1\"\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	mk := func(t *testing.T) string {
		run := t.TempDir()
		for _, d := range []string{"lab", "hosts"} {
			if err := os.Mkdir(filepath.Join(run, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		src, err := os.ReadFile("../../testdata/report/run/lab/quickstart.hcl")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(run, "lab", "quickstart.hcl"), src, 0o644); err != nil {
			t.Fatal(err)
		}
		return run
	}
	for _, tc := range []struct {
		name string
		set  func(t *testing.T, run string)
	}{
		{"file linked out", func(t *testing.T, run string) {
			if err := os.Symlink(secret, filepath.Join(run, "lab", "zz.hcl")); err != nil {
				t.Fatal(err)
			}
		}},
		{"lab linked out", func(t *testing.T, run string) {
			if err := os.RemoveAll(filepath.Join(run, "lab")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(elsewhere, filepath.Join(run, "lab")); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := mk(t)
			tc.set(t, run)
			g, diags, err := Load(run, lab.LoadOptions{})
			if err == nil {
				t.Fatalf("loaded (%d hosts)", len(g.Hosts))
			}
			var b strings.Builder
			for _, d := range diags {
				fmt.Fprintf(&b, "%s %s\n", d.Summary, d.Detail)
				if d.Subject != nil {
					fmt.Fprintf(&b, "%s\n", d.Subject.Filename)
				}
			}
			b.WriteString(err.Error())
			if strings.Contains(b.String(), "s3cr3t") {
				t.Errorf("the reader's file was read:\n%s", b.String())
			}
			// What is printed with the source lines, as rlab prints it.
			var w strings.Builder
			_ = lab.WriteDiagnostics(&w, lab.SourceFiles(nil, diags), diags, 80, false)
			if strings.Contains(w.String(), "s3cr3t") {
				t.Errorf("the reader's file was shown:\n%s", w.String())
			}
		})
	}
	// The run directory's own lab still loads.
	if _, diags, err := Load(mk(t), lab.LoadOptions{}); err != nil {
		t.Fatalf("%v: %v", err, diags)
	}
}

// TestAddRunFactsLinked: a received run directory's hosts that share one
// facts.json (hard links) have it read once (SECURITY 119): every host
// kept its own copy of the strings before, so a lab of 10,000 hosts
// over one large file took the machine's memory (here, 20 hosts and a
// 4 MiB hostname: 20 copies).
func TestAddRunFactsLinked(t *testing.T) {
	dir := t.TempDir()
	src := "lab \"l\" {}\nhost \"h\" {\n  count = 20\n  address = \"192.0.2.1\"\n}\n"
	l, diags := lab.LoadSource("l.hcl", []byte(src), dir, lab.LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	first := ""
	for _, h := range l.Hosts {
		d := filepath.Join(dir, "hosts", h.Slug)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		if first == "" {
			first = filepath.Join(d, "facts.json")
			err = os.WriteFile(first, []byte(`{"hostname":"`+strings.Repeat("n", 4<<20)+`"}`), 0o644)
		} else {
			err = os.Link(first, filepath.Join(d, "facts.json"))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	g := FromLab(l)
	if err := g.AddRunFacts(l, dir); err != nil {
		t.Fatal(err)
	}
	named := 0
	for _, h := range g.Hosts {
		for _, d := range h.Detail {
			if strings.Contains(d, "nnnn") {
				named++
			}
		}
	}
	if named != 1 {
		t.Errorf("%d hosts carry the linked facts' hostname, want 1", named)
	}
}

// TestLoadRunDirNoEnv: a received run directory's lab does not read the
// reader's RLAB_VAR_* environment (SECURITY 122): a lab declaring the
// variable the reader keeps a token in drew it as a host's address.
func TestLoadRunDirNoEnv(t *testing.T) {
	run := t.TempDir()
	for _, d := range []string{"lab", "hosts"} {
		if err := os.Mkdir(filepath.Join(run, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	src := "lab \"l\" {}\nvariable \"token\" {\n  default = \"none\"\n}\nhost \"h\" {\n  address = var.token\n}\n"
	if err := os.WriteFile(filepath.Join(run, "lab", "l.hcl"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"RLAB_VAR_token=s3cr3t-token"}
	g, diags, err := Load(run, lab.LoadOptions{Env: env})
	if err != nil {
		t.Fatalf("%v: %v", err, diags)
	}
	var b bytes.Buffer
	if err := WriteDOT(&b, g); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "s3cr3t") {
		t.Errorf("the reader's environment reached the graph of a received run")
	}
	// A lab file of the user's own still reads it.
	g, _, err = Load(filepath.Join(run, "lab", "l.hcl"), lab.LoadOptions{Env: env})
	if err != nil {
		t.Fatal(err)
	}
	b.Reset()
	_ = WriteDOT(&b, g)
	if !strings.Contains(b.String(), "s3cr3t") {
		t.Errorf("a lab file no longer reads RLAB_VAR_*")
	}
}

// TestManyFactsLinear: a host may report as many netdevs and RDMA devices
// as one facts reply holds (proto.MaxValues objects), and every run's
// report places them all (AddRunFacts). Each shape once took quadratic
// time (SECURITY 125): a device per parent, every device on one parent,
// every device twice under another driver, the lab's netdev reported again
// and again. Each must be placed within a few seconds, and the text must be
// one proto.CheckValues lets through.
func TestManyFactsLinear(t *testing.T) {
	const n = 90_000
	shapes := map[string]func(i int) string{
		"device per parent": func(i int) string { return fmt.Sprintf(`{"name":"d%d","parent":"p%d"}`, i, i) },
		"one parent":        func(i int) string { return fmt.Sprintf(`{"name":"d%d","parent":"eth1"}`, i) },
		"reported twice":    func(i int) string { return fmt.Sprintf(`{"name":"d%d","driver":"%c"}`, i/2, 'a'+byte(i%2)) },
		"netdev again":      func(i int) string { return fmt.Sprintf(`{"name":"eth1","addrs":["10.0.%d.%d/16"]}`, i/256%256, i%256) },
	}
	for name, item := range shapes {
		t.Run(name, func(t *testing.T) {
			var b strings.Builder
			list, count := "rdma_devices", n
			if name == "netdev again" {
				list, count = "netdevs", n/2 // the address is a value too
			}
			b.WriteString(`{"` + list + `":[`)
			for i := range count {
				if i > 0 {
					b.WriteByte(',')
				}
				b.WriteString(item(i))
			}
			b.WriteString(`]}`)
			if err := proto.CheckValues([]byte(b.String()), proto.MaxValues); err != nil {
				t.Fatalf("a host cannot send this shape: %v", err)
			}
			var f proto.Facts
			if err := json.Unmarshal([]byte(b.String()), &f); err != nil {
				t.Fatal(err)
			}
			g := &Graph{Hosts: []*Host{{ID: "h0", Name: "a", Netdevs: []*Netdev{{ID: "h0_n0", Name: "eth1"}, {ID: "h0_n1", Name: "(rxe)", Devices: []*Device{{ID: "h0_n1_r0", Ref: "r", Block: "rdma", Device: "d1"}}}}}}}
			start := time.Now()
			g.AddFacts("a", &f)
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("placing %d reported objects took %v, want linear time (under 5 s)", n, d)
			}
			var out bytes.Buffer
			if err := WriteDOT(&out, g); err != nil {
				t.Fatal(err)
			}
		})
	}
}
