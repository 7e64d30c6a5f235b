package lab

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

const corpus = "../../testdata/labs"

// labFiles lists the example labs and the valid corpus: each must load
// without a single diagnostic.
func labFiles(t testing.TB) []string {
	var out []string
	for _, g := range []string{"../../labs/*.hcl", corpus + "/valid/*.hcl"} {
		m, err := filepath.Glob(g)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m...)
	}
	if len(out) == 0 {
		t.Fatal("no lab files found")
	}
	return out
}

func diagText(l *Lab, diags hcl.Diagnostics) string {
	var b strings.Builder
	WriteDiagnostics(&b, SourceFiles(l, diags), diags, 100, false)
	return b.String()
}

func TestValidLabs(t *testing.T) {
	for _, f := range labFiles(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			l, diags := Load([]string{f}, LoadOptions{})
			if len(diags) > 0 {
				t.Fatalf("want no diagnostics, got:\n%s", diagText(l, diags))
			}
			if l.Name == "" || len(l.Hosts) == 0 {
				t.Fatalf("lab %q has %d hosts", l.Name, len(l.Hosts))
			}
		})
	}
}

var markerRe = regexp.MustCompile(`# (ERROR|WARNING): ([^#\n]+)`)

// marker is one expected diagnostic: severity, summary, line.
type marker struct {
	Severity string
	Summary  string
	Line     int
}

func markers(src []byte) []marker {
	var out []marker
	for i, line := range strings.Split(string(src), "\n") {
		for _, m := range markerRe.FindAllStringSubmatch(line, -1) {
			out = append(out, marker{strings.ToLower(m[1]), strings.TrimSpace(m[2]), i + 1})
		}
	}
	return out
}

func got(diags hcl.Diagnostics) []marker {
	var out []marker
	for _, d := range diags {
		m := marker{Severity: "error", Summary: d.Summary}
		if d.Severity == hcl.DiagWarning {
			m.Severity = "warning"
		}
		if d.Subject != nil {
			m.Line = d.Subject.Start.Line
		}
		out = append(out, m)
	}
	return out
}

func sortMarkers(ms []marker) {
	sort.Slice(ms, func(i, j int) bool {
		if ms[i].Line != ms[j].Line {
			return ms[i].Line < ms[j].Line
		}
		return ms[i].Summary < ms[j].Summary
	})
}

// TestErrorCorpus loads every file of testdata/labs/errors and wants
// exactly the diagnostics its `# ERROR: <summary>` markers name, each on
// the line where it stands (as Terraform's configs tests do).
func TestErrorCorpus(t *testing.T) {
	files, _ := filepath.Glob(corpus + "/errors/*.hcl")
	if len(files) < 40 {
		t.Errorf("errors corpus has %d files, want at least 40", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			want := markers(src)
			if len(want) == 0 {
				t.Fatal("file has no # ERROR: markers")
			}
			l, diags := Load([]string{f}, testOptions(f))
			have := got(diags)
			sortMarkers(want)
			sortMarkers(have)
			if d := cmp.Diff(want, have); d != "" {
				t.Errorf("diagnostics differ (-want +got):\n%s\nfull output:\n%s", d, diagText(l, diags))
			}
			for _, d := range diags {
				if d.Detail == "" {
					t.Errorf("diagnostic %q has no detail saying how to fix it", d.Summary)
				}
			}
		})
	}
}

// testOptions lets a corpus file ask for -var values with a comment line
// `# VAR: name=value`.
func testOptions(f string) LoadOptions {
	src, _ := os.ReadFile(f)
	opts := LoadOptions{Vars: map[string]string{}}
	for _, line := range strings.Split(string(src), "\n") {
		if v, ok := strings.CutPrefix(line, "# VAR: "); ok {
			k, val, _ := strings.Cut(v, "=")
			opts.Vars[k] = val
		}
	}
	return opts
}

