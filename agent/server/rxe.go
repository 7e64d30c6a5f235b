package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/rlab-dev/rlab/agent/proto"
)

const defaultDeviceWait = 10 * time.Second

// rxeLinks is how rxe devices are added and removed; netlink first, the
// rdma tool when netlink RDMA fails for a reason other than permissions.
var (
	rdmaLinkAdd = netlink.RdmaLinkAdd
	rdmaLinkDel = netlink.RdmaLinkDel
)

// NoRXEMessage is what a user reads when the kernel has no rdma_rxe.
func NoRXEMessage(kernel string) string {
	return fmt.Sprintf("kernel %s has no rdma_rxe module: install the distribution's extra kernel modules package "+
		"(Debian: linux-image-amd64 ships it; Ubuntu: linux-modules-extra-%s), or use a kernel built with CONFIG_RDMA_RXE", kernel, kernel)
}

func kernelRelease() string {
	var uts unix.Utsname
	if err := unix.Uname(&uts); err != nil {
		return "?"
	}
	return unix.ByteSliceToString(uts.Release[:])
}

// rxeOn returns the rxe device whose parent is netdev, if any.
func rxeOn(netdev string) string {
	ents, _ := os.ReadDir(sysClassIB)
	for _, e := range ents {
		if readSysfs(filepath.Join(sysClassIB, e.Name(), "parent")) == netdev {
			return e.Name()
		}
	}
	return ""
}

