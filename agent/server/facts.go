package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/rlab-dev/rlab/agent/proto"
)

// Where facts come from. Variables so tests can point them at fixtures.
var (
	sysClassNet = "/sys/class/net"
	sysClassIB  = "/sys/class/infiniband"
	procModules = "/proc/modules"
	sysModule   = "/sys/module"
	libModules  = "/lib/modules"
)

// extraToolDirs are searched after $PATH: a non-login SSH session often has
// no sbin directories in PATH, where rdma, modprobe and tcpdump may live.
var extraToolDirs = []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}

// lookTool finds an executable by name in $PATH, then in extraToolDirs.
func lookTool(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			return abs, nil
		}
		return p, nil
	}
	for _, d := range extraToolDirs {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found in PATH or %s", name, strings.Join(extraToolDirs, ":"))
}

func (s *Server) facts(ctx context.Context, c *call, params json.RawMessage) (any, error) {
	var p proto.FactsParams
	if err := decode(proto.MethodFacts, params, &p); err != nil {
		return nil, err
	}
	probes, err := newProbeSet(p.Probe)
	if err != nil {
		return nil, perr(proto.CodeBadRequest, "%s: %v", proto.MethodFacts, err)
	}
	for _, n := range p.Packages {
		if !pkgNameRE.MatchString(n) {
			return nil, perr(proto.CodeBadRequest, "%s: package name %q is not one", proto.MethodFacts, n)
		}
	}
	// The probes are the controller's to name, program and arguments (a
	// tool family's `--version`), so a root agent working for a user runs
	// them as that user, as it runs workloads: with SECURITY.md's sudoers
	// rule the user can speak to the agent directly, and a probe of
	// `sh -c ...` ran as root.
	cred, home, err := s.ownerCredential()
	if err != nil {
		return nil, perr(proto.CodeInternal, "%s: %v", proto.MethodFacts, err)
	}
	// No tool-version cache for root working for a user: the probes ran
	// as the user, and the cache, keyed by the effective uid (root), is
	// no place for one user's answers. (Such an agent runs only from
	// root's folders, CheckRootExecutable, so the cache could not be in
	// the user's reach anyway; attack round 11's medium wrote it by path
	// in the user's ~/.cache/rlab/agent, which the user can swap for a
	// symlink into root's.)
	cacheDir := agentCacheDir()
	if cred != nil {
		cacheDir = ""
	}
	f := collectFactsOpt(ctx, s.opts.WorkDir, toolsOptions{cacheDir: cacheDir, refresh: p.Refresh, probes: probes, cred: cred, home: home})
	f.ProcTracking = trackingMode() // cgroup.go, reaper.go
	f.PackageDB, f.Packages = installedPackages(ctx, p.Packages)
	return f, nil
}

// installedPackages looks pkgs up in the host's package database, dpkg's
// where dpkg-query is, else rpm's, with provision's own queries: which
// database, and which of pkgs are installed. ("", nil) when pkgs is empty,
// the host has neither, or the query failed (named by preflight as not
// checked, never as missing).
func installedPackages(ctx context.Context, pkgs []string) (string, []string) {
	if len(pkgs) == 0 {
		return "", nil
	}
	for _, db := range []struct {
		name, prog string
		query      func(context.Context, []string) ([]string, []string, string, error)
	}{{"dpkg", "dpkg-query", dpkgQuery}, {"rpm", "rpm", rpmQuery}} {
		if _, err := exec.LookPath(db.prog); err != nil {
			continue
		}
		present, _, _, err := db.query(ctx, pkgs)
		if err != nil {
			return "", nil
		}
		slices.Sort(present)
		return db.name, present
	}
	return "", nil
}

// toolsOptions says how collectTools may use the tool-version cache
// (factscache.go).
type toolsOptions struct {
	cacheDir string    // where the cache file lives; "" keeps none
	refresh  bool      // ask every tool again and rewrite the cache
	probes   *probeSet // what to look for; nil: proto.DefaultProbes
	// cred, when set, is who runs the probes (the owner a root agent
	// works for), with HOME set to home.
	cred *syscall.Credential
	home string
}