// TestHugeFile: a 10 MB lab file is refused with one diagnostic before HCL
// parses it.
func TestHugeFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "huge.hcl")
	var b strings.Builder
	b.WriteString("lab \"huge\" {}\n")
	for b.Len() < 10<<20 {
		fmt.Fprintf(&b, "host \"h%d\" {\n  address = \"192.0.2.1\"\n}\n", b.Len())
	}
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	l, diags := Load([]string{p}, LoadOptions{})
	want := []marker{{"error", "Lab file too large", 1}}
	if d := cmp.Diff(want, got(diags)); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if l != nil {
		t.Errorf("lab = %v, want nil for an unparsable file", l.Name)
	}
}

// TestDiagnosticDetails checks the fix-it parts of some diagnostics: the
// suggestion for a misspelt name and the first location of a duplicate.
func TestDiagnosticDetails(t *testing.T) {
	tests := []struct {
		file, want string
	}{
		{"misspelt_host.hcl", `Did you mean "server"?`},
		{"undeclared_variable.hcl", ""},
		{"unknown_tool.hcl", `Did you mean "ib_write_bw"?`},
		{"unknown_attribute.hcl", `Did you mean "address"?`},
		{"duplicate_host.hcl", "duplicate_host.hcl:4,1-9"},
		{"rxe_twice_on_netdev.hcl", "rxe_twice_on_netdev.hcl:12,12-18"},
		{"ud_for_write.hcl", "RDMA WRITE needs a connected QP"},
		{"atomic_size.hcl", "sizes must be [8]"},
		{"transport_lowercase.hcl", `Write "UD" in capitals.`},
		{"file_outside_lab.hcl", "outside the lab's folder"},
		{"expect_units.hcl", `gbps() reads a bandwidth in bit/s, b/s, bps, kbit/s`}, // the accepted units
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			f := filepath.Join(corpus, "errors", tt.file)
			_, diags := Load([]string{f}, LoadOptions{})
			if len(diags) == 0 {
				t.Fatal("no diagnostics")
			}
			if !strings.Contains(diags[0].Detail, tt.want) {
				t.Errorf("detail %q does not contain %q", diags[0].Detail, tt.want)
			}
		})
	}
}

func TestExpectEval(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "e.hcl")
	src := `lab "e" {}
variable "min_gbps" {
  type    = number
  default = 1.5
}
host "a" {
  address = "192.0.2.1"
}
host "b" {
  address = "192.0.2.2"
}
rxe "a" {
  host   = host.a
  netdev = "eth1"
}
rxe "b" {
  host   = host.b
  netdev = "eth1"
}
workload "bw" {
  tool   = "ib_write_bw"
  server = rxe.a
  client = rxe.b
  expect {
    condition = result.bw_avg_gbps > var.min_gbps || result.size < 1024
    message   = "too slow"
  }
}
`
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	l, diags := Load([]string{p}, LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diagText(l, diags))
	}
	exps := l.Workloads[0].Expects
	if len(exps) != 1 || exps[0].Message != "too slow" {
		t.Fatalf("expects = %+v", exps)
	}
	num := func(f float64) cty.Value { return cty.NumberFloatVal(f) }
	tests := []struct {
		name    string
		result  map[string]cty.Value
		want    bool
		wantErr bool
	}{
		{"fast", map[string]cty.Value{"bw_avg_gbps": num(2), "size": num(65536)}, true, false},
		{"slow", map[string]cty.Value{"bw_avg_gbps": num(1), "size": num(65536)}, false, false},
		{"slow but small", map[string]cty.Value{"bw_avg_gbps": num(1), "size": num(64)}, true, false},
		{"metric missing", map[string]cty.Value{"size": num(65536)}, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, diags := exps[0].Eval(tt.result)
			if ok != tt.want || diags.HasErrors() != tt.wantErr {
				t.Errorf("Eval = %v, %v; want %v, error %v", ok, diags, tt.want, tt.wantErr)
			}
		})
	}
}

// TestReadmeTools keeps labs/README.md's tool table in step with the tools.
func TestReadmeTools(t *testing.T) {
	b, err := os.ReadFile("../../labs/README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range ToolNames() {
		if !strings.Contains(string(b), "| `"+n+"` |") {
			t.Errorf("labs/README.md has no row for tool %s", n)
		}
	}
}

