package lab

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/zclconf/go-cty/cty"
)

// TestYAMLClassLab: an Ansible-style YAML inventory (a group per student, a
// server and a client host in each) and a YAML student list feed a for_each
// class lab through yamldecode(file(...)), as a saved terraform output does
// through jsondecode; yamlencode's output decodes back to the same value.
func TestYAMLClassLab(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"inventory.yml": `all:
  vars:
    netdev: eth1
  children:
    ana:
      hosts:
        ana-server: { ansible_host: 192.0.2.1 }
        ana-client: { ansible_host: 192.0.2.2 }
    bo:
      hosts:
        bo-server:
          ansible_host: 192.0.2.3
        bo-client:
          ansible_host: 192.0.2.4
`,
		"students.yaml": "# who takes the class this term\nstudents:\n  - ana\n  - bo\n",
		"lab.hcl": `lab "yclass" {}
locals {
  inv      = yamldecode(file("inventory.yml"))
  roster   = toset(yamldecode(file("students.yaml")).students)
  students = { for name in local.roster : name => {
    server = local.inv.all.children[name].hosts["${name}-server"].ansible_host
    client = local.inv.all.children[name].hosts["${name}-client"].ansible_host
  } }
  again = yamldecode(yamlencode(local.students))
}
host "server" {
  for_each = local.students
  address  = each.value.server
}
host "client" {
  for_each = local.again
  address  = each.value.client
}
rxe "server" {
  for_each = local.students
  host     = host.server[each.key]
  netdev   = local.inv.all.vars.netdev
}
rxe "client" {
  for_each = local.students
  host     = host.client[each.key]
  netdev   = local.inv.all.vars.netdev
}
workload "write_bw" {
  for_each = local.students
  tool     = "ib_write_bw"
  server   = rxe.server[each.key]
  client   = rxe.client[each.key]
}
`,
	}
	for n, s := range files {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l, diags := Load([]string{filepath.Join(dir, "lab.hcl")}, LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	var got []string
	for _, h := range l.Hosts {
		got = append(got, h.Name+"="+h.Address)
	}
	want := []string{`server["ana"]=192.0.2.1`, `server["bo"]=192.0.2.3`, `client["ana"]=192.0.2.2`, `client["bo"]=192.0.2.4`}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("hosts (-want +got):\n%s", d)
	}
	var wl []string
	for _, w := range l.Workloads {
		wl = append(wl, w.Name)
	}
	if d := cmp.Diff([]string{`write_bw["ana"]`, `write_bw["bo"]`}, wl); d != "" {
		t.Errorf("workloads (-want +got):\n%s", d)
	}
	if l.Devices[0].Netdev != "eth1" {
		t.Errorf("netdev %q, want the inventory's eth1", l.Devices[0].Netdev)
	}
}

// TestYAMLDecodeBounded: yamldecode refuses, quickly, a document whose
// aliases expand to more values than any inventory has ("billion laughs":
// nine levels of nine), and reports YAML syntax errors as diagnostics.
func TestYAMLDecodeBounded(t *testing.T) {
	bomb := `a: &a ["x","x","x","x","x","x","x","x","x"]` + "\n"
	prev := "a"
	for _, c := range "bcdefghi" {
		n := string(c)
		bomb += n + ": &" + n + " [" + strings.Repeat("*"+prev+",", 8) + "*" + prev + "]\n"
		prev = n
	}
	for _, tc := range []struct {
		name, src, want string
	}{
		{"alias bomb", bomb, "expands to more than"},
		// go-cty-yaml's types cost the square of the depth: 400 KB of
		// nested lists kept validate busy for half an hour.
		{"deep", strings.Repeat("[", 200000) + strings.Repeat("]", 200000) + "\n", "nests deeper than 100 levels"},
		{"deep within yaml.v3's limit", strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + "\n", "nests deeper than 100 levels"},
		{"deep through aliases", "a: &a [[[[[[[[[[x]]]]]]]]]]\n" + deepAliases(12), "nests deeper than 100 levels"},
		{"syntax", "a: [1, 2\n", "yamldecode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "in.yaml"), []byte(tc.src), 0o644); err != nil {
				t.Fatal(err)
			}
			lab := "lab \"y\" {}\nlocals {\n  v = yamldecode(file(\"in.yaml\"))\n}\nhost \"h\" { address = \"192.0.2.1\" }\n"
			if err := os.WriteFile(filepath.Join(dir, "lab.hcl"), []byte(lab), 0o644); err != nil {
				t.Fatal(err)
			}
			t0 := time.Now()
			_, diags := Load([]string{filepath.Join(dir, "lab.hcl")}, LoadOptions{})
			if d := time.Since(t0); d > 5*time.Second {
				t.Errorf("load took %s", d)
			}
			if !diags.HasErrors() || !strings.Contains(diags.Error(), tc.want) {
				t.Errorf("diagnostics %v, want an error with %q", diags, tc.want)
			}
		})
	}
}

