// Package graph draws a lab's topology: hosts, their netdevs, the RDMA
// devices on them (rxe and siw rlab creates, devices an rdma block names,
// and, from a run's facts, hardware beside them: parent netdev, node and
// system-image GUIDs, port state, link layer, rate, GIDs), the captures, and the workloads between them as edges
// labelled with the tool. It writes Graphviz DOT, and SVG through `dot`.
//
// It reads the lab model and facts only; it must not import the run
// engine, SSH or the agent (internal/archtest checks it).
package graph

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/rlab-dev/rlab/engine/rundir"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/engine/lab"
)

// Graph is the topology, laid out as a tree per host (host → netdev → rxe
// device, capture) plus workload edges between the leaves.
type Graph struct {
	Name      string
	Hosts     []*Host
	Workloads []*Edge
}

// Host is one host of the lab.
type Host struct {
	ID      string // DOT node id
	Name    string // reference form
	Detail  []string
	Netdevs []*Netdev
	Execs   []*Exec
}

// Netdev is a network interface a lab or the facts name.
type Netdev struct {
	ID       string
	Name     string
	Detail   []string
	Devices  []*Device
	Captures []*Capture
}

// Device is an RDMA device on a netdev.
type Device struct {
	ID     string
	Ref    string // the lab's block name, "" when only the facts know it
	Block  string // the lab's block: rxe, siw or rdma
	Device string
	Detail []string
}

func (r *Device) refKind() string {
	if r.Block == "" {
		return "rxe"
	}
	return r.Block
}

// Capture is a packet capture on a netdev.
type Capture struct {
	ID     string
	Name   string
	Detail []string
}

// Exec is a one-host workload.
type Exec struct {
	ID   string
	Name string
	Tool string
}

// Edge is a workload from its client side to its server side.
type Edge struct {
	From, To string // node ids
	Name     string
	Tool     string
	RDMA     bool
}

// FromLab builds the topology of a loaded lab.
func FromLab(l *lab.Lab) *Graph {
	g := &Graph{Name: l.Name}
	hosts := map[*lab.Host]*Host{}
	for i, h := range l.Hosts {
		gh := &Host{ID: fmt.Sprintf("h%d", i), Name: h.Name}
		switch {
		case h.VM != nil:
			gh.Detail = append(gh.Detail, "local VM")
			for j, n := range h.VM.Networks {
				nd := gh.netdev(fmt.Sprintf("eth%d", j+1))
				nd.add(fmt.Sprintf("%s on network %s", n.Address, n.Name))
			}
		case h.Address != "":
			a := h.Address
			if h.User != "" {
				a = h.User + "@" + a
			}
			if h.Port != 0 && h.Port != 22 {
				a += fmt.Sprintf(":%d", h.Port)
			}
			gh.Detail = append(gh.Detail, a)
		}
		if h.Jump != "" {
			gh.Detail = append(gh.Detail, "via "+h.Jump)
		}
		hosts[h] = gh
		g.Hosts = append(g.Hosts, gh)
	}
	devs := map[*lab.Device]*Device{}
	for _, r := range l.Devices {
		gh := hosts[r.Host]
		if gh == nil {
			continue
		}
		netdev := r.Netdev
		if r.Found() {
			// Which netdev a found device sits on only the facts know.
			netdev = "(" + r.Block + ")"
		}
		nd := gh.netdev(netdev)
		x := nd.rxe(r.Device)
		x.Ref, x.Block = r.Name, r.Block
		switch r.Block {
		case "siw":
			x.Detail = append(x.Detail, "siw (soft-iWARP)")
		case "rdma":
			x.Detail = append(x.Detail, fmt.Sprintf("found: port %d; rlab never deletes it", r.Port))
		}
		devs[r] = x
	}
	for _, c := range l.Captures {
		gh := hosts[c.Host]
		if gh == nil {
			continue
		}
		nd := gh.netdev(c.Netdev)
		cp := &Capture{ID: fmt.Sprintf("%s_c%d", nd.ID, len(nd.Captures)), Name: c.Name}
		if c.Filter != "" {
			cp.Detail = append(cp.Detail, c.Filter)
		}
		if len(c.During) > 0 {
			var ws []string
			for _, w := range c.During {
				ws = append(ws, w.Name)
			}
			cp.Detail = append(cp.Detail, "during "+strings.Join(ws, ", "))
		}
		nd.Captures = append(nd.Captures, cp)
	}
	for _, w := range l.Workloads {
		switch {
		case w.ClientDevice != nil && w.ServerDevice != nil && devs[w.ClientDevice] != nil && devs[w.ServerDevice] != nil:
			g.Workloads = append(g.Workloads, &Edge{From: devs[w.ClientDevice].ID, To: devs[w.ServerDevice].ID, Name: w.Name, Tool: w.Tool, RDMA: true})
		case w.ClientHost != nil && w.ServerHost != nil && hosts[w.ClientHost] != nil && hosts[w.ServerHost] != nil:
			g.Workloads = append(g.Workloads, &Edge{From: hosts[w.ClientHost].ID, To: hosts[w.ServerHost].ID, Name: w.Name, Tool: w.Tool})
		case w.Host != nil && hosts[w.Host] != nil:
			gh := hosts[w.Host]
			gh.Execs = append(gh.Execs, &Exec{ID: fmt.Sprintf("%s_x%d", gh.ID, len(gh.Execs)), Name: w.Name, Tool: w.Tool})
		}
	}
	return g
}