// TestInstanceContext: a diagnostic about one instance of a for_each block
// names the instance.
func TestInstanceContext(t *testing.T) {
	src := []byte("lab \"i\" {}\nhost \"s\" {\n  for_each = { ana = \"192.0.2.1\", bo = \"root@192.0.2.2\" }\n  address  = each.value\n}\n")
	l, diags := LoadSource("inst.hcl", src, t.TempDir(), LoadOptions{})
	if len(diags) != 1 {
		t.Fatalf("want 1 diagnostic, got %v", diags)
	}
	var b strings.Builder
	WriteDiagnostics(&b, map[string]*hcl.File{"inst.hcl": {Bytes: src}}, diags, 0, false)
	if !strings.Contains(b.String(), `with each.key as "bo"`) {
		t.Errorf("the diagnostic does not name the instance:\n%s", b.String())
	}
	_ = l
}

// TestNullIsUnset: an optional argument set to null takes its default, as
// if it were absent; jump = cond ? null : host.bastion picks per host.
func TestNullIsUnset(t *testing.T) {
	type hostWant struct {
		Port         int
		User, Jump   string
		IdentityFile string
		Become       bool
	}
	for _, tc := range []struct {
		direct string
		hosts  map[string]hostWant
	}{
		{"true", map[string]hostWant{
			"bastion": {Port: 22, User: "ops"},
			"a":       {Port: 22, User: "ops", Become: true},
			"b":       {Port: 22, User: "ops", Jump: "bastion", Become: true},
			`s["x"]`:  {Port: 22, User: "ops"},
			`s["y"]`:  {Port: 2200, User: "ops"},
		}},
		{"false", map[string]hostWant{
			"bastion": {Port: 22, User: "ops"},
			"a":       {Port: 22, User: "ops", Jump: "bastion", Become: true},
			"b":       {Port: 22, User: "ops", Become: true},
			`s["x"]`:  {Port: 22, User: "ops"},
			`s["y"]`:  {Port: 2200, User: "ops"},
		}},
	} {
		t.Run("direct="+tc.direct, func(t *testing.T) {
			l, diags := Load([]string{corpus + "/valid/null_unset.hcl"}, LoadOptions{Vars: map[string]string{"direct": tc.direct}})
			if len(diags) > 0 {
				t.Fatalf("diagnostics:\n%s", diagText(l, diags))
			}
			got := map[string]hostWant{}
			for _, h := range l.Hosts {
				got[h.Name] = hostWant{Port: h.Port, User: h.User, Jump: h.Jump, IdentityFile: h.IdentityFile, Become: h.Become}
				if (h.Jump == "") != (h.JumpHost == nil) {
					t.Errorf("host %s: Jump %q but JumpHost %v", h.Name, h.Jump, h.JumpHost)
				}
			}
			if d := cmp.Diff(tc.hosts, got); d != "" {
				t.Errorf("hosts (-want +got):\n%s", d)
			}
			if l.Description != "" {
				t.Errorf("description %q, want none", l.Description)
			}
			if r := l.Devices[0]; r.Device != "rxe_eth1" || r.Keep {
				t.Errorf("rxe a: device %q keep %v, want the defaults", r.Device, r.Keep)
			}
			w := l.Workloads[0]
			if w.Sizes != nil || w.Iterations != 0 || w.Duration != 5*time.Second || w.QPs != 0 || w.Transport != "RC" || w.Timeout != DefaultTimeout || w.Repeat != 1 || w.Args != nil || len(w.Expects) != 1 || w.Expects[0].Message != "" {
				t.Errorf("workload write_bw: %+v, want the defaults", w)
			}
			if tcp := l.Workloads[1]; tcp.Bytes != DefaultTCPBytes || tcp.Duration != 0 {
				t.Errorf("workload tcp: bytes %d duration %v, want the defaults", tcp.Bytes, tcp.Duration)
			}
			if c := l.Captures[0]; c.Filter != "" || c.Snaplen != DefaultSnaplen || c.MaxBytes != DefaultMaxBytes || c.During != nil {
				t.Errorf("capture: %+v, want the defaults", c)
			}
		})
	}
}