// collectFactsOpt reads everything proto.Facts holds. It never fails: what
// it cannot read stays empty and is named in Errors.
func collectFactsOpt(ctx context.Context, workDir string, topts toolsOptions) proto.Facts {
	f := proto.Facts{
		CPUs:    runtime.NumCPU(),
		UID:     os.Geteuid(),
		Root:    os.Geteuid() == 0,
		WorkDir: workDir,
		Tools:   map[string]proto.Tool{},
	}
	fail := func(what string, err error) { f.Errors = append(f.Errors, what+": "+err.Error()) }

	// Tool versions run processes; start them first and read sysfs meanwhile.
	var wg sync.WaitGroup
	var tools map[string]proto.Tool
	var perftest perftestHelp
	var toolErrs []string
	wg.Add(1)
	go func() {
		defer wg.Done()
		tools, perftest, toolErrs = collectToolsOpt(ctx, topts)
	}()
	// Netdevs are two netlink dumps and sysfs reads per interface: the
	// largest collector on a host with many netdevs; run it beside the rest.
	var netdevErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		f.Netdevs, netdevErr = readNetdevs()
	}()

	var err error
	if f.Hostname, err = os.Hostname(); err != nil {
		fail("hostname", err)
	}
	var uts unix.Utsname
	if err := unix.Uname(&uts); err != nil {
		fail("uname", err)
	} else {
		f.Kernel = unix.ByteSliceToString(uts.Release[:])
		f.Arch = unix.ByteSliceToString(uts.Machine[:])
	}
	if f.OS, err = readOSRelease(); err != nil {
		fail("os-release", err)
	}
	f.Platform = readPlatform()
	if f.MemBytes, err = memTotal(); err != nil {
		fail("meminfo", err)
	}
	if u, err := user.Current(); err != nil {
		fail("user", err)
	} else {
		f.User = u.Username
	}
	netdevErrAt := len(f.Errors) // where the netdevs error went when it ran here
	if f.RDMA, err = readRDMADevices(); err != nil {
		fail("rdma devices", err)
	}
	f.RXEModule = rxeModuleState(f.Kernel)
	f.SIWModule = moduleState(f.Kernel, "siw", "CONFIG_RDMA_SIW")
	f.NetemModule = moduleState(f.Kernel, "sch_netem", "CONFIG_NET_SCH_NETEM") // impair.go
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &rl); err != nil {
		fail("getrlimit memlock", err)
	} else {
		f.MemlockSoft, f.MemlockHard = rlim(rl.Cur), rlim(rl.Max)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(workDir, &st); err != nil {
		fail("statfs work dir", err)
	} else {
		f.FreeBytes = st.Bavail * uint64(st.Bsize)
	}
	wg.Wait()
	if netdevErr != nil {
		f.Errors = slices.Insert(f.Errors, netdevErrAt, "netdevs: "+netdevErr.Error())
	}
	f.Tools, f.PerftestJSON, f.PerftestFlags = tools, perftest.JSON, perftest.Flags
	f.Errors = append(f.Errors, toolErrs...)
	return f
}

func rlim(v uint64) int64 {
	if v == unix.RLIM_INFINITY || v > 1<<62 {
		return -1
	}
	return int64(v)
}

func readOSRelease() (string, error) {
	var firstErr error
	for _, p := range []string{"/etc/os-release", "/usr/lib/os-release"} {
		b, err := os.ReadFile(p)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		return parseOSRelease(b), nil
	}
	return "", firstErr
}

// parseOSRelease returns PRETTY_NAME, else NAME VERSION_ID, from an
// os-release file.
func parseOSRelease(b []byte) string {
	kv := parseOSReleaseKV(b)
	if p := kv["PRETTY_NAME"]; p != "" {
		return p
	}
	return strings.TrimSpace(kv["NAME"] + " " + kv["VERSION_ID"])
}

// parseOSReleaseKV reads an os-release file's shell-like KEY=value lines,
// values maybe quoted.
func parseOSReleaseKV(b []byte) map[string]string {
	kv := map[string]string{}
	// Split, not a bufio.Scanner: a line over its 64 KiB stopped the
	// reading there, and the ID after it was lost.
	for line := range strings.SplitSeq(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		kv[k] = strings.ReplaceAll(v, `\"`, `"`)
	}
	return kv
}

