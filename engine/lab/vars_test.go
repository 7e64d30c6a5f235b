package lab

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestVariableSources: default < RLAB_VAR_name < -var-file < -var, and the
// errors for missing and undeclared values.
func TestVariableSources(t *testing.T) {
	dir := t.TempDir()
	hclFile := filepath.Join(dir, "a.rlabvars")
	jsonFile := filepath.Join(dir, "b.json")
	badFile := filepath.Join(dir, "c.rlabvars")
	for p, s := range map[string]string{
		hclFile:  "server = \"192.0.2.50\"\n",
		jsonFile: `{"server": "192.0.2.60"}`,
		badFile:  "servr = \"x\"\n",
	} {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	folder := filepath.Join(corpus, "folder")
	tests := []struct {
		name     string
		opts     LoadOptions
		want     string // server address
		wantDiag []string
	}{
		{"missing", LoadOptions{}, "", []string{"No value for required variable"}},
		{"env", LoadOptions{Env: []string{"RLAB_VAR_server=192.0.2.40", "RLAB_VAR_other=1"}}, "192.0.2.40", nil},
		{"var-file hcl", LoadOptions{VarFiles: []string{hclFile}, Env: []string{"RLAB_VAR_server=192.0.2.40"}}, "192.0.2.50", nil},
		{"var-file json", LoadOptions{VarFiles: []string{hclFile, jsonFile}}, "192.0.2.60", nil},
		{"-var wins", LoadOptions{Vars: map[string]string{"server": "192.0.2.70"}, VarFiles: []string{jsonFile}}, "192.0.2.70", nil},
		{"undeclared -var", LoadOptions{Vars: map[string]string{"server": "192.0.2.70", "sever": "x"}}, "192.0.2.70", []string{"Value for undeclared variable"}},
		{"undeclared in file", LoadOptions{VarFiles: []string{badFile}, Vars: map[string]string{"server": "h"}}, "h", []string{"Value for undeclared variable"}},
		{"missing file", LoadOptions{VarFiles: []string{filepath.Join(dir, "nope")}, Vars: map[string]string{"server": "h"}}, "h", []string{"Cannot read variable file"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, diags := Load([]string{folder}, tt.opts)
			var sums []string
			for _, d := range diags {
				sums = append(sums, d.Summary)
			}
			if d := cmp.Diff(tt.wantDiag, sums); d != "" {
				t.Errorf("diagnostics (-want +got):\n%s", d)
			}
			if h := l.HostByName("server"); h.Address != tt.want {
				t.Errorf("server address = %q, want %q", h.Address, tt.want)
			}
		})
	}
}

// TestTypedVars: -var strings are parsed per the variable's type.
func TestTypedVars(t *testing.T) {
	f := filepath.Join(corpus, "valid", "vars_locals_funcs.hcl")
	tests := []struct {
		name      string
		vars      map[string]string
		wantHosts int
		wantDiag  string
	}{
		{"default", nil, 6, ""},
		{"number", map[string]string{"pairs": "5"}, 10, ""},
		{"not a number", map[string]string{"pairs": "five"}, 0, "Invalid value for variable"},
		{"not a number, an identifier", map[string]string{"pairs": "abc"}, 0, "Invalid value for variable"},
		{"validation", map[string]string{"pairs": "99"}, 198, "Invalid value for variable"},
		{"object", map[string]string{"opts": `{ sizes = ["2KiB"], iters = 3 }`}, 6, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, diags := Load([]string{f}, LoadOptions{Vars: tt.vars})
			var sum string
			if len(diags) > 0 {
				sum = diags[0].Summary
			}
			if sum != tt.wantDiag {
				t.Fatalf("first diagnostic %q, want %q\n%s", sum, tt.wantDiag, diagText(l, diags))
			}
			// A bad value is one clear diagnostic: what it is not, and no
			// second "No value for required variable" for the same -var.
			if tt.wantDiag != "" {
				if errs := diags.Errs(); len(errs) != 1 {
					t.Errorf("%d errors, want 1:\n%s", len(errs), diagText(l, diags))
				}
				if d := diags[0].Detail; strings.HasPrefix(tt.name, "not a number") && !strings.Contains(d, "is not a number") || strings.Contains(d, "Variables may not be used") {
					t.Errorf("detail %q, want it to say the value is not a number", d)
				}
			}
			if tt.wantHosts > 0 && len(l.Hosts) != tt.wantHosts {
				t.Errorf("%d hosts, want %d", len(l.Hosts), tt.wantHosts)
			}
		})
	}
}

