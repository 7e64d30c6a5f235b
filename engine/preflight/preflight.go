// Package preflight finds, before anything runs, every reason a lab cannot
// run on its hosts: a pure function from the lab model and each host's facts
// (as the agent reported them) to a list of problems, each naming the host,
// what is wrong and how to fix it. It does no I/O; it must not import
// engine/sshx or engine/remote (internal/archtest checks it).
package preflight

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/engine/lab"
	hostneeds "github.com/rlab-dev/rlab/engine/provision/needs"
	"github.com/rlab-dev/rlab/kinds"
)

// Problem is one thing that would make the lab fail on a host.
type Problem struct {
	Host string `json:"host"`
	Code string `json:"code"` // one of the Code* constants
	What string `json:"what"`
	Fix  string `json:"fix"`
}

func (p Problem) String() string { return fmt.Sprintf("host %q: %s: %s", p.Host, p.What, p.Fix) }

const (
	CodeNoRXE       = "no_rxe"
	CodeMissingTool = "missing_tool"
	CodeNoNetdev    = "no_netdev"
	CodeNoIPv4      = "no_ipv4"
	CodeNetdevDown  = "netdev_down"
	CodeMemlock     = "memlock"
	CodeDisk        = "disk"
	CodeNeedsRoot   = "needs_root"
	CodeNoSIW       = "no_siw"
	// An rdma block's device: missing, its port missing or not ACTIVE, no
	// usable GID (RoCE) or LID (InfiniBand), or asked what iWARP cannot do.
	CodeNoDevice = "no_device"
	CodePortDown = "port_down"
	CodeNoGID    = "no_gid"
	CodeIWARP    = "iwarp"
	CodeNoNetem  = "no_netem"
	// A workload's args ask for an option the host's program lacks
	// (kinds.Tool.ProbedFlags: perftest's --write_with_imm).
	CodeMissingFlag = "missing_flag"
	// A program block's package (its packages for the host's distribution
	// family) is not installed.
	CodeMissingPackage = "missing_package"
)

// installCmd is the command that installs pkgs with family fam's manager.
var installCmd = map[string]string{"debian": "apt-get install", "rhel": "dnf install", "suse": "zypper install"}

// Thresholds.
const (
	// MinMemlock is the RLIMIT_MEMLOCK below which perftest fails to register
	// its buffers when not root (CAP_IPC_LOCK lifts the limit).
	MinMemlock = 64 << 20
	// DiskMargin is free disk wanted beyond the captures' budgets (logs,
	// tool outputs).
	DiskMargin = 64 << 20
)

// capturer is the program a capture runs.
const capturer = "tcpdump"

// need is what one host must provide for the lab.
type need struct {
	rxe      []*lab.Device
	tools    map[string]bool
	netdevs  map[string]string // netdev -> what uses it ("rxe \"server\"")
	ipv4     map[string]string // netdevs that need an IPv4 address (RoCEv2 GID)
	rdma     bool              // runs RDMA workloads (memlock)
	captures int64             // bytes of capture budgets
	root     []string          // what needs root
	impairs  []string          // impair blocks on the host (netem)
	found    []*lab.Device     // rdma blocks (devices rlab did not create)
	// progTool is the program the tool of program workloads needs (the
	// compiler), progPkgs their program blocks' packages by family: named
	// with it when it is missing, as one install command.
	progTool string
	progPkgs map[string][]string
	uses     []foundUse // workloads on them
	flags    []flagUse  // options some versions of a tool lack
}

// flagUse is a workload whose args ask for a tool's probed option.
type flagUse struct {
	w    *lab.Workload
	tool string
	flag kinds.ProbedFlag
}

type foundUse struct {
	r *lab.Device
	w *lab.Workload
}

func appendUnique(rs []*lab.Device, r *lab.Device) []*lab.Device {
	for _, x := range rs {
		if x == r {
			return rs
		}
	}
	return append(rs, r)
}