func memTotal() (uint64, error) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parse MemTotal %q: %w", line, err)
			}
			return kb * 1024, nil
		}
	}
	return 0, errors.New("no MemTotal in /proc/meminfo")
}

func readSysfs(p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func readNetdevs() ([]proto.Netdev, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, err
	}
	addrs, addrErr := addrsByIndex()
	out := make([]proto.Netdev, 0, len(ifs))
	for _, ifc := range ifs {
		nd := proto.Netdev{
			Name:  ifc.Name,
			MTU:   ifc.MTU,
			MAC:   ifc.HardwareAddr.String(),
			State: readSysfs(filepath.Join(sysClassNet, ifc.Name, "operstate")),
		}
		if drv, err := os.Readlink(filepath.Join(sysClassNet, ifc.Name, "device", "driver")); err == nil {
			nd.Driver = filepath.Base(drv)
		}
		nd.SpeedMbps, nd.PCIID = netdevHardware(filepath.Join(sysClassNet, ifc.Name))
		if addrErr == nil {
			nd.Addrs = addrs[ifc.Index]
		} else if as, err := ifc.Addrs(); err == nil {
			for _, a := range as {
				nd.Addrs = append(nd.Addrs, a.String())
			}
		}
		out = append(out, nd)
	}
	return out, nil
}

// addrsByIndex returns every address of every interface ("10.0.0.1/24"),
// by interface index, in the kernel's order, from one netlink dump.
// net.Interface.Addrs dumps all addresses and keeps one interface's, so
// asking it per interface costs one dump per interface: quadratic on
// hosts with many netdevs.
func addrsByIndex() (map[int][]string, error) {
	as, err := netlink.AddrList(nil, netlink.FAMILY_ALL)
	if err != nil {
		return nil, fmt.Errorf("list addresses: %w", err)
	}
	m := make(map[int][]string)
	for _, a := range as {
		if a.IPNet != nil {
			m[a.LinkIndex] = append(m[a.LinkIndex], a.IPNet.String())
		}
	}
	return m, nil
}

// readRDMADevices reads every RDMA device from sysfs. rxe devices are told
// from hardware by their "parent" attribute (the netdev they sit on).
func readRDMADevices() ([]proto.RDMADevice, error) {
	ents, err := os.ReadDir(sysClassIB)
	if errors.Is(err, fs.ErrNotExist) {
		return []proto.RDMADevice{}, nil
	}
	if err != nil {
		return nil, err
	}
	devs := make([]proto.RDMADevice, 0, len(ents))
	for _, e := range ents {
		devs = append(devs, readRDMADevice(e.Name()))
	}
	return devs, nil
}

func readRDMADevice(name string) proto.RDMADevice { return readRDMADeviceGIDs(name, true) }

// readRDMADeviceGIDs is readRDMADevice, with its ports' GID tables only
// when gids is set: rxe's table has 1024 entries, and reading them all
// took 1-2 s in a TCG guest (findRoCEv2GID).
func readRDMADeviceGIDs(name string, gids bool) proto.RDMADevice {
	dir := filepath.Join(sysClassIB, name)
	d := proto.RDMADevice{
		Name:         name,
		Driver:       "hw",
		NodeGUID:     readSysfs(filepath.Join(dir, "node_guid")),
		SysImageGUID: readSysfs(filepath.Join(dir, "sys_image_guid")),
		Ports:        []proto.RDMAPort{},
	}
	d.NodeType = sysfsEnum(readSysfs(filepath.Join(dir, "node_type")))
	d.Driver, d.Parent = deviceDriver(dir, d.NodeType)
	switch d.Driver {
	case "siw":
		d.Netdevs = siwNetdev(name, d.NodeGUID)
	case "hw":
		// A hardware device's netdevs sit under its bus device
		// (device/net/*); rxe and siw say theirs otherwise.
		nets, _ := os.ReadDir(filepath.Join(dir, "device", "net"))
		for _, n := range nets {
			d.Netdevs = append(d.Netdevs, n.Name())
		}
	}
	ports, _ := os.ReadDir(filepath.Join(dir, "ports"))
	for _, pe := range ports {
		n, err := strconv.Atoi(pe.Name())
		if err != nil {
			continue
		}
		d.Ports = append(d.Ports, readRDMAPort(d, filepath.Join(dir, "ports", pe.Name()), n, gids))
	}
	sort.Slice(d.Ports, func(i, j int) bool { return d.Ports[i].Port < d.Ports[j].Port })
	return d
}