// deepAliases nests n more levels of ten lists each on anchor a.
func deepAliases(n int) string {
	out, prev := "", "a"
	for i := range n {
		name := "n" + strings.Repeat("x", i)
		out += name + ": &" + name + " " + strings.Repeat("[", 10) + "*" + prev + strings.Repeat("]", 10) + "\n"
		prev = name
	}
	return out
}

// TestJSONDecodeDepth: jsondecode refuses a document nested past 100
// levels before cty builds its types (9,000 nested lists in 18 KB took
// 23 s and 1.4 GB), and reads brackets inside strings as text.
func TestJSONDecodeDepth(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		ok        bool
	}{
		{"deep", strings.Repeat("[", 9000) + strings.Repeat("]", 9000), false},
		{"objects", strings.Repeat(`{"a":`, 101) + "1" + strings.Repeat("}", 101), false},
		{"at the limit", strings.Repeat("[", 100) + `"]]\"[{"` + strings.Repeat("]", 100), true},
		{"brackets in strings", `["[[[[[[[[[[` + strings.Repeat("[", 200) + `"]`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t0 := time.Now()
			_, err := jsonDecodeFunc.Call([]cty.Value{cty.StringVal(tc.src)})
			if d := time.Since(t0); d > 5*time.Second {
				t.Errorf("took %s", d)
			}
			if tc.ok != (err == nil) || (err != nil && !strings.Contains(err.Error(), "nests deeper than 100 levels")) {
				t.Errorf("err %v, want ok %v", err, tc.ok)
			}
		})
	}
}

// TestManyLocalsLinear: a lab's locals cost what they hold, not the square
// of their number: each local's expression sees the locals it names, and a
// reference is looked up, not searched for (6,000 one-line locals took 39 s
// in validate). Four times the locals allocate about four times as much.
func TestManyLocalsLinear(t *testing.T) {
	alloc := func(n int) uint64 {
		dir := t.TempDir()
		var b strings.Builder
		b.WriteString("lab \"l\" {}\nlocals {\n  l0 = 1\n")
		for i := 1; i < n; i++ {
			fmt.Fprintf(&b, "  l%d = [local.l%d]\n", i, (i-1)/10*10)
		}
		b.WriteString("}\nhost \"h\" { address = \"192.0.2.1\" }\n")
		p := filepath.Join(dir, "lab.hcl")
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		if _, diags := Load([]string{p}, LoadOptions{}); diags.HasErrors() {
			t.Fatal(diags)
		}
		runtime.ReadMemStats(&m1)
		return m1.TotalAlloc - m0.TotalAlloc
	}
	small, big := alloc(1000), alloc(4000)
	if r := float64(big) / float64(small); r > 8 {
		t.Errorf("4000 locals allocate %.1f times what 1000 do (%d vs %d bytes): the square of their number", r, big, small)
	}
}

// FuzzYAMLDecode: whatever the document, yamldecode returns an error or a
// value of at most maxYAMLNodes values (the alias bound holds), and never
// panics.
func FuzzYAMLDecode(f *testing.F) {
	f.Add("students:\n  - ana\n  - bo\n")
	f.Add("all:\n  children:\n    ana:\n      hosts:\n        ana-server: { ansible_host: 192.0.2.1 }\n")
	f.Add("a: &a [1, 2]\nb: &b [*a, *a]\nc: [*b, *b]\n")
	f.Add("base: &base { x: 1 }\nd:\n  <<: *base\n  y: 2\n")
	f.Fuzz(func(t *testing.T, src string) {
		v, err := yamlDecodeFunc.Call([]cty.Value{cty.StringVal(src)})
		if err != nil {
			return
		}
		n := 0
		_ = cty.Walk(v, func(cty.Path, cty.Value) (bool, error) {
			n++
			return n <= maxYAMLNodes+1, nil
		})
		if n > maxYAMLNodes+1 {
			t.Fatalf("decoded %d values, beyond the bound %d", n, maxYAMLNodes)
		}
	})
}