func needs(l *lab.Lab) (map[*lab.Host]*need, []*lab.Host) {
	m := map[*lab.Host]*need{}
	var order []*lab.Host
	get := func(h *lab.Host) *need {
		if n, ok := m[h]; ok {
			return n
		}
		n := &need{tools: map[string]bool{}, netdevs: map[string]string{}, ipv4: map[string]string{}}
		m[h] = n
		order = append(order, h)
		return n
	}
	for _, h := range l.Hosts {
		get(h)
	}
	for _, r := range l.Devices {
		n := get(r.Host)
		n.rxe = append(n.rxe, r)
		if r.Found() {
			continue // checked against the host's devices (checkFound)
		}
		n.netdevs[r.Netdev] = fmt.Sprintf("%s %q", r.Block, r.Name)
		n.ipv4[r.Netdev] = fmt.Sprintf("%s %q", r.Block, r.Name)
		n.root = append(n.root, fmt.Sprintf("creating %s %q", r.Block, r.Device))
	}
	for _, w := range l.Workloads {
		for _, r := range []*lab.Device{w.ServerDevice, w.ClientDevice} {
			if r != nil && r.Found() {
				n := get(r.Host)
				n.found = appendUnique(n.found, r)
				n.uses = append(n.uses, foundUse{r, w})
			}
		}
	}
	for _, c := range l.Captures {
		n := get(c.Host)
		n.tools[capturer] = true
		// "any" is tcpdump's pseudo-device for every interface, not a netdev.
		if _, ok := n.netdevs[c.Netdev]; !ok && c.Netdev != "any" {
			n.netdevs[c.Netdev] = fmt.Sprintf("capture %q", c.Name)
		}
		n.captures += c.MaxBytes
		n.root = append(n.root, fmt.Sprintf("capture %q (tcpdump)", c.Name))
	}
	for _, im := range l.Impairs {
		n := get(im.Host)
		if _, ok := n.netdevs[im.Netdev]; !ok {
			n.netdevs[im.Netdev] = fmt.Sprintf("impair %q", im.Name)
		}
		n.impairs = append(n.impairs, im.Name)
		n.root = append(n.root, fmt.Sprintf("impair %q (netem)", im.Name))
	}
	for _, w := range l.Workloads {
		t, _ := lab.LookupTool(w.Tool)
		for _, h := range []*lab.Host{w.ServerHost, w.ClientHost, w.Host} {
			if h == nil {
				continue
			}
			n := get(h)
			if t.Program != nil {
				n.tools[t.Program.Name] = true
			}
			if w.Program != nil && t.Program != nil {
				n.progTool = t.Program.Name
				if n.progPkgs == nil {
					n.progPkgs = map[string][]string{}
				}
				for fam, ps := range w.Program.Packages {
					for _, p := range ps {
						if !slices.Contains(n.progPkgs[fam], p) {
							n.progPkgs[fam] = append(n.progPkgs[fam], p)
						}
					}
				}
			}
			if t.RDMA {
				n.rdma = true
			}
			for _, pf := range t.ProbedFlags {
				for _, a := range w.Args {
					if a == pf.Flag || strings.HasPrefix(a, pf.Flag+"=") {
						n.flags = append(n.flags, flagUse{w, w.Tool, pf})
						break
					}
				}
			}
		}
	}
	return m, order
}

// Check returns every problem of every host with facts. Hosts without
// facts (unreachable) are the caller's to report.
func Check(l *lab.Lab, facts map[string]*proto.Facts) []Problem {
	var out []Problem
	m, order := needs(l)
	for _, h := range order {
		f := facts[h.Name]
		if f == nil {
			continue
		}
		out = append(out, checkHost(h, m[h], f)...)
	}
	return out
}