func (h *Host) netdev(name string) *Netdev {
	for _, n := range h.Netdevs {
		if n.Name == name {
			return n
		}
	}
	n := &Netdev{ID: fmt.Sprintf("%s_n%d", h.ID, len(h.Netdevs)), Name: name}
	h.Netdevs = append(h.Netdevs, n)
	return n
}

func (n *Netdev) rxe(device string) *Device {
	for _, r := range n.Devices {
		if r.Device == device {
			return r
		}
	}
	r := &Device{ID: fmt.Sprintf("%s_r%d", n.ID, len(n.Devices)), Device: device}
	n.Devices = append(n.Devices, r)
	return r
}

// hostIndex finds a host's netdevs by name and its RDMA devices by device
// name without a scan: AddFacts places every netdev and device a host
// reports, and a host may report 100,000 of them in one facts reply
// (proto.MaxValues), so a scan of the host's nodes per device took
// quadratic time (SECURITY 125: 20,000 devices 1.8 s, 100,000 about 45 s
// per host, in the report every run writes).
type hostIndex struct {
	h       *Host
	netdevs map[string]*Netdev
	devices map[string]*Device // the first of that name, as a scan would find it
	on      map[*Device]*Netdev
}

func indexHost(h *Host) *hostIndex {
	x := &hostIndex{h: h, netdevs: map[string]*Netdev{}, devices: map[string]*Device{}, on: map[*Device]*Netdev{}}
	for _, n := range h.Netdevs {
		if x.netdevs[n.Name] == nil {
			x.netdevs[n.Name] = n
		}
		for _, r := range n.Devices {
			if x.devices[r.Device] == nil {
				x.devices[r.Device] = r
			}
			x.on[r] = n
		}
	}
	return x
}

// netdev is h.netdev(name) without its scan.
func (x *hostIndex) netdev(name string) *Netdev {
	if n := x.netdevs[name]; n != nil {
		return n
	}
	n := &Netdev{ID: fmt.Sprintf("%s_n%d", x.h.ID, len(x.h.Netdevs)), Name: name}
	x.h.Netdevs = append(x.h.Netdevs, n)
	x.netdevs[name] = n
	return n
}

// moveDevice is the node of an RDMA device the facts report on netdev: the
// lab's node when the lab names it (moved there from the placeholder an
// rdma block is drawn under until the facts say where it is), else a new
// one.
func (x *hostIndex) moveDevice(device, netdev string) *Device {
	if r := x.devices[device]; r != nil {
		n := x.on[r]
		if strings.HasPrefix(n.Name, "(") && n.Name != netdev {
			i := slices.Index(n.Devices, r) // a placeholder holds the lab's devices only
			n.Devices = append(n.Devices[:i:i], n.Devices[i+1:]...)
			to := x.netdev(netdev)
			to.Devices = append(to.Devices, r)
			x.on[r] = to
		}
		return r
	}
	to := x.netdev(netdev)
	r := &Device{ID: fmt.Sprintf("%s_r%d", to.ID, len(to.Devices)), Device: device} // to.rxe(device) without its scan: none of that name here
	to.Devices = append(to.Devices, r)
	x.devices[device], x.on[r] = r, to
	return r
}

// rdmaNetdev is the netdev a device sits on as the facts say: rxe's parent,
// else siw's or the hardware's netdev (sysfs device/net).
func rdmaNetdev(r proto.RDMADevice) string {
	if r.Parent != "" {
		return r.Parent
	}
	if len(r.Netdevs) > 0 {
		return r.Netdevs[0]
	}
	return ""
}