// TestExpansion checks names, slugs, keys and references after count and
// for_each.
func TestExpansion(t *testing.T) {
	l, diags := Load([]string{filepath.Join(corpus, "valid", "vars_locals_funcs.hcl")}, LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diagText(l, diags))
	}
	type hv struct {
		Name, Slug, Key, Address, User string
		Port                           int
	}
	var hosts []hv
	for _, h := range l.Hosts[:2] {
		hosts = append(hosts, hv{h.Name, h.Slug, h.Key, h.Address, h.User, h.Port})
	}
	want := []hv{
		{"server[0]", "server.0", "0", "10.30.0.10", "pair-3", 22},
		{"server[1]", "server.1", "1", "10.30.0.11", "pair-3", 22},
	}
	if d := cmp.Diff(want, hosts); d != "" {
		t.Errorf("hosts (-want +got):\n%s", d)
	}
	if c := l.HostByName("client[2]"); c == nil || c.Port != 2202 || c.Address != "10.30.0.102" {
		t.Errorf("client[2] = %+v", c)
	}
	r := l.DeviceByName("server[1]")
	if r == nil || r.Device != "rxe1" || r.Host != l.HostByName("server[1]") || !r.Keep {
		t.Errorf("rxe server[1] = %+v", r)
	}
	if c := l.DeviceByName("client[0]"); c == nil || c.Device != "rxe_eth1" {
		t.Errorf("rxe client[0] = %+v", c)
	}
	w := l.WorkloadByName("bw[2]")
	if w == nil || w.ServerHost != l.HostByName("server[2]") || w.ClientDevice != l.DeviceByName("client[2]") ||
		w.QPs != 4 || w.Transport != "UD" || w.Timeout.Seconds() != 90 || !cmp.Equal(w.Sizes, []int64{1024, 4096}) {
		t.Errorf("workload bw[2] = %+v", w)
	}
	if !cmp.Equal(l.Sensitive, []string{"s3cr3t-token"}) {
		t.Errorf("sensitive = %q", l.Sensitive)
	}
	if l.Description != "6 hosts on 10.30.0.0/16" {
		t.Errorf("description = %q", l.Description)
	}

	l, diags = Load([]string{filepath.Join(corpus, "valid", "for_each_map.hcl")}, LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diagText(l, diags))
	}
	red := l.DeviceByName(`server["red"]`)
	if red == nil || red.Slug != "server.red" || red.Host.Address != "192.0.2.1" {
		t.Errorf("rxe server[red] = %+v", red)
	}
	if c := l.CaptureByName(`all_lat["blue"]`); c == nil || c.Netdev != "ens4" || len(c.During) != 2 || c.During[1].Tool != "tcp" {
		t.Errorf("capture all_lat[blue] = %+v", c)
	}
	if w := l.WorkloadByName(`tcp["red"]`); w == nil || w.Bytes != DefaultTCPBytes {
		t.Errorf("tcp default bytes: %+v", w)
	}
}

func TestUnits(t *testing.T) {
	sizes := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"4096", 4096, true}, {"64KiB", 65536, true}, {"1GiB", 1 << 30, true}, {"10MB", 10e6, true},
		{"1TiB", 1 << 40, true}, {"8B", 8, true}, {"64kib", 0, false}, {"64 KiB", 0, false},
		{"1.5GiB", 0, false}, {"-1", 0, false}, {"KiB", 0, false}, {"", 0, false}, {"99999999999TiB", 0, false},
	}
	for _, s := range sizes {
		n, err := ParseSize(s.in)
		if (err == nil) != s.ok || n != s.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d ok=%v", s.in, n, err, s.want, s.ok)
		}
	}
	durs := []struct {
		in string
		ok bool
	}{{"30s", true}, {"1h30m", true}, {"500ms", true}, {"30", false}, {"", false}, {"5 minutes", false}}
	for _, d := range durs {
		if _, err := ParseDuration(d.in); (err == nil) != d.ok {
			t.Errorf("ParseDuration(%q) err = %v, want ok=%v", d.in, err, d.ok)
		}
	}
}