func readRDMAPort(d proto.RDMADevice, dir string, n int, withGIDs bool) proto.RDMAPort {
	p := proto.RDMAPort{
		Port:      n,
		State:     sysfsEnum(readSysfs(filepath.Join(dir, "state"))),
		PhysState: sysfsEnum(readSysfs(filepath.Join(dir, "phys_state"))),
		LinkLayer: readSysfs(filepath.Join(dir, "link_layer")),
		Rate:      readSysfs(filepath.Join(dir, "rate")),
	}
	if p.LinkLayer != "Ethernet" {
		// A LID means something on InfiniBand only; irdma reports lid 1
		// on its Ethernet ports (irdma_query_port).
		p.LID = ParseLID(readSysfs(filepath.Join(dir, "lid")))
	}
	if d.Driver == "rxe" {
		// sysfs has no MTU attribute; rxe derives its port MTU from the
		// parent netdev's MTU (drivers/infiniband/sw/rxe rxe_set_mtu).
		if mtu, err := strconv.Atoi(readSysfs(filepath.Join(sysClassNet, d.Parent, "mtu"))); err == nil {
			p.ActiveMTU = RXEActiveMTU(mtu)
			p.MaxMTU = 4096
		}
	}
	if !withGIDs {
		return p
	}
	gids, _ := os.ReadDir(filepath.Join(dir, "gids"))
	for _, ge := range gids {
		i, err := strconv.Atoi(ge.Name())
		if err != nil {
			continue
		}
		// netip keeps v4-mapped GIDs as ::ffff:a.b.c.d, as ibv_devinfo shows them.
		g, err := netip.ParseAddr(readSysfs(filepath.Join(dir, "gids", ge.Name())))
		if err != nil || g.IsUnspecified() {
			continue
		}
		p.GIDs = append(p.GIDs, proto.GID{
			Index:  i,
			GID:    g.String(),
			Type:   readSysfs(filepath.Join(dir, "gid_attrs", "types", ge.Name())),
			Netdev: readSysfs(filepath.Join(dir, "gid_attrs", "ndevs", ge.Name())),
		})
	}
	sort.Slice(p.GIDs, func(i, j int) bool { return p.GIDs[i].Index < p.GIDs[j].Index })
	return p
}

// ParseLID reads a port's sysfs lid ("0x1a"): 0 when absent or not a
// 16-bit hex number (Ethernet ports read "0x0").
func ParseLID(s string) int {
	s = strings.TrimSpace(s)
	h, ok := strings.CutPrefix(s, "0x")
	if !ok || h == "" || len(h) > 4 {
		return 0
	}
	n, err := strconv.ParseUint(h, 16, 16)
	if err != nil {
		return 0
	}
	return int(n)
}

// SIWGUIDNetdev says which netdev a siw node GUID names: the MAC
// ("52:54:00:12:34:56", as sysfs address shows it) it was made from, or
// loopback true when it was made from the device's name (siw on lo).
func SIWGUIDNetdev(device, nodeGUID string) (mac string, loopback, ok bool) {
	hex := strings.ToLower(strings.ReplaceAll(nodeGUID, ":", ""))
	if len(hex) != 16 || hex[12:] != "0000" {
		return "", false, false
	}
	for _, r := range hex {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f') {
			return "", false, false
		}
	}
	name := []byte(device)
	if len(name) > 6 {
		name = name[:6]
	}
	if want := fmt.Sprintf("%x", name) + strings.Repeat("0", 16-2*len(name)); hex == want {
		return "", true, true
	}
	parts := make([]string, 6)
	for i := range parts {
		parts[i] = hex[2*i : 2*i+2]
	}
	return strings.Join(parts, ":"), false, true
}

// siwNodeDesc is the node_desc every siw device has (SIW_NODE_DESC_COMMON,
// include/uapi/rdma/siw-abi.h in the kernel).
const siwNodeDesc = "Software iWARP stack"