func (s *Server) deviceEnsure(ctx context.Context, c *call, params json.RawMessage) (any, error) {
	var p proto.DeviceEnsureParams
	if err := decode(proto.MethodDeviceEnsure, params, &p); err != nil {
		return nil, err
	}
	if err := ValidNetdev(p.Netdev); err != nil {
		return nil, perr(proto.CodeBadRequest, "rxe.ensure: %v", err)
	}
	typ := p.Type
	if typ == "" {
		typ = "rxe"
	}
	sw, ok := softDevices[typ]
	if !ok {
		return nil, perr(proto.CodeBadRequest, "rxe.ensure: type %q: want rxe or siw", p.Type)
	}
	if p.Name == "" {
		p.Name = typ + "_" + p.Netdev
	}
	if err := validRDMAName(p.Name); err != nil {
		return nil, perr(proto.CodeBadRequest, "rxe.ensure: %v", err)
	}
	what := fmt.Sprintf("create %s %q on netdev %q", typ, p.Name, p.Netdev)
	ifc, err := net.InterfaceByName(p.Netdev)
	if err != nil {
		return nil, perr(proto.CodeNotFound, "%s: netdev %q not found, have: %s", what, p.Netdev, netdevNames())
	}
	info := proto.DeviceInfo{Name: p.Name, Netdev: p.Netdev, Port: 1, Driver: typ}
	if existing := softDeviceOn(typ, p.Netdev); existing != "" {
		info.Name = existing
		s.log.Info(typ+" exists; reusing, not ours", "name", existing, "netdev", p.Netdev)
	} else {
		kernel := kernelRelease()
		switch sw.state(kernel) {
		case "absent":
			return nil, perr(proto.CodeNoModule, "%s: %s", what, sw.absent(kernel))
		case "loadable":
			if err := modprobe(ctx, sw.module); err != nil {
				return nil, err
			}
		}
		if _, err := os.Stat(filepath.Join(sysClassIB, p.Name)); err == nil {
			return nil, perr(proto.CodeExists, "%s: an RDMA device named %q exists on another netdev", what, p.Name)
		}
		s.mu.Lock()
		closing := s.closing
		s.mu.Unlock()
		if closing {
			return nil, errClosing(proto.MethodDeviceEnsure)
		}
		t0 := time.Now()
		if err := s.addLink(ctx, typ, p.Name, p.Netdev); err != nil {
			return nil, err
		}
		info.Created = true
		s.mu.Lock()
		s.rxes[p.Name] = p.Netdev
		s.mu.Unlock()
		s.log.Info(typ+" created", "name", p.Name, "netdev", p.Netdev, "took", time.Since(t0).Round(time.Millisecond))
	}

	wait := defaultDeviceWait
	if p.WaitMs > 0 {
		wait = time.Duration(p.WaitMs) * time.Millisecond
	}
	ipv4 := firstIPv4(ifc)
	deadline := time.Now().Add(wait)
	portDir := filepath.Join(sysClassIB, info.Name, "ports", strconv.Itoa(info.Port))
	for first := true; ; first = false {
		last := time.Now().After(deadline)
		dev := readRDMADeviceGIDs(info.Name, false)
		port, ok := portN(dev, info.Port)
		state := "missing"
		if ok {
			state = port.State
		}
		if ok && port.State == "ACTIVE" {
			info.ActiveMTU = port.ActiveMTU
			info.NodeGUID = dev.NodeGUID
			info.Transport = portTransport(dev, port)
			if typ == "siw" {
				// iWARP has no GID table to pick from: the RDMA CM
				// resolves the peer by its IP address (GID 0 is the MAC).
				info.ActiveMTU = RXEActiveMTU(ifcMTU(ifc))
				info.GIDIndex = 0
				if ipv4 != nil {
					info.IPv4 = ipv4.String()
				}
				return info, nil
			}
			if ipv4 == nil {
				info.GIDIndex = -1
				return info, nil
			}
			if g, ok := findRoCEv2GID(portDir, ipv4, scanGap(info.Created, first, last)); ok {
				info.GIDIndex, info.GID, info.IPv4 = g.Index, g.GID, ipv4.String()
				s.log.Info(typ+" ready", "name", info.Name, "gid_index", g.Index, "waited", time.Since(deadline.Add(-wait)).Round(time.Millisecond))
				return info, nil
			}
			state = "ACTIVE without a RoCE v2 GID for " + ipv4.String()
		}
		if last {
			return nil, perr(proto.CodeTimeout, "%s: port %d not ready after %s (state %s): is netdev %q up with an IPv4 address?",
				what, info.Port, wait, state, p.Netdev)
		}
		select {
		case <-ctx.Done():
			return nil, perr(proto.CodeInternal, "%s: agent shutting down", what)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// scanGap is the gap findRoCEv2GID's scan stops at on one look of the
// wait: gidScanGap while a device this agent created is awaited (its GIDs
// fill the lowest free entries), 0 (the whole table) on the last look, and
// on the first look at a device found on the netdev: one that has lived
// may have entries past a gap (addresses that came and went), and is
// usually ready, so one whole read finds it at once instead of at the
// deadline.
func scanGap(created, first, last bool) int {
	if last || first && !created {
		return 0
	}
	return gidScanGap
}

// gidScanGap is how many empty GID entries in a row end findRoCEv2GID's
// scan while a device is awaited. The kernel puts a new GID in the lowest
// free entry (ib_cache_gid_add), so entries past such a gap are there only
// after that many addresses were removed; the wait's last look reads the
// whole table anyway.
const gidScanGap = 16

// findRoCEv2GID reads a port's GID table (portDir: .../ports/N) in index
// order for the RoCE v2 GID that maps ipv4, the one RoCEv2GID picks from
// the whole table, reading an entry's type only when its GID matches.
// With gap > 0 it gives up after gap empty entries in a row: rxe's table
// has 1024 entries, and reading all of them (readRDMAPort) took 1.1-1.9 s
// in a TCG guest on this 2-core machine, each 50 ms poll of the wait.
func findRoCEv2GID(portDir string, ipv4 net.IP, gap int) (proto.GID, bool) {
	want, ok := netip.AddrFromSlice(ipv4.To4())
	if !ok {
		return proto.GID{}, false
	}
	want = netip.AddrFrom16(want.As16())
	empty := 0
	for i := 0; ; i++ {
		b, err := os.ReadFile(filepath.Join(portDir, "gids", strconv.Itoa(i)))
		if err != nil {
			return proto.GID{}, false // past the table's end
		}
		g, err := netip.ParseAddr(strings.TrimSpace(string(b)))
		if err != nil || g.IsUnspecified() {
			if empty++; gap > 0 && empty >= gap {
				return proto.GID{}, false
			}
			continue
		}
		empty = 0
		if g != want {
			continue
		}
		if typ := readSysfs(filepath.Join(portDir, "gid_attrs", "types", strconv.Itoa(i))); typ == "RoCE v2" {
			return proto.GID{Index: i, GID: g.String(), Type: typ, Netdev: readSysfs(filepath.Join(portDir, "gid_attrs", "ndevs", strconv.Itoa(i)))}, true
		}
	}
}

// validRDMAName accepts RDMA device names the kernel takes (IB_DEVICE_NAME_MAX
// is 64, and the name becomes a sysfs directory).
func validRDMAName(name string) error {
	if len(name) > 63 {
		return fmt.Errorf("rdma device name %q: longer than 63 characters", name)
	}
	if name == "" || name == "." || name == ".." {
		return fmt.Errorf("rdma device name %q: want letters, digits, '_', '-' or '.'", name)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return fmt.Errorf("rdma device name %q: want letters, digits, '_', '-' or '.'", name)
		}
	}
	return nil
}

func portN(d proto.RDMADevice, n int) (proto.RDMAPort, bool) {
	for _, p := range d.Ports {
		if p.Port == n {
			return p, true
		}
	}
	return proto.RDMAPort{}, false
}

func firstIPv4(ifc *net.Interface) net.IP {
	addrs, _ := ifc.Addrs()
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok {
			if v4 := ipn.IP.To4(); v4 != nil {
				return v4
			}
		}
	}
	return nil
}

// RoCEv2GID picks the RoCE v2 GID that maps ipv4 (::ffff:a.b.c.d).
func RoCEv2GID(gids []proto.GID, ipv4 net.IP) (proto.GID, bool) {
	for _, g := range gids {
		if g.Type != "RoCE v2" {
			continue
		}
		ip, err := netip.ParseAddr(g.GID)
		want, ok := netip.AddrFromSlice(ipv4.To4())
		if err == nil && ok && ip.Is4In6() && ip.Unmap() == want {
			return g, true
		}
	}
	return proto.GID{}, false
}

// softDevice is a kind of RDMA device rlab creates on a netdev.
type softDevice struct {
	module string                     // the kernel module that provides it
	state  func(kernel string) string // loaded, builtin, loadable, absent (or unknown)
	absent func(kernel string) string // what to do when the kernel lacks it
}

var softDevices = map[string]softDevice{
	"rxe": {module: "rdma_rxe", state: rxeModuleState, absent: NoRXEMessage},
	"siw": {module: "siw", state: func(k string) string { return moduleState(k, "siw", "CONFIG_RDMA_SIW") }, absent: NoSIWMessage},
}

// NoSIWMessage is what a user reads when the kernel has no siw module.
// Debian's kernels (bookworm's 6.1 and its backports' 6.12) are built
// without CONFIG_RDMA_SIW; Ubuntu's and Fedora's have it.
func NoSIWMessage(kernel string) string {
	return fmt.Sprintf("kernel %s has no siw (soft-iWARP) module: use a kernel built with CONFIG_RDMA_SIW "+
		"(Ubuntu: linux-modules-extra-%s; Fedora and RHEL ship it; Debian's kernels do not)", kernel, kernel)
}

// softDeviceOn returns the device of kind typ on netdev, if any.
func softDeviceOn(typ, netdev string) string {
	if typ == "rxe" {
		return rxeOn(netdev)
	}
	ents, _ := os.ReadDir(sysClassIB)
	for _, e := range ents {
		d := readRDMADevice(e.Name())
		if d.Driver != typ {
			continue
		}
		for _, n := range d.Netdevs {
			if n == netdev {
				return e.Name()
			}
		}
	}
	return ""
}

func ifcMTU(ifc *net.Interface) int {
	if ifc == nil {
		return 0
	}
	return ifc.MTU
}

// portTransport says how a port carries RDMA: iWARP for an RNIC, else by
// its link layer.
func portTransport(d proto.RDMADevice, p proto.RDMAPort) string {
	switch {
	case d.NodeType == "RNIC" || d.Driver == "siw":
		return "iWARP"
	case p.LinkLayer == "InfiniBand":
		return "InfiniBand"
	case p.LinkLayer == "Ethernet" || p.LinkLayer == "":
		return "RoCE" // "": a kernel too old to say (before link_layer, 2.6.36)
	default:
		// The kernel's "Unknown": neither (AWS EFA, whose SRD transport
		// the core calls unspecified; usNIC).
		return TransportUnspecified
	}
}

// TransportUnspecified is the transport of a port that is neither RoCE,
// InfiniBand nor iWARP.
const TransportUnspecified = "unspecified"

// addLink creates a software RDMA link (rxe or siw) over netlink RDMA,
// falling back to `rdma link add NAME type TYPE netdev DEV`.
func (s *Server) addLink(ctx context.Context, typ, name, netdev string) error {
	what := fmt.Sprintf("create %s %q on netdev %q", typ, name, netdev)
	err := rdmaLinkAdd(name, typ, netdev)
	if err == nil {
		return nil
	}
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
		if os.Geteuid() == 0 {
			return perr(proto.CodeCommand, "%s: %v as root: %s", what, err, refusedAsRoot(typ, readSysfs(filepath.Join(sysClassNet, netdev, "uevent"))))
		}
		return perr(proto.CodePermission, "%s: %v: needs root (become = true)", what, err)
	}
	s.log.Warn("netlink rdma link add failed; trying the rdma tool", "err", err)
	rdma, lerr := lookTool("rdma")
	if lerr != nil {
		return perr(proto.CodeCommand, "%s: netlink: %v", what, err)
	}
	argv := []string{rdma, "link", "add", name, "type", typ, "netdev", netdev}
	out, code, rerr := runArgv(ctx, argv)
	if rerr != nil {
		return &proto.Error{Code: proto.CodeCommand, Message: fmt.Sprintf("%s: netlink: %v; rdma tool: %v", what, err, rerr),
			Command: argv, ExitCode: code, Stderr: out}
	}
	return nil
}

