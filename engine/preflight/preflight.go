// Package preflight finds, before anything runs, every reason a lab cannot
// run on its hosts: a pure function from the lab model and each host's facts
// (as the agent reported them) to a list of problems, each naming the host,
// what is wrong and how to fix it. It does no I/O; it must not import
// engine/sshx or engine/remote.
package preflight

import (
	"fmt"
	"sort"
	"strings"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/tooldesc"
	"github.com/rlab-dev/rlab/engine/lab"
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
	CodeNoNetem     = "no_netem"
)

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
	rxe      []*lab.RXE
	tools    map[string]bool
	netdevs  map[string]string // netdev -> what uses it ("rxe \"server\"")
	ipv4     map[string]string // netdevs that need an IPv4 address (RoCEv2 GID)
	rdma     bool              // runs RDMA workloads (memlock)
	captures int64             // bytes of capture budgets
	root     []string          // what needs root
	impairs  []string          // impair blocks on the host (netem)
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
	for _, r := range l.RXEs {
		n := get(r.Host)
		n.rxe = append(n.rxe, r)
		n.netdevs[r.Netdev] = fmt.Sprintf("rxe %q", r.Name)
		n.ipv4[r.Netdev] = fmt.Sprintf("rxe %q", r.Name)
		n.root = append(n.root, fmt.Sprintf("creating rxe %q", r.Device))
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
		for _, h := range []*lab.Host{w.ServerHost, w.ClientHost} {
			if h == nil {
				continue
			}
			n := get(h)
			if t.Program != nil {
				n.tools[t.Program.Name] = true
			}
			if t.RDMA {
				n.rdma = true
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
	if len(n.rxe) > 0 && f.RXEModule == "absent" {
		add(CodeNoRXE, fmt.Sprintf("kernel %s has no rdma_rxe module", f.Kernel),
			"install the distribution's extra kernel modules package (e.g. linux-modules-extra-$(uname -r)), or use a kernel built with CONFIG_RDMA_RXE")
	}
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
	missingPkg := map[tooldesc.Packages][]string{}
	var pkgs []tooldesc.Packages
	for _, t := range tools {
		if _, ok := f.Tools[t]; ok {
			continue
		}
		prog, _ := tooldesc.ProgramByName(t)
		p := prog.Packages
		if _, seen := missingPkg[p]; !seen {
			pkgs = append(pkgs, p)
		}
		missingPkg[p] = append(missingPkg[p], t)
	}
	for _, p := range pkgs {
		add(CodeMissingTool, fmt.Sprintf("%s not installed", strings.Join(missingPkg[p], ", ")), "%s", p.InstallHintFor(f.OS))
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
			add(CodeNoNetdev, fmt.Sprintf("netdev %s (for %s) not found", name, n.netdevs[name]), "have: %s", strings.Join(names, " "))
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

func quoteJoin(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("impair %q", n)
	}
	return strings.Join(q, ", ")
}