func checkHost(h *lab.Host, n *need, f *proto.Facts) []Problem {
	var out []Problem
	add := func(code, what, fix string, args ...any) {
		out = append(out, Problem{Host: h.Name, Code: code, What: what, Fix: fmt.Sprintf(fix, args...)})
	}
	drivers := map[string]bool{}
	for _, r := range n.rxe {
		drivers[r.Block] = true
	}
	if (drivers["rxe"] || drivers[""]) && f.RXEModule == "absent" {
		add(CodeNoRXE, fmt.Sprintf("kernel %s has no rdma_rxe module", f.Kernel),
			"install the distribution's extra kernel modules package (e.g. linux-modules-extra-$(uname -r)), or use a kernel built with CONFIG_RDMA_RXE")
	}
	if drivers["siw"] && f.SIWModule == "absent" {
		add(CodeNoSIW, fmt.Sprintf("kernel %s has no siw (soft-iWARP) module", f.Kernel),
			"use a kernel built with CONFIG_RDMA_SIW (Ubuntu: linux-modules-extra-$(uname -r); Fedora and RHEL ship it; Debian's kernels do not)")
	}
	out = append(out, checkFound(h, n, f)...)
	if len(n.impairs) > 0 && f.NetemModule == "absent" {
		add(CodeNoNetem, fmt.Sprintf("kernel %s has no netem qdisc (sch_netem), which %s needs", f.Kernel, quoteJoin(n.impairs)),
			"install the distribution's kernel modules for it (on Debian and Ubuntu it is in the kernel image package; on Fedora and RHEL, kernel-modules-extra), or use a kernel built with CONFIG_NET_SCH_NETEM; or remove the impair blocks for this host")
	}
	if len(n.root) > 0 && !f.Root {
		fix := "set become = true on the host (with passwordless sudo for its user), or log in as root"
		if h.Become {
			fix = "become is set but the agent did not run as root: check the user's sudo rights"
		}
		add(CodeNeedsRoot, fmt.Sprintf("%s needs root, and the agent runs as %s (uid %d)", strings.Join(n.root, ", "), userOf(f), f.UID), "%s", fix)
	}
	var tools []string
	for t := range n.tools {
		tools = append(tools, t)
	}
	sort.Strings(tools)
	missingPkg := map[kinds.Packages][]string{}
	var pkgs []kinds.Packages
	for _, t := range tools {
		if _, ok := f.Tools[t]; ok {
			continue
		}
		prog, _ := kinds.ProgramByName(t)
		p := prog.Packages
		if _, seen := missingPkg[p]; !seen {
			pkgs = append(pkgs, p)
		}
		missingPkg[p] = append(missingPkg[p], t)
	}
	for _, p := range pkgs {
		hint := p
		if n.progTool != "" && slices.Contains(missingPkg[p], n.progTool) {
			// One command for the compiler and what the programs need.
			with := func(base, fam string) string {
				all := []string{base}
				for _, x := range n.progPkgs[fam] {
					if x != base {
						all = append(all, x)
					}
				}
				return strings.Join(all, " ")
			}
			hint = kinds.Packages{Debian: with(p.Debian, "debian"), RHEL: with(p.RHEL, "rhel"), SUSE: with(p.SUSE, "suse")}
		}
		add(CodeMissingTool, fmt.Sprintf("%s not installed", strings.Join(missingPkg[p], ", ")), "%s", hint.InstallHintFor(f.OS))
	}
	out = append(out, checkProgramPackages(h, n, f)...)
	for _, u := range n.flags {
		t, ok := f.Tools[u.tool]
		if !ok || slices.Contains(f.PerftestFlags, u.flag.Flag) {
			continue // missing altogether (said above), or has it
		}
		ver := ""
		if t.Version != "" {
			ver = " " + t.Version
		}
		add(CodeMissingFlag, fmt.Sprintf("workload %q asks %s for %s, and its %s%s here does not list it in --help", u.w.Name, u.tool, u.flag.Flag, u.tool, ver),
			"%s: run it on hosts with a newer one (rlab's VMs: vm { image = \"trixie\" }), or remove %s from the workload's args", u.flag.Since, u.flag.Flag)
	}
	have := map[string]*proto.Netdev{}
	var names []string
	for i := range f.Netdevs {
		nd := &f.Netdevs[i]
		have[nd.Name] = nd
		names = append(names, nd.Name)
	}
	var wantNd []string
	for nd := range n.netdevs {
		wantNd = append(wantNd, nd)
	}
	sort.Strings(wantNd)
	for _, name := range wantNd {
		nd := have[name]
		if nd == nil {
			add(CodeNoNetdev, fmt.Sprintf("netdev %s (for %s) not found", name, n.netdevs[name]), "have: %s", someOf(names, " "))
			continue
		}
		if user, ok := n.ipv4[name]; ok && !hasIPv4(nd.Addrs) {
			add(CodeNoIPv4, fmt.Sprintf("netdev %s (for %s) has no IPv4 address, so rxe has no RoCEv2 GID to use", name, user),
				"give it one (ip addr add ADDR/PREFIX dev %s, or the distribution's network config)", name)
		}
		if nd.State == "down" {
			add(CodeNetdevDown, fmt.Sprintf("netdev %s (for %s) is down", name, n.netdevs[name]), "ip link set %s up", name)
		}
	}
	if n.rdma && !f.Root && f.MemlockSoft >= 0 && f.MemlockSoft < MinMemlock {
		add(CodeMemlock, fmt.Sprintf("RLIMIT_MEMLOCK is %s (soft), too low for RDMA memory registration", bytesIEC(f.MemlockSoft)),
			"raise it for %s (e.g. `%s hard memlock unlimited` and `soft memlock unlimited` in /etc/security/limits.conf, then log in again), or run with become = true", userOf(f), userOf(f))
	}
	if want := uint64(n.captures) + DiskMargin; f.WorkDir != "" && f.FreeBytes < want {
		add(CodeDisk, fmt.Sprintf("only %s free in %s, the lab may write %s there (captures + logs)", bytesIEC(int64(f.FreeBytes)), f.WorkDir, bytesIEC(int64(want))),
			"free some disk on the host, or lower the captures' max_size")
	}
	return out
}

