package server

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/rlab-dev/rlab/agent/proto"
)

// Where platform facts come from. Variables so tests can point them at a
// fixture tree.
var (
	sysDMI         = "/sys/class/dmi/id"
	procCPUInfo    = "/proc/cpuinfo"
	sysHypervisor  = "/sys/hypervisor/type"
	sysClocksource = "/sys/devices/system/clocksource/clocksource0/available_clocksource"
	osReleasePaths = []string{"/etc/os-release", "/usr/lib/os-release"}
)

// readPlatform reads what the host runs on. It runs no program: every
// answer is a file read, so it is not cached (factscache.go keeps tool
// answers, which cost a fork+exec each), and a provision that installs
// rdma-core shows at the next facts call.
func readPlatform() proto.Platform {
	p := proto.Platform{
		Vendor:  readSysfs(filepath.Join(sysDMI, "sys_vendor")),
		Product: readSysfs(filepath.Join(sysDMI, "product_name")),
		Version: readSysfs(filepath.Join(sysDMI, "product_version")),
	}
	var hypervisorFlag bool
	if b, err := os.ReadFile(procCPUInfo); err == nil {
		p.CPUModel, hypervisorFlag = parseCPUInfo(b)
	}
	for _, path := range osReleasePaths {
		if b, err := os.ReadFile(path); err == nil {
			kv := parseOSReleaseKV(b)
			p.DistroID, p.DistroVersion = kv["ID"], kv["VERSION_ID"]
			if like := strings.Fields(kv["ID_LIKE"]); len(like) > 0 {
				p.DistroIDLike = like
			}
			break
		}
	}
	p.Virtualization = detectVirt(virtInputs{
		dmi: []string{
			p.Product, p.Vendor,
			readSysfs(filepath.Join(sysDMI, "board_vendor")),
			readSysfs(filepath.Join(sysDMI, "bios_vendor")),
			p.Version,
		},
		hypervisorFlag: hypervisorFlag,
		hypervisorType: readSysfs(sysHypervisor),
		clocksources:   strings.Fields(readSysfs(sysClocksource)),
	})
	p.RDMACore = rdmaCoreVersion() // facts.go; also the ibv_ tools' version
	return p
}

// parseCPUInfo returns the first "model name" of /proc/cpuinfo and whether
// the CPU flags include "hypervisor" (set by every x86 hypervisor in
// CPUID.1:ECX bit 31).
func parseCPUInfo(b []byte) (model string, hypervisor bool) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	sawFlags := false
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch {
		case k == "model name" && model == "":
			model = v
		case k == "flags" && !sawFlags:
			sawFlags = true
			hypervisor = slices.Contains(strings.Fields(v), "hypervisor")
		}
		if model != "" && sawFlags {
			break
		}
	}
	return model, hypervisor
}

// virtInputs is what detectVirt decides from.
type virtInputs struct {
	dmi            []string // product_name, sys_vendor, board_vendor, bios_vendor, product_version
	hypervisorFlag bool     // /proc/cpuinfo flags has "hypervisor"
	hypervisorType string   // /sys/hypervisor/type ("xen")
	clocksources   []string // available clocksources ("kvm-clock", "hyperv_clocksource_tsc_page")
}

// dmiVirt is systemd's DMI vendor table (src/basic/virt.c,
// detect_vm_dmi_vendor): a DMI field starting with the prefix names the
// hypervisor. Azure's "Microsoft Corporation" / "Virtual Machine" is added:
// systemd tells Hyper-V from CPUID, which a pure-Go agent cannot read.
var dmiVirt = []struct{ prefix, virt string }{
	{"KVM", "kvm"},
	{"OpenStack", "kvm"},
	{"KubeVirt", "kvm"},
	{"Amazon EC2", "amazon"},
	{"QEMU", "qemu"},
	{"VMware", "vmware"},
	{"VMW", "vmware"},
	{"innotek GmbH", "oracle"},
	{"VirtualBox", "oracle"},
	{"Oracle Corporation", "oracle"},
	{"Xen", "xen"},
	{"Bochs", "bochs"},
	{"Parallels", "parallels"},
	{"BHYVE", "bhyve"},
	{"Hyper-V", "microsoft"},
	{"Apple Virtualization", "apple"},
	{"Google Compute Engine", "google"},
	{"Virtual Machine", "microsoft"},
}

// detectVirt names the hypervisor as systemd-detect-virt --vm would, from
// files alone. systemd asks CPUID first; without it, the order here is:
// DMI names of clouds and desktop hypervisors, Xen's sysfs type, the
// paravirtual clocksource KVM and Hyper-V give the guest, DMI's
// QEMU/KVM names, then the CPU's hypervisor flag ("vm-other"), else none.
func detectVirt(in virtInputs) string {
	dmi := ""
	for _, field := range in.dmi {
		for _, e := range dmiVirt {
			if field != "" && strings.HasPrefix(field, e.prefix) {
				dmi = e.virt
				break
			}
		}
		if dmi != "" {
			break
		}
	}
	switch dmi {
	case "amazon":
		// EC2 bare-metal instances ("c5.metal") keep the Amazon DMI
		// names but have no hypervisor.
		if !in.hypervisorFlag && !slices.Contains(in.clocksources, "kvm-clock") {
			return "none"
		}
		return dmi
	case "", "qemu", "kvm":
	default:
		return dmi
	}
	if in.hypervisorType == "xen" {
		return "xen"
	}
	for _, c := range in.clocksources {
		switch {
		case c == "kvm-clock":
			return "kvm"
		case strings.HasPrefix(c, "hyperv_clocksource"):
			return "microsoft"
		}
	}
	if dmi != "" {
		return dmi
	}
	if in.hypervisorFlag {
		return "vm-other"
	}
	return "none"
}

// netdevHardware reads a netdev's link speed (Mb/s; 0 when the driver
// has none: sysfs gives -1 or EINVAL on a link that is down) and the
// vendor:device id of the PCI function behind it. A virtio-net device sits
// on the virtio bus one level below its PCI function, so the walk goes up
// at most two levels to the first device on the pci bus.
func netdevHardware(dir string) (speed int, pciID string) {
	if n, err := strconv.Atoi(readSysfs(filepath.Join(dir, "speed"))); err == nil && n > 0 {
		speed = n
	}
	dev, err := filepath.EvalSymlinks(filepath.Join(dir, "device"))
	if err != nil {
		return speed, ""
	}
	for range 2 {
		if sub, err := os.Readlink(filepath.Join(dev, "subsystem")); err == nil && filepath.Base(sub) == "pci" {
			v := strings.TrimPrefix(readSysfs(filepath.Join(dev, "vendor")), "0x")
			d := strings.TrimPrefix(readSysfs(filepath.Join(dev, "device")), "0x")
			if v != "" && d != "" {
				return speed, v + ":" + d
			}
			return speed, ""
		}
		dev = filepath.Dir(dev)
	}
	return speed, ""
}