// TestUnitsOfPaths: the example folder is one lab per file and the corpus
// folder one lab of three files. The expected files are written out here,
// not globbed from the folders Units reads: a file Units drops or invents
// fails the test (a new example lab is added here too, as in labs/).
func TestUnitsOfPaths(t *testing.T) {
	examples := []string{"class-vms.hcl", "class.hcl", "cloud-bastion.hcl", "found.hcl", "incast.hcl", "iwarp.hcl", "lossy.hcl", "netns-tcp.hcl",
		"nightly.hcl", "operations-tour.hcl", "quickstart.hcl", "ring.hcl", "transports.hcl", "walkthrough.hcl"}
	oneEach := make([][]string, len(examples))
	for i, e := range examples {
		oneEach[i] = []string{e}
	}
	tests := []struct {
		path string
		want [][]string // base names of each unit's files
	}{
		{"../../labs", oneEach},                                          // a folder of labs: one per file
		{corpus + "/folder", [][]string{{"folder"}}},                     // one lab in three files: the folder, loaded whole
		{"../../labs/quickstart.hcl", [][]string{{"quickstart.hcl"}}},    // a file
		{corpus + "/valid/ssh_forms.hcl", [][]string{{"ssh_forms.hcl"}}}, // a file
	}
	for _, tt := range tests {
		units, diags := Split(tt.path)
		if diags.HasErrors() {
			t.Errorf("Units(%s): %v", tt.path, diags)
			continue
		}
		var got [][]string
		for _, u := range units {
			var names []string
			for _, f := range u {
				names = append(names, filepath.Base(f))
			}
			got = append(got, names)
		}
		if d := cmp.Diff(tt.want, got); d != "" {
			t.Errorf("Units(%s) (-want +got):\n%s", tt.path, d)
		}
	}
}

// TestVarFileNestingBounded: the JSON and HCL parsers recurse once per
// bracket, so a -var-file of 2 million "[" (4 MB, under the file bound)
// overflowed the stack: a fatal error (not a diagnostic) after 1-2 GB.
// A -var-file or -var nesting past MaxNesting is refused like a lab file.
func TestVarFileNestingBounded(t *testing.T) {
	deep := strings.Repeat("[", 2_000_000) + strings.Repeat("]", 2_000_000)
	for _, c := range []struct{ name, file, flag string }{
		{name: "json var-file", file: "v.json", flag: ""},
		{name: "hcl var-file", file: "v.tfvars"},
		{name: "var flag", flag: strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000)},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "lab.hcl")
			if err := os.WriteFile(p, []byte("variable \"v\" {\n  type = list(any)\n  default = []\n}\nhost \"a\" {\n  address = \"192.0.2.1\"\n}\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			var opts LoadOptions
			switch {
			case c.file == "v.json":
				vf := filepath.Join(dir, c.file)
				if err := os.WriteFile(vf, []byte("{\"v\": "+deep+"}"), 0o644); err != nil {
					t.Fatal(err)
				}
				opts.VarFiles = []string{vf}
			case c.file != "":
				vf := filepath.Join(dir, c.file)
				if err := os.WriteFile(vf, []byte("v = "+deep+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				opts.VarFiles = []string{vf}
			default:
				opts.Vars = map[string]string{"v": c.flag}
			}
			_, diags := Load([]string{p}, opts)
			if !strings.Contains(diagLines(diags), "Nesting too deep") {
				t.Errorf("not refused as too deep:\n%s", diagLines(diags))
			}
		})
	}
}