func userOf(f *proto.Facts) string {
	if f.User != "" {
		return f.User
	}
	return fmt.Sprintf("uid %d", f.UID)
}

func hasIPv4(addrs []string) bool {
	for _, a := range addrs {
		ip, _, _ := strings.Cut(a, "/")
		if strings.Count(ip, ".") == 3 && !strings.Contains(ip, ":") {
			return true
		}
	}
	return false
}

func bytesIEC(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// checkFound checks the devices of a host's rdma blocks against its facts:
// the device exists, the port exists and is ACTIVE, and the port's link
// layer gives what a workload needs (a RoCE v2 GID for an IPv4 address on
// Ethernet, a LID on InfiniBand); on an iWARP device, what the workloads
// ask that iWARP cannot do. Each problem names the host, device and port.
func checkFound(h *lab.Host, n *need, f *proto.Facts) []Problem {
	var out []Problem
	add := func(r *lab.Device, code, what, fix string, args ...any) {
		out = append(out, Problem{Host: h.Name, Code: code,
			What: fmt.Sprintf("rdma %q: device %s port %d: %s", r.Name, r.Device, r.Port, what), Fix: fmt.Sprintf(fix, args...)})
	}
	devs := map[string]*proto.RDMADevice{}
	var names []string
	for i := range f.RDMA {
		devs[f.RDMA[i].Name] = &f.RDMA[i]
		names = append(names, f.RDMA[i].Name)
	}
	sort.Strings(names)
	iwarp := map[*lab.Device]bool{}
	for _, r := range n.found {
		d := devs[r.Device]
		if d == nil {
			have := someOf(names, ", ")
			if have == "" {
				have = "none (no RDMA device at all: is the driver loaded?)"
			}
			add(r, CodeNoDevice, "no such RDMA device on the host", "name one it has: %s", have)
			continue
		}
		var port *proto.RDMAPort
		var ports []string
		for i := range d.Ports {
			ports = append(ports, fmt.Sprint(d.Ports[i].Port))
			if d.Ports[i].Port == r.Port {
				port = &d.Ports[i]
			}
		}
		if port == nil {
			add(r, CodeNoDevice, "the device has no such port", "its ports: %s", strings.Join(ports, ", "))
			continue
		}
		if port.State != "ACTIVE" {
			add(r, CodePortDown, fmt.Sprintf("port is %s (physical state %s), not ACTIVE", orDash(port.State), orDash(port.PhysState)),
				"bring the link up (cable, switch port, `ip link set DEV up`; on InfiniBand a subnet manager must run), or use another port")
			continue
		}
		switch {
		case d.NodeType == "RNIC" || d.Driver == "siw":
			iwarp[r] = true
		case port.LinkLayer == "InfiniBand":
			if port.LID == 0 {
				add(r, CodeNoGID, "InfiniBand port without a LID", "start a subnet manager (opensm) on the fabric")
			}
		case port.LinkLayer != "Ethernet" && port.LinkLayer != "":
			// The kernel's "Unknown" (AWS EFA, usNIC): no GID rule helps.
			add(r, CodeNoGID, fmt.Sprintf("link layer %s, node type %s: neither RoCE, InfiniBand nor iWARP (an AWS EFA or a usNIC), which rlab's workloads need", port.LinkLayer, orDash(d.NodeType)),
				"use the host's Ethernet netdev with an rxe block instead")
		default: // Ethernet: RoCE
			if !hasRoCEv2IPv4(port.GIDs) {
				add(r, CodeNoGID, fmt.Sprintf("link layer %s but no RoCE v2 GID for an IPv4 address", orDash(port.LinkLayer)),
					"give the port's netdev an IPv4 address (RoCE v2 GIDs follow the netdev's addresses)")
			}
		}
	}
	for _, u := range n.uses {
		if !iwarp[u.r] {
			continue
		}
		t, _ := lab.LookupTool(u.w.Tool)
		for _, p := range lab.IWARPProblems(u.w, t) {
			add(u.r, CodeIWARP, fmt.Sprintf("is iWARP, and workload %q cannot run there", u.w.Name), "%s", p.Why)
		}
	}
	return out
}

// checkProgramPackages names the packages the host's program blocks list
// for its distribution family that its package database (facts: dpkg or
// rpm) does not have, with the command that installs them. Nothing when
// the compiler is missing (its one install line names these too), the
// family is none rlab knows, or the host has no package database to ask.
func checkProgramPackages(h *lab.Host, n *need, f *proto.Facts) []Problem {
	if len(n.progPkgs) == 0 || f.PackageDB == "" {
		return nil
	}
	if _, ok := f.Tools[n.progTool]; n.progTool != "" && !ok {
		return nil
	}
	fam := hostneeds.FamilyOf(f.Platform.DistroID, f.Platform.DistroIDLike)
	var missing []string
	for _, p := range n.progPkgs[fam] {
		if !slices.Contains(f.Packages, p) {
			missing = append(missing, p)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return []Problem{{Host: h.Name, Code: CodeMissingPackage,
		What: fmt.Sprintf("%s not installed (%s), which the lab's program blocks need for %s hosts", strings.Join(missing, ", "), f.PackageDB, fam),
		Fix:  fmt.Sprintf("%s %s, or run with --provision", installCmd[fam], strings.Join(missing, " "))}}
}

func hasRoCEv2IPv4(gids []proto.GID) bool {
	for _, g := range gids {
		if g.Type == "RoCE v2" && strings.HasPrefix(g.GID, "::ffff:") && strings.Count(g.GID, ".") == 3 {
			return true
		}
	}
	return false
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func quoteJoin(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("impair %q", n)
	}
	return strings.Join(q, ", ")
}

// maxListed is how many of a host's names a finding lists: a host reports
// as many netdevs and devices as its facts hold (tens of thousands from a
// hostile or odd one), and one finding's line must stay readable.
const maxListed = 20

// someOf joins at most maxListed names and says how many it left out.
func someOf(names []string, sep string) string {
	if len(names) <= maxListed {
		return strings.Join(names, sep)
	}
	return fmt.Sprintf("%s%s… and %d more", strings.Join(names[:maxListed], sep), sep, len(names)-maxListed)
}
