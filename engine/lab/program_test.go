package lab

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlab-dev/rlab/kinds"
)

// TestProgramBlock: a program block lists its source's files (sorted, with
// their modes) and hashes them, keeps its build argv and packages per
// family; a program workload's commands hold self.* placeholders that
// ExpandSelf fills, its ready and metric blocks are kept, and expect reads
// the metrics by name; exec takes metric blocks too.
func TestProgramBlock(t *testing.T) {
	l, diags := Load([]string{corpus + "/valid/program.hcl"}, LoadOptions{})
	if len(diags) > 0 {
		t.Fatalf("diagnostics:\n%s", diagText(l, diags))
	}
	if len(l.Programs) != 1 {
		t.Fatalf("programs %v", l.Programs)
	}
	p := l.Programs[0]
	var files []string
	for _, f := range p.Files {
		files = append(files, f.Path)
	}
	if d := cmp.Diff([]string{"Makefile", "client.c", "server.c"}, files); d != "" {
		t.Errorf("files (-want +got):\n%s", d)
	}
	if len(p.Hash) != 64 || !filepath.IsAbs(p.Dir) || !strings.HasSuffix(p.Dir, "pingpair") {
		t.Errorf("hash %q dir %q", p.Hash, p.Dir)
	}
	if d := cmp.Diff([]string{"make", "server", "client"}, p.Build); d != "" {
		t.Errorf("build: %s", d)
	}
	if d := cmp.Diff(map[string][]string{"debian": {"gcc", "make"}, "rhel": {"gcc", "make"}}, p.Packages); d != "" {
		t.Errorf("packages: %s", d)
	}
	pair := l.WorkloadByName("pair")
	if pair.Program != p || pair.ServerHost.Name != "a" || pair.ClientHost.Name != "b" || pair.Ready != "listening" {
		t.Fatalf("pair %+v", pair)
	}
	vals := map[string]string{"port": "20000", "server_address": "10.0.0.1"}
	got, err := kinds.ExpandSelf(pair.ClientCommand, vals)
	if err != nil || strings.Join(got, " ") != "./client 10.0.0.1 20000" {
		t.Errorf("client command %q, %v", got, err)
	}
	if s := kinds.ShowSelf(pair.ServerCommand); s != "./server ${self.port} -x" {
		t.Errorf("shown %q", s)
	}
	want := []kinds.OutputMetric{{Name: "pongs", Pattern: "^got pong"}, {Name: "mibps", Pattern: `in [0-9.]+ s \((?P<value>[0-9.]+) MiB/s\)`, Unit: "MiB/s", Better: "higher"}}
	if d := cmp.Diff(want, pair.Metrics); d != "" {
		t.Errorf("metrics (-want +got):\n%s", d)
	}
	if len(pair.Expects) != 1 {
		t.Errorf("expects %d", len(pair.Expects))
	}
	verbs := l.WorkloadByName("verbs")
	if verbs.ServerDevice == nil || verbs.ClientDevice == nil {
		t.Fatalf("verbs sides %+v", verbs)
	}
	if _, err := kinds.ExpandSelf(verbs.ClientCommand, vals); err == nil || !strings.Contains(err.Error(), "self.client_device has no value") {
		t.Errorf("missing value: %v", err)
	}
	alone := l.WorkloadByName("alone")
	if alone.Host == nil || alone.Host.Name != "a" || kinds.ShowSelf(alone.Command) != "./client localhost ${self.port} ${self.iterations}" {
		t.Errorf("alone %+v", alone)
	}
	if up := l.WorkloadByName("uptime"); len(up.Metrics) != 1 || up.Metrics[0].Unit != "s" || len(up.Expects) != 1 {
		t.Errorf("exec metrics %+v", up.Metrics)
	}
}

// TestProgramSourceBounds: a source past the file or byte bounds is refused
// at load, saying the bound.
func TestProgramSourceBounds(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files int
		size  int
		want  string
	}{
		{"too many files", MaxSourceFiles + 1, 1, "more than 1000 files"},
		{"too many bytes", 2, MaxSourceBytes/2 + 1, "more than 16777216 bytes (16MiB)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			src := filepath.Join(dir, "src")
			if err := os.Mkdir(src, 0o755); err != nil {
				t.Fatal(err)
			}
			blob := make([]byte, tc.size)
			for i := 0; i < tc.files; i++ {
				if err := os.WriteFile(filepath.Join(src, "f"+strings.Repeat("x", i%3)+string(rune('a'+i%26))+itoa(i)), blob, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			lab := `lab "t" {}
host "a" { address = "192.0.2.1" }
program "p" { source = "src" }
workload "w" {
  tool    = "program"
  program = program.p
  host    = host.a
  command = ["./x"]
}
`
			_, diags := LoadSource(filepath.Join(dir, "lab.hcl"), []byte(lab), dir, LoadOptions{})
			if !diags.HasErrors() || !strings.Contains(diags.Error(), tc.want) {
				t.Errorf("diags = %v, want %q", diags, tc.want)
			}
		})
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