func (s *Server) deviceDelete(ctx context.Context, c *call, params json.RawMessage) (any, error) {
	var p proto.DeviceDeleteParams
	if err := decode(proto.MethodDeviceDelete, params, &p); err != nil {
		return nil, err
	}
	if err := validRDMAName(p.Name); err != nil || p.Name == "" {
		return nil, perr(proto.CodeBadRequest, "rxe.delete: bad device name %q", p.Name)
	}
	deleted, err := s.deleteDevice(ctx, p.Name)
	if err != nil {
		return nil, err
	}
	return proto.DeviceDeleteResult{Deleted: deleted}, nil
}

// deleteDevice removes an rxe device; a device already gone is not an error.
func (s *Server) deleteDevice(ctx context.Context, name string) (bool, error) {
	what := fmt.Sprintf("delete rxe %q", name)
	defer func() {
		s.mu.Lock()
		delete(s.rxes, name)
		s.mu.Unlock()
	}()
	if _, err := os.Stat(filepath.Join(sysClassIB, name)); errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if k := readRDMADevice(name).Driver; k != "rxe" && k != "siw" {
		return false, perr(proto.CodeBadRequest, "%s: %q is not an rxe or siw device (rlab never deletes hardware)", what, name)
	}
	err := rdmaLinkDel(name)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
		return false, perr(proto.CodePermission, "%s: %v: needs root (become = true)", what, err)
	}
	rdma, lerr := lookTool("rdma")
	if lerr != nil {
		return false, perr(proto.CodeCommand, "%s: netlink: %v", what, err)
	}
	argv := []string{rdma, "link", "delete", name}
	out, code, rerr := runArgv(ctx, argv)
	if rerr != nil {
		return false, &proto.Error{Code: proto.CodeCommand, Message: fmt.Sprintf("%s: netlink: %v; rdma tool: %v", what, err, rerr),
			Command: argv, ExitCode: code, Stderr: out}
	}
	return true, nil
}

// runArgv runs argv (no shell) with a timeout and returns its combined
// output (bounded) and exit code.
func runArgv(ctx context.Context, argv []string) (string, int, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return runCmd(ctx, argv[0], argv[1:]...)
}

// refusedAsRoot says why the kernel refused root an rdma link, from the
// netdev's sysfs uevent: rdma_rxe takes no VLAN (rxe_newlink returns EPERM,
// "rxe creation allowed on top of a real device only"); otherwise the
// kernel's log has its reason. (Seen on the examples' VMs: "needs root" to
// a root login sends a user the wrong way.)
func refusedAsRoot(typ, uevent string) string {
	if typ == "rxe" && strings.Contains("\n"+uevent+"\n", "\nDEVTYPE=vlan\n") {
		return "the kernel's rdma_rxe takes no VLAN netdev (\"rxe creation allowed on top of a real device only\"): put the rxe on the NIC, or on a macvlan of it"
	}
	return "the kernel refused it (its log, `dmesg`, says why)"
}