// deviceDriver tells rxe, siw and hardware apart by sysfs: rxe alone has a
// "parent" attribute (its netdev); siw is an iWARP node ("4: RNIC") with
// siw's node_desc, and, unlike rxe, it has a "device" link (siw takes its
// netdev's bus device as parent: siw_device_create in
// drivers/infiniband/sw/siw/siw_main.c), so that link alone does not make
// a device hardware. A device without a bus device that is neither is
// software of some other kind, reported as siw as before.
func deviceDriver(dir, nodeType string) (driver, parent string) {
	if parent := readSysfs(filepath.Join(dir, "parent")); parent != "" {
		return "rxe", parent
	}
	if nodeType == "RNIC" && strings.HasPrefix(readSysfs(filepath.Join(dir, "node_desc")), siwNodeDesc) {
		return "siw", ""
	}
	if _, err := os.Lstat(filepath.Join(dir, "device")); err != nil {
		return "siw", ""
	}
	return "hw", ""
}

// siwNetdev finds the netdev a siw device sits on, by its node GUID
// (SIWGUIDNetdev): siw copies the netdev's MAC into the GUID's first six
// bytes (siw_device_create), or, on loopback, its own name's.
func siwNetdev(device, nodeGUID string) []string {
	mac, loopback, ok := SIWGUIDNetdev(device, nodeGUID)
	switch {
	case !ok:
		return nil
	case loopback:
		return []string{"lo"}
	}
	ents, _ := os.ReadDir(sysClassNet)
	var out []string
	for _, e := range ents {
		if strings.EqualFold(readSysfs(filepath.Join(sysClassNet, e.Name(), "address")), mac) {
			out = append(out, e.Name())
		}
	}
	return out
}

// sysfsEnum turns a sysfs port state such as "4: ACTIVE" or "5: LinkUp" into
// the verbs spelling: "ACTIVE", "LINK_UP".
func sysfsEnum(s string) string {
	if _, v, ok := strings.Cut(s, ":"); ok {
		s = strings.TrimSpace(v)
	}
	var b strings.Builder
	for i, r := range s {
		if r >= 'A' && r <= 'Z' && i > 0 && s[i-1] >= 'a' && s[i-1] <= 'z' {
			b.WriteByte('_')
		}
		if r == ' ' {
			r = '_'
		}
		b.WriteRune(r)
	}
	return strings.ToUpper(b.String())
}

// RXEActiveMTU is the IB MTU rxe uses on a netdev of the given MTU: the
// largest of 256..4096 that fits after rxe's 80 bytes of headers.
func RXEActiveMTU(netdevMTU int) int {
	avail := netdevMTU - 80
	for _, m := range []int{4096, 2048, 1024, 512} {
		if avail >= m {
			return m
		}
	}
	return 256
}

// rxeModuleState says whether the running kernel has rdma_rxe: "loaded",
// "builtin", "loadable" or "absent".
func rxeModuleState(kernel string) string {
	if b, err := os.ReadFile(procModules); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if strings.HasPrefix(line, "rdma_rxe ") {
				return "loaded"
			}
		}
	}
	if kernel != "" {
		dir := filepath.Join(libModules, kernel)
		if modulesListHas(filepath.Join(dir, "modules.builtin"), "rdma_rxe") {
			return "builtin"
		}
		if modulesListHas(filepath.Join(dir, "modules.dep"), "rdma_rxe") {
			return "loadable"
		}
	}
	if _, err := os.Stat(filepath.Join(sysModule, "rdma_rxe")); err == nil {
		// Built in but modules.builtin missing (custom kernels).
		return "builtin"
	}
	return "absent"
}

// modulesListHas reports whether a modules.dep / modules.builtin file lists
// module (as .../module.ko, maybe compressed).
func modulesListHas(path, module string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		p, _, _ := strings.Cut(sc.Text(), ":")
		base := filepath.Base(p)
		if m, _, ok := strings.Cut(base, ".ko"); ok && (m == module || strings.ReplaceAll(m, "-", "_") == module) {
			return true
		}
	}
	return false
}

// toolVersion is how to ask a tool its version and where the version is in
// the answer, from the controller's probe list. Tools without one report
// none, or the version of the tool they come with (proto.Probe.From), or
// rdma-core's (proto.Probe.RDMACore).
type toolVersion struct {
	args []string
	re   *regexp.Regexp // first submatch, else the whole match
}