func (n *Netdev) mentions(s string) bool {
	for _, d := range n.Detail {
		if strings.Contains(d, s) {
			return true
		}
	}
	return false
}

func (n *Netdev) add(s string) {
	for _, d := range n.Detail {
		if d == s {
			return
		}
	}
	n.Detail = append(n.Detail, s)
}

// AddFacts annotates a host with what its agent reported: OS and kernel,
// each netdev's addresses and MTU, and every RDMA device with its parent
// netdev, node GUID, port state, MTU and RoCE GIDs. RDMA devices the lab
// did not name (present already, or hardware) are added too.
func (g *Graph) AddFacts(host string, f *proto.Facts) {
	var h *Host
	for _, x := range g.Hosts {
		if x.Name == host {
			h = x
		}
	}
	if h == nil || f == nil {
		return
	}
	if f.Hostname != "" {
		h.Detail = append(h.Detail, "hostname "+f.Hostname)
	}
	if sys := strings.TrimSpace(f.OS + " " + f.Kernel); sys != "" {
		h.Detail = append(h.Detail, sys)
	}
	// Netdevs the lab uses get their facts; so do the parents of RDMA
	// devices. Others (lo, the management NIC) stay out of the picture.
	want := map[string]bool{}
	for _, n := range h.Netdevs {
		want[n.Name] = true
	}
	for _, r := range f.RDMA {
		if n := rdmaNetdev(r); n != "" {
			want[n] = true
		}
	}
	ix := indexHost(h)
	seen := map[string]bool{} // a name reported twice is a lie: its first report counts
	for _, n := range f.Netdevs {
		if !want[n.Name] || seen[n.Name] {
			continue
		}
		seen[n.Name] = true
		nd := ix.netdev(n.Name)
		var fresh []string // addresses the lab did not already show
		for _, a := range n.Addrs {
			if !nd.mentions(a) {
				fresh = append(fresh, a)
			}
		}
		if len(fresh) > 0 {
			nd.add(strings.Join(fresh, " "))
		}
		nd.add(fmt.Sprintf("MTU %d, %s", n.MTU, n.State))
	}
	clear(seen)
	for _, r := range f.RDMA {
		if seen[r.Name] {
			continue
		}
		seen[r.Name] = true
		parent := rdmaNetdev(r)
		if parent == "" {
			parent = "(" + r.Driver + ")"
		}
		x := ix.moveDevice(r.Name, parent)
		driver := r.Driver
		if r.Driver == "hw" && r.NodeType == "RNIC" {
			driver = "hw, iWARP"
		}
		if !(r.Driver == "siw" && x.Block == "siw") { // the lab said it already
			x.Detail = append(x.Detail, driver)
		}
		if r.NodeGUID != "" {
			x.Detail = append(x.Detail, "node GUID "+r.NodeGUID)
		}
		if r.SysImageGUID != "" && r.SysImageGUID != r.NodeGUID {
			x.Detail = append(x.Detail, "sys image GUID "+r.SysImageGUID)
		}
		for _, p := range r.Ports {
			switch {
			case r.Driver == "rxe":
				x.Detail = append(x.Detail, fmt.Sprintf("port %d %s, MTU %d/%d", p.Port, p.State, p.ActiveMTU, p.MaxMTU))
			default:
				// Hardware and siw: sysfs has no MTU; the link layer,
				// rate and (InfiniBand) LID say what the port is.
				line := fmt.Sprintf("port %d %s", p.Port, p.State)
				for _, s := range []string{p.LinkLayer, p.Rate} {
					if s != "" {
						line += ", " + s
					}
				}
				if p.LID != 0 {
					line += fmt.Sprintf(", LID %d", p.LID)
				}
				x.Detail = append(x.Detail, line)
			}
			for _, gid := range p.GIDs {
				if gid.Type == "RoCE v2" {
					x.Detail = append(x.Detail, fmt.Sprintf("GID[%d] %s", gid.Index, gid.GID))
				}
			}
		}
	}
	// Placeholders an rdma block was drawn under until the facts placed it.
	kept := h.Netdevs[:0]
	for _, n := range h.Netdevs {
		if !strings.HasPrefix(n.Name, "(") || len(n.Devices) > 0 || len(n.Captures) > 0 {
			kept = append(kept, n)
		}
	}
	h.Netdevs = kept
}

