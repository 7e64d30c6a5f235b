package vm

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

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

// heard wires the machines as Boot does, on real unix datagram sockets (a
// hub for a network of three or more), has every VM send one broadcast
// frame out of its data NIC, and returns what each VM's NIC received: the
// frames a capture on it would see.
func heard(t *testing.T, ms []Machine) [][]string {
	t.Helper()
	links, err := planLinks(ms)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "rlab-vmnet-") // short: sun_path
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	for name, l := range links {
		if len(l.members) < 3 {
			continue
		}
		var paths []string
		for _, i := range l.members {
			paths = append(paths, linkSock(dir, name, i))
		}
		h, err := StartHub(hubSock(dir, name), paths, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.Close() })
	}
	conns := make([]*net.UnixConn, len(ms))
	nics := make([]dataNIC, len(ms))
	for i, m := range ms {
		n, err := dataNICs(m, i, links, dir)
		if err != nil || len(n) != 1 {
			t.Fatalf("%s: NICs %v, %v", m.Name, n, err)
		}
		nics[i] = n[0]
		if conns[i], err = net.ListenUnixgram("unixgram", &net.UnixAddr{Name: nics[i].Local, Net: "unixgram"}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conns[i].Close() })
	}
	for i, m := range ms {
		mac, _ := net.ParseMAC(nics[i].MAC)
		frame := append(append(append(bytes.Repeat([]byte{0xff}, 6), mac...), 0x08, 0x00), m.Name...)
		for len(frame) < 60 {
			frame = append(frame, 0)
		}
		if _, err := conns[i].WriteToUnix(frame, &net.UnixAddr{Name: nics[i].Remote, Net: "unixgram"}); err != nil {
			t.Fatalf("%s sends: %v", m.Name, err)
		}
	}
	// Every NIC listens at once, for a while after the last frame sent
	// (the switch forwards on its own goroutines).
	got := make([][]string, len(ms))
	var wg sync.WaitGroup
	for i := range ms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, maxFrame)
			_ = conns[i].SetReadDeadline(time.Now().Add(time.Second))
			for {
				n, _, err := conns[i].ReadFromUnix(buf)
				if err != nil {
					break
				}
				got[i] = append(got[i], string(bytes.TrimRight(buf[14:n], "\x00")))
			}
			slices.Sort(got[i])
		}()
	}
	wg.Wait()
	return got
}

// TestClassPairsFramesStayInPair: on the sockets the qemu of
// labs/class-vms.hcl would use, each VM's broadcast reaches its pair's
// other VM and no one else, so a capture on one pair sees none of
// another's traffic. On one shared network (through its switch) every VM
// hears all five others, which this test tells apart.
func TestClassPairsFramesStayInPair(t *testing.T) {
	ms, keys := classMachines(t, "../../labs/class-vms.hcl")
	got := heard(t, ms)
	for i, m := range ms {
		var want []string
		for j, o := range ms {
			if j != i && keys[j] == keys[i] {
				want = append(want, o.Name)
			}
		}
		if fmt.Sprint(got[i]) != fmt.Sprint(want) {
			t.Errorf("%s heard %q, want its pair's %q only", m.Name, got[i], want)
		}
	}

	shared := slices.Clone(ms)
	for i := range shared {
		shared[i].Networks = []Network{{Name: "class"}}
	}
	if got := heard(t, shared); len(got[0]) != len(ms)-1 {
		t.Errorf("on one shared network %s heard %q, want all %d others (the bed cannot tell a shared segment from pairs)", ms[0].Name, got[0], len(ms)-1)
	}
}