// probeSet is a facts request's probe list, checked and indexed.
type probeSet struct {
	list     []proto.Probe
	versions map[string]toolVersion // the programs asked with Args
}

// newProbeSet checks a probe list (proto.DefaultProbes when empty): every
// program a plain file name, every pattern a regular expression.
func newProbeSet(list []proto.Probe) (*probeSet, error) {
	if len(list) == 0 {
		list = proto.DefaultProbes
	}
	ps := &probeSet{list: list, versions: map[string]toolVersion{}}
	for _, p := range list {
		if p.Name == "" || strings.ContainsAny(p.Name, "/\\\x00") || p.Name == "." || p.Name == ".." {
			return nil, fmt.Errorf("probe %q: not a program name", p.Name)
		}
		if len(p.Args) > 0 {
			re, err := regexp.Compile(p.Pattern)
			if err != nil {
				return nil, fmt.Errorf("probe %q: version pattern: %w", p.Name, err)
			}
			ps.versions[p.Name] = toolVersion{p.Args, re}
		}
	}
	return ps, nil
}

// defaultProbeSet is newProbeSet(nil).
func defaultProbeSet() *probeSet {
	ps, err := newProbeSet(nil)
	if err != nil {
		panic(err) // proto.DefaultProbes is checked by TestDefaultProbes
	}
	return ps
}

// names are the programs to look for, in list order.
func (ps *probeSet) names() []string {
	var ns []string
	for _, p := range ps.list {
		ns = append(ns, p.Name)
	}
	return ns
}