// IsRunDir tells a run directory (results.json or hosts/ beside lab/) from
// a lab file or folder.
func IsRunDir(p string) bool {
	if _, err := os.Stat(filepath.Join(p, "results.json")); err == nil {
		return true
	}
	st1, err1 := os.Stat(filepath.Join(p, "lab"))
	st2, err2 := os.Stat(filepath.Join(p, "hosts"))
	return err1 == nil && err2 == nil && st1.IsDir() && st2.IsDir()
}

// Load builds the graph of a lab file or folder, or of a run directory:
// then the lab is the copy under lab/ and every hosts/<slug>/facts.json
// adds what the hosts reported. Sensitive variables' values are redacted.
func Load(p string, opts lab.LoadOptions) (*Graph, hcl.Diagnostics, error) {
	g, _, diags, err := LoadLab(p, opts)
	return g, diags, err
}

// LoadLab is Load that also returns the lab it loaded (nil if it did not
// load), whose sensitive values mask what `rlab graph` prints (SECURITY
// 210) and whose sources its diagnostics quote.
func LoadLab(p string, opts lab.LoadOptions) (*Graph, *lab.Lab, hcl.Diagnostics, error) {
	run := IsRunDir(p)
	src := p
	if run {
		// A run directory may be someone else's (SECURITY 115): its lab/
		// is read as the report reads it, each file regular and inside
		// it, never through a symlink out (a lab/zz.hcl linked to the
		// reader's ~/.netrc printed its first line in the diagnostic),
		// and lab/ itself a folder of the run directory, not a link.
		src = filepath.Join(p, "lab")
		if st, err := os.Lstat(src); err == nil && !st.IsDir() {
			return nil, nil, nil, fmt.Errorf("load lab %s: %w", src, rundir.ErrOutside)
		}
		opts.Confined = true
		// Nor does it get the reader's RLAB_VAR_* environment, kept for
		// their own labs (SECURITY 122): a -var given for this graph
		// still counts.
		opts.Env = nil
	}
	l, diags := lab.LoadOne(src, opts)
	diags = lab.RedactDiags(l, diags) // as validate and plan print theirs
	if l == nil || diags.HasErrors() {
		return nil, l, diags, fmt.Errorf("load lab %s: the lab has errors", src)
	}
	g := FromLab(l)
	if run {
		if err := g.AddRunFacts(l, p); err != nil {
			return nil, l, diags, err
		}
	}
	g.Redact(lab.Redactor(l.Sensitive))
	return g, l, diags, nil
}

// AddRunFacts adds the facts a run recorded for each host of l under
// runDir/hosts/<slug>/facts.json; hosts without one are left as the lab
// describes them.
func (g *Graph) AddRunFacts(l *lab.Lab, runDir string) error {
	// One facts.json under many hosts' names (hard links in a received
	// run directory) is read once, as the report reads it (SECURITY 119).
	seen := rundir.Files{}
	for _, h := range l.Hosts {
		file := filepath.Join(runDir, "hosts", h.Slug, "facts.json")
		if !seen.First(file) {
			continue
		}
		b, err := rundir.ReadFile(runDir, filepath.Join("hosts", h.Slug, "facts.json"))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("read facts of host %q: %w", h.Name, err)
		}
		var f proto.Facts
		err = proto.CheckValues(b, proto.MaxValues)
		if err == nil {
			err = json.Unmarshal(b, &f)
		}
		if err != nil {
			return fmt.Errorf("read facts of host %q from %s: %w", h.Name, file, err)
		}
		g.AddFacts(h.Name, &f)
	}
	return nil
}

// Redact replaces every sensitive value in g's labels (r from the lab's
// sensitive variables), so a drawing never shows a secret.
func (g *Graph) Redact(r *lab.Replacer) {
	all := func(ss []string) {
		for i := range ss {
			ss[i] = r.Replace(ss[i])
		}
	}
	g.Name = r.Replace(g.Name)
	for _, h := range g.Hosts {
		h.Name = r.Replace(h.Name)
		all(h.Detail)
		for _, n := range h.Netdevs {
			n.Name = r.Replace(n.Name)
			all(n.Detail)
			for _, x := range n.Devices {
				x.Ref, x.Device = r.Replace(x.Ref), r.Replace(x.Device)
				all(x.Detail)
			}
			for _, c := range n.Captures {
				c.Name = r.Replace(c.Name)
				all(c.Detail)
			}
		}
		for _, x := range h.Execs {
			x.Name, x.Tool = r.Replace(x.Name), r.Replace(x.Tool)
		}
	}
	for _, e := range g.Workloads {
		e.Name, e.Tool = r.Replace(e.Name), r.Replace(e.Tool)
	}
}
