package lab

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestGroups: a group's workloads resolve from references, a whole for_each
// workload stands for all its instances, a group with for_each gives one
// group per key, and GroupOf finds a workload's group.
func TestGroups(t *testing.T) {
	src := `
lab "g" {}
locals { students = toset(["ana", "bo"]) }
host "s" {
  for_each = local.students
  address  = "192.0.2.1"
}
host "c" {
  count   = 2
  address = "192.0.2.2"
}
workload "in" {
  for_each = { for p in setproduct(local.students, ["0", "1"]) : "${p[0]}-${p[1]}" => p }
  tool     = "tcp"
  server   = host.s[each.value[0]]
  client   = host.c[tonumber(each.value[1])]
}
workload "ring" {
  count  = 2
  tool   = "tcp"
  server = host.c[count.index]
  client = host.c[1 - count.index]
}
workload "alone" {
  tool   = "tcp"
  server = host.c[0]
  client = host.c[1]
}
group "incast" {
  for_each  = local.students
  workloads = [workload.in["${each.key}-0"], workload.in["${each.key}-1"]]
}
group "ring" {
  workloads = [workload.ring]
}
workload "x" {
  count  = 2
  tool   = "tcp"
  server = host.s["ana"]
  client = host.c[count.index]
}
group "xs" {
  count     = 1
  workloads = [workload.x[0], workload.x[1]]
}
`
	p := filepath.Join(t.TempDir(), "lab.hcl")
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	l, diags := Load([]string{p}, LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	got := map[string][]string{}
	for _, g := range l.Groups {
		for _, w := range g.Workloads {
			got[g.Name] = append(got[g.Name], w.Name)
			if l.GroupOf(w) != g {
				t.Errorf("GroupOf(%s) = %v, want %s", w.Name, l.GroupOf(w), g)
			}
		}
	}
	want := map[string][]string{
		`incast["ana"]`: {`in["ana-0"]`, `in["ana-1"]`},
		`incast["bo"]`:  {`in["bo-0"]`, `in["bo-1"]`},
		"ring":          {"ring[0]", "ring[1]"},
		"xs[0]":         {"x[0]", "x[1]"},
	}
	for k, v := range want {
		if !slices.Equal(got[k], v) {
			t.Errorf("group %s: %v, want %v", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("groups %v, want %v", got, want)
	}
	if g := l.GroupOf(l.WorkloadByName("alone")); g != nil {
		t.Errorf("alone is in %s, want no group", g)
	}
}