// sortedVersionNames is the programs asked their version, in order.
func (ps *probeSet) sortedVersionNames() []string {
	names := make([]string, 0, len(ps.versions))
	for n := range ps.versions {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// toolsTimeout bounds asking every tool its version. The first exec of a
// binary on a cold, emulated VM takes seconds.
const toolsTimeout = 30 * time.Second

// collectTools finds every tool in toolNames and its version, asking each
// tool (no cache).
func collectTools(ctx context.Context) (map[string]proto.Tool, perftestHelp, []string) {
	return collectToolsOpt(ctx, toolsOptions{})
}

// collectToolsOpt finds every tool in toolNames and its version. perftest's
// binaries share one package, so one binary's version and its --help (for
// --out_json) stand for all of them: no network test is ever run. Answers
// are taken from the tool-version cache when the binary is unchanged.
func collectToolsOpt(ctx context.Context, o toolsOptions) (map[string]proto.Tool, perftestHelp, []string) {
	ctx, cancel := context.WithTimeout(ctx, toolsTimeout)
	defer cancel()
	tools := map[string]proto.Tool{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var errs []string
	var perftest perftestHelp
	ps := o.probes
	if ps == nil {
		ps = defaultProbeSet()
	}
	for _, name := range ps.names() {
		p, err := lookTool(name)
		if err != nil {
			continue
		}
		tools[name] = proto.Tool{Path: p}
	}

	var cachePath string
	var id hostIdentity
	var old toolsCache
	if o.cacheDir != "" {
		var err error
		if id, err = readHostIdentity(); err == nil {
			cachePath = toolsCachePath(o.cacheDir, id)
			if !o.refresh {
				// A missing, corrupt or untrusted file is a cache miss.
				old, _ = loadToolsCache(cachePath, id)
			}
		}
	}
	fresh := map[string]cacheEntry{} // what this call asked or reused
	dirty := o.refresh

	versions := map[string]string{}
	// ask runs path args (or reuses its cached answer), turns the output
	// into a value with parse, and hands it to use.
	ask := func(name, path string, args []string, parse func(string) string, use func(string)) {
		key := cacheKey(path, args)
		// Stat before exec: if the binary is replaced meanwhile, the
		// entry carries the old identity and is simply missed next time.
		fid, statErr := statFileID(path)
		if cachePath != "" && statErr == nil {
			if e, ok := old.Entries[key]; ok && e.fileID == fid {
				fresh[key] = e
				use(e.Value)
				return
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, _, err := runCmdAs(ctx, o.cred, o.home, path, args...)
			mu.Lock()
			defer mu.Unlock()
			if ctx.Err() != nil {
				errs = append(errs, fmt.Sprintf("%s %s: no answer within %s", name, strings.Join(args, " "), toolsTimeout))
				return
			}
			_ = err // --help and --version exit non-zero in some tools
			v := parse(out)
			if statErr == nil {
				fresh[key] = cacheEntry{fileID: fid, Value: v}
				dirty = true
			}
			use(v)
		}()
	}
	mu.Lock() // use and fresh are shared with the goroutines
	for _, name := range ps.sortedVersionNames() {
		tv := ps.versions[name]
		t, ok := tools[name]
		if !ok {
			continue
		}
		ask(name, t.Path, tv.args, func(out string) string {
			m := tv.re.FindStringSubmatch(out)
			switch {
			case len(m) > 1:
				return m[1]
			case len(m) == 1:
				return m[0]
			}
			return ""
		}, func(v string) {
			if v != "" {
				versions[name] = v
			}
		})
	}
	for _, p := range ps.list {
		if t, ok := tools[p.Name]; ok && p.PerftestHelp {
			// The answer kept is every option the usage text names, so
			// a cached one serves whatever a later request asks about.
			ask(p.Name, t.Path, []string{"--help"}, HelpOptions, func(v string) {
				perftest = perftestHelpFrom(v, p.HelpFlags)
			})
		}
	}
	mu.Unlock()
	wg.Wait()
	if cachePath != "" && (dirty || len(fresh) != len(old.Entries)) {
		// Best effort: a cache that cannot be written costs only time.
		_ = saveToolsCache(cachePath, toolsCache{Version: toolsCacheVersion, MachineID: id.machineID, BootID: id.bootID, Entries: fresh})
	}
	for name, v := range versions {
		t := tools[name]
		t.Version = v
		tools[name] = t
	}
	// perftest's binaries share one package: one answer serves all. rping
	// and the ibv_ tools have no version option; they come with rdma-core,
	// whose version libibverbs carries in its file name.
	rdmaCore := ""
	for _, p := range ps.list {
		if p.RDMACore {
			rdmaCore = rdmaCoreVersion()
			break
		}
	}
	for _, p := range ps.list {
		t, ok := tools[p.Name]
		if !ok {
			continue
		}
		switch {
		case p.From != "" && tools[p.From].Version != "":
			t.Version = tools[p.From].Version
		case p.RDMACore && rdmaCore != "":
			t.Version = rdmaCore
		default:
			continue
		}
		tools[p.Name] = t
	}
	sort.Strings(errs)
	return tools, perftest, errs
}

// perftestHelp is what perftest's --help says it can do.
type perftestHelp struct {
	JSON  bool     // --out_json
	Flags []string // of the flags asked about, those it lists
}

// perftestHelpFrom reads HelpOptions' answer for the flags asked about.
func perftestHelpFrom(options string, asked []string) perftestHelp {
	have := strings.Fields(options)
	h := perftestHelp{JSON: slices.Contains(have, "--out_json")}
	for _, f := range asked {
		if slices.Contains(have, f) && !slices.Contains(h.Flags, f) {
			h.Flags = append(h.Flags, f)
		}
	}
	return h
}

// libibverbsGlobs are where distributions put libibverbs.
var libibverbsGlobs = []string{
	"/usr/lib/*/libibverbs.so.1.*", "/usr/lib64/libibverbs.so.1.*", "/usr/lib/libibverbs.so.1.*", "/lib/*/libibverbs.so.1.*",
}

// multiarchDirs are the Debian/Ubuntu library dirs of the agent's own
// architecture, looked in before the globs: globbing /usr/lib/*/ reads
// every directory under /usr/lib (1.5 ms of a 2 ms cached facts call,
// measured with RLAB_FACTS_TIMING=1).
var multiarchDirs = map[string]string{
	"amd64": "/usr/lib/x86_64-linux-gnu",
	"arm64": "/usr/lib/aarch64-linux-gnu",
}

// rdmaCoreVersion reads rdma-core's version from libibverbs' file name:
// rdma-core N.M installs libibverbs.so.1.<ABI>.N.M (Debian 12:
// libibverbs.so.1.14.44.0 is rdma-core 44.0).
func rdmaCoreVersion() string {
	if d, ok := multiarchDirs[runtime.GOARCH]; ok {
		if v := rdmaCoreVersionIn(d); v != "" {
			return v
		}
	}
	return rdmaCoreVersionGlobs()
}

// rdmaCoreVersionGlobs looks in every directory of libibverbsGlobs.
func rdmaCoreVersionGlobs() string {
	for _, g := range libibverbsGlobs {
		matches, _ := filepath.Glob(g)
		sort.Strings(matches)
		for _, m := range matches {
			if v := RDMACoreFromLibibverbs(filepath.Base(m)); v != "" {
				return v
			}
		}
	}
	return ""
}

// rdmaCoreVersionIn is rdmaCoreVersion for one directory: the target of
// its libibverbs.so.1 link, else the first libibverbs.so.1.* in name order
// that carries a version.
func rdmaCoreVersionIn(dir string) string {
	// The soname link names the file the loader uses: one syscall.
	if l, err := os.Readlink(filepath.Join(dir, "libibverbs.so.1")); err == nil {
		if v := RDMACoreFromLibibverbs(filepath.Base(l)); v != "" {
			return v
		}
	}
	ents, err := os.ReadDir(dir) // sorted by name
	if err != nil {
		return ""
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "libibverbs.so.1.") {
			if v := RDMACoreFromLibibverbs(e.Name()); v != "" {
				return v
			}
		}
	}
	return ""
}

// RDMACoreFromLibibverbs maps "libibverbs.so.1.14.44.0" to "44.0".
func RDMACoreFromLibibverbs(name string) string {
	rest, ok := strings.CutPrefix(name, "libibverbs.so.1.")
	if !ok {
		return ""
	}
	parts := strings.Split(rest, ".")
	if len(parts) < 3 {
		return ""
	}
	for _, p := range parts {
		if _, err := strconv.Atoi(p); err != nil {
			return ""
		}
	}
	return strings.Join(parts[1:], ".")
}

// PerftestHelpHasJSON reports whether perftest's --help output offers
// --out_json.
func PerftestHelpHasJSON(help string) bool {
	return perftestHelpFrom(HelpOptions(help), nil).JSON
}

// helpOption is a long option as a usage text lists it.
var helpOption = regexp.MustCompile(`(?:^|[\s,\[])(--[A-Za-z0-9][A-Za-z0-9_-]*)`)

// HelpOptions returns the long options a --help output lists, sorted and
// space-separated: "--out_json --write_with_imm ...".
func HelpOptions(help string) string {
	var opts []string
	for _, m := range helpOption.FindAllStringSubmatch(help, -1) {
		opts = append(opts, m[1])
	}
	slices.Sort(opts)
	return strings.Join(slices.Compact(opts), " ")
}

// runQuiet runs argv and returns its combined output (bounded), ignoring the
// exit status: --help and --version exit non-zero in some tools.
func runQuiet(ctx context.Context, path string, args ...string) string {
	out, _, _ := runCmd(ctx, path, args...)
	return out
}

// runCmd runs path with args (no shell) and returns its combined output
// (the first 64 KiB) and exit code.
func runCmd(ctx context.Context, path string, args ...string) (string, int, error) {
	return runCmdAs(ctx, nil, "", path, args...)
}

// runCmdAs is runCmd as the user cred names (nil: the agent's own), with
// HOME set to home.
func runCmdAs(ctx context.Context, cred *syscall.Credential, home, path string, args ...string) (string, int, error) {
	cmd := exec.CommandContext(ctx, path, args...)
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		cmd.Env = append(os.Environ(), "HOME="+home)
	}
	buf := limitedBuffer{max: 64 << 10}
	cmd.Stdout, cmd.Stderr = &buf, &buf
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	code := 0
	if cmd.ProcessState != nil {
		code = cmd.ProcessState.ExitCode()
	}
	return buf.String(), code, err
}

// limitedBuffer keeps the first max bytes written to it.
type limitedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.max - b.buf.Len(); room > 0 {
		if len(p) > room {
			b.buf.Write(p[:room])
		} else {
			b.buf.Write(p)
		}
	}
	return len(p), nil
}

func (b *limitedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
