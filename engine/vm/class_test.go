package vm

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/engine/lab"
)

// classMachines loads a lab and makes its VM hosts the Machines Boot gets
// (as engine/run's LocalVMs does), with each host's for_each key beside it.
func classMachines(t *testing.T, path string) ([]Machine, []string) {
	t.Helper()
	l, diags := lab.Load([]string{path}, lab.LoadOptions{})
	if diags.HasErrors() {
		t.Fatalf("load %s: %s", path, diags.Error())
	}
	var ms []Machine
	var keys []string
	for _, h := range l.Hosts {
		if h.VM == nil {
			continue
		}
		m := Machine{Name: h.Name, Slug: h.Slug, MemoryBytes: h.VM.MemoryBytes, CPUs: h.VM.CPUs}
		for _, n := range h.VM.Networks {
			m.Networks = append(m.Networks, Network{Name: n.Name, Address: n.Address, MTU: n.MTU})
		}
		ms = append(ms, m)
		keys = append(keys, h.Key)
	}
	return ms, keys
}

// crossPair wires the machines as Boot does and returns every place a VM
// could reach one of another student's: a link with members of two keys, a
// VM whose qemu argv names a socket of another key's VM or a switch. None is
// what "each pair is its own segment" means.
func crossPair(t *testing.T, ms []Machine, keys []string) []string {
	t.Helper()
	links, err := planLinks(ms)
	if err != nil {
		t.Fatal(err)
	}
	const sockDir = "/run/rlab-test"
	var bad []string
	for name, l := range links {
		for _, i := range l.members {
			if keys[i] != keys[l.members[0]] {
				bad = append(bad, fmt.Sprintf("network %s joins %s and %s", name, ms[l.members[0]].Name, ms[i].Name))
			}
		}
	}
	owner := map[string]string{} // socket -> the key of the VM that binds it
	nics := make([][]dataNIC, len(ms))
	for i, m := range ms {
		if nics[i], err = dataNICs(m, i, links, sockDir); err != nil {
			t.Fatal(err)
		}
		for _, n := range nics[i] {
			owner[n.Local] = keys[i]
		}
	}
	for i, m := range ms {
		named := map[string]bool{} // every path= value in its argv
		for _, n := range nics[i] {
			for _, a := range n.Args {
				for _, kv := range strings.Split(a, ",") {
					if _, v, ok := strings.Cut(kv, "path="); ok {
						named[v] = true
					}
				}
			}
		}
		for _, n := range nics[i] {
			if n.Hub {
				bad = append(bad, fmt.Sprintf("%s sends %s through a switch", m.Name, n.Network))
			} else if owner[n.Remote] != keys[i] {
				bad = append(bad, fmt.Sprintf("%s sends %s to %s, not its pair's", m.Name, n.Network, n.Remote))
			}
		}
		for sock := range named {
			if owner[sock] != keys[i] {
				bad = append(bad, fmt.Sprintf("%s's qemu argv names %s (of %q)", m.Name, sock, owner[sock]))
			}
		}
	}
	slices.Sort(bad)
	return bad
}

// TestClassPairsOwnLinks: labs/class-vms.hcl gives each student's server
// and client one data NIC on the student's own network, a direct pair of
// sockets (no switch), and no VM's qemu argv names another pair's socket.
// The same class on one shared network (as before network names could
// come from each.key) fails the same check.
func TestClassPairsOwnLinks(t *testing.T) {
	ms, keys := classMachines(t, "../../labs/class-vms.hcl")
	if len(ms) != 6 {
		t.Fatalf("class-vms has %d VMs, want 6 (3 students x a pair)", len(ms))
	}
	links, err := planLinks(ms)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for name, l := range links {
		for _, i := range l.members {
			got[name] = append(got[name], ms[i].Name)
		}
	}
	want := map[string][]string{
		"pair-ana": {`server["ana"]`, `client["ana"]`},
		"pair-bo":  {`server["bo"]`, `client["bo"]`},
		"pair-cy":  {`server["cy"]`, `client["cy"]`},
	}
	for name := range want {
		slices.Sort(want[name])
		slices.Sort(got[name])
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("links = %v, want %v", got, want)
	}
	for i, m := range ms {
		nics, err := dataNICs(m, i, links, "/run/rlab-test")
		if err != nil {
			t.Fatal(err)
		}
		if len(nics) != 1 || nics[0].Network != "pair-"+keys[i] {
			t.Errorf("%s: NICs %+v, want one on pair-%s", m.Name, nics, keys[i])
		}
	}
	if bad := crossPair(t, ms, keys); len(bad) > 0 {
		t.Errorf("pairs reach each other:\n%s", strings.Join(bad, "\n"))
	}

	shared := slices.Clone(ms)
	for i := range shared {
		shared[i].Networks = []Network{{Name: "class", Address: ms[i].Networks[0].Address}}
	}
	if bad := crossPair(t, shared, keys); len(bad) == 0 {
		t.Error("one shared network passed the check: it cannot tell pairs apart")
	}
}
