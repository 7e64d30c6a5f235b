package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rlab-dev/rlab/agent/proto"
)

// usePlatformFixture points the platform readers at testdata/platform/<name>
// (layout: dmi/<attr>, cpuinfo, hypervisor_type, clocksource, os-release).
func usePlatformFixture(t *testing.T, name string) {
	t.Helper()
	dir := filepath.Join("testdata", "platform", name)
	old := []string{sysDMI, procCPUInfo, sysHypervisor, sysClocksource}
	oldOS := osReleasePaths
	sysDMI = filepath.Join(dir, "dmi")
	procCPUInfo = filepath.Join(dir, "cpuinfo")
	sysHypervisor = filepath.Join(dir, "hypervisor_type")
	sysClocksource = filepath.Join(dir, "clocksource")
	osReleasePaths = []string{filepath.Join(dir, "os-release")}
	t.Cleanup(func() {
		sysDMI, procCPUInfo, sysHypervisor, sysClocksource = old[0], old[1], old[2], old[3]
		osReleasePaths = oldOS
	})
}

// TestReadPlatform reads each fixture tree (where each came from is in
// testdata/README) and checks every field but RDMACore, which is the
// build machine's (TestRDMACoreVersionIn covers it).
func TestReadPlatform(t *testing.T) {
	tests := []struct {
		name string
		want proto.Platform
	}{
		{"thisvm", proto.Platform{Virtualization: "kvm", CPUModel: "Intel(R) Xeon(R) Processor", DistroID: "debian", DistroVersion: "12"}},
		{"openstack", proto.Platform{Virtualization: "kvm", Vendor: "OpenStack Foundation", Product: "OpenStack Nova", Version: "0.0.0",
			CPUModel: "Intel(R) Xeon(R) Processor", DistroID: "ubuntu", DistroIDLike: []string{"debian"}, DistroVersion: "22.04"}},
		{"ec2", proto.Platform{Virtualization: "amazon", Vendor: "Amazon EC2", Product: "c5.large",
			CPUModel: "Intel(R) Xeon(R) Platinum 8275CL CPU @ 3.00GHz", DistroID: "amzn", DistroIDLike: []string{"fedora"}, DistroVersion: "2023"}},
		{"ec2-metal", proto.Platform{Virtualization: "none", Vendor: "Amazon EC2", Product: "c5.metal",
			CPUModel: "Intel(R) Xeon(R) Platinum 8275CL CPU @ 3.00GHz", DistroID: "amzn", DistroIDLike: []string{"fedora"}, DistroVersion: "2023"}},
		{"gce", proto.Platform{Virtualization: "google", Vendor: "Google", Product: "Google Compute Engine",
			CPUModel: "Intel(R) Xeon(R) Processor", DistroID: "rocky", DistroIDLike: []string{"rhel", "centos", "fedora"}, DistroVersion: "9.3"}},
		{"azure", proto.Platform{Virtualization: "microsoft", Vendor: "Microsoft Corporation", Product: "Virtual Machine", Version: "7.0",
			CPUModel: "Intel(R) Xeon(R) Processor", DistroID: "sles", DistroIDLike: []string{"suse"}, DistroVersion: "15.5"}},
		{"qemu", proto.Platform{Virtualization: "qemu", Vendor: "QEMU", Product: "Standard PC (i440FX + PIIX, 1996)", Version: "pc-i440fx-7.2",
			CPUModel: "QEMU TCG CPU version 2.5+", DistroID: "debian", DistroVersion: "12"}},
		{"xen-pv", proto.Platform{Virtualization: "xen", CPUModel: "Intel(R) Xeon(R) Processor", DistroID: "debian", DistroVersion: "12"}},
		{"missing", proto.Platform{Virtualization: "none"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			usePlatformFixture(t, tc.name)
			got := readPlatform()
			got.RDMACore = ""
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("readPlatform() mismatch (-want +got):\n%s", d)
			}
		})
	}
}

func TestDetectVirt(t *testing.T) {
	tests := []struct {
		name string
		in   virtInputs
		want string
	}{
		{"bare metal", virtInputs{dmi: []string{"PowerEdge R650", "Dell Inc."}, clocksources: []string{"tsc", "hpet"}}, "none"},
		{"unknown hypervisor", virtInputs{hypervisorFlag: true, clocksources: []string{"tsc"}}, "vm-other"},
		{"kvm by product name", virtInputs{dmi: []string{"KVM", "Red Hat"}, hypervisorFlag: true}, "kvm"},
		{"qemu under kvm", virtInputs{dmi: []string{"Standard PC (Q35 + ICH9, 2009)", "QEMU"}, hypervisorFlag: true, clocksources: []string{"kvm-clock", "tsc"}}, "kvm"},
		{"vmware", virtInputs{dmi: []string{"VMware Virtual Platform", "VMware, Inc."}, hypervisorFlag: true}, "vmware"},
		{"virtualbox", virtInputs{dmi: []string{"VirtualBox", "innotek GmbH"}, hypervisorFlag: true, clocksources: []string{"kvm-clock"}}, "oracle"},
		{"hyper-v without dmi", virtInputs{hypervisorFlag: true, clocksources: []string{"hyperv_clocksource_tsc_page"}}, "microsoft"},
		{"xen hvm", virtInputs{dmi: []string{"HVM domU", "Xen"}, hypervisorType: "xen", hypervisorFlag: true}, "xen"},
		{"ec2 xen era", virtInputs{dmi: []string{"HVM domU", "Xen"}, hypervisorType: "xen"}, "xen"},
		{"empty dmi fields skipped", virtInputs{dmi: []string{"", "", "", "", ""}}, "none"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := detectVirt(tc.in); got != tc.want {
				t.Errorf("detectVirt(%+v) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestParseCPUInfo(t *testing.T) {
	tests := []struct {
		name, in   string
		model      string
		hypervisor bool
	}{
		{"x86 guest", "processor\t: 0\nmodel name\t: AMD EPYC 7R13 Processor\nflags\t\t: fpu vme hypervisor lahf_lm\n\nprocessor\t: 1\nmodel name\t: other\n", "AMD EPYC 7R13 Processor", true},
		{"x86 metal", "model name\t: Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz\nflags\t\t: fpu vme hypervisorx\n", "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz", false},
		// arm64 has "Features" and no "model name".
		{"arm64", "processor\t: 0\nBogoMIPS\t: 243.75\nFeatures\t: fp asimd\nCPU implementer\t: 0x41\n", "", false},
		{"empty", "", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, h := parseCPUInfo([]byte(tc.in))
			if m != tc.model || h != tc.hypervisor {
				t.Errorf("parseCPUInfo = %q, %v; want %q, %v", m, h, tc.model, tc.hypervisor)
			}
		})
	}
}

func FuzzParseCPUInfo(f *testing.F) {
	b, err := os.ReadFile("testdata/platform/thisvm/cpuinfo")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte("model name:\nflags: hypervisor"))
	f.Fuzz(func(t *testing.T, b []byte) {
		// The model is one line's value, as cpuinfo printed it.
		if m, _ := parseCPUInfo(b); strings.ContainsAny(m, "\n") || m != strings.TrimSpace(m) || !strings.Contains(string(b), m) {
			t.Fatalf("parseCPUInfo(%q) model %q", b, m)
		}
	})
}

// TestNetdevHardware builds the sysfs layouts of this machine's virtio-net
// eth0 (netdev -> virtio2 on the virtio bus -> PCI function 1af4:1041,
// speed -1), of a PCI NIC bound directly (an Intel X710, 8086:1572, 10000
// Mb/s) and of a veth (no device link).
func TestNetdevHardware(t *testing.T) {
	root := t.TempDir()
	mk := func(p, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, p string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range []string{"pci", "virtio"} {
		if err := os.MkdirAll(filepath.Join(root, "bus", b), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	pciFn := filepath.Join(root, "devices", "pci0000:00", "0000:00:03.0")
	mk(filepath.Join(pciFn, "vendor"), "0x1af4")
	mk(filepath.Join(pciFn, "device"), "0x1041")
	link(filepath.Join(root, "bus", "pci"), filepath.Join(pciFn, "subsystem"))
	virtio := filepath.Join(pciFn, "virtio2")
	mk(filepath.Join(virtio, "vendor"), "0x1af4")
	mk(filepath.Join(virtio, "device"), "0x0001")
	link(filepath.Join(root, "bus", "virtio"), filepath.Join(virtio, "subsystem"))
	eth0 := filepath.Join(root, "class", "net", "eth0")
	mk(filepath.Join(eth0, "speed"), "-1")
	link(virtio, filepath.Join(eth0, "device"))

	x710 := filepath.Join(root, "devices", "pci0000:00", "0000:3b:00.0")
	mk(filepath.Join(x710, "vendor"), "0x8086")
	mk(filepath.Join(x710, "device"), "0x1572")
	link(filepath.Join(root, "bus", "pci"), filepath.Join(x710, "subsystem"))
	ens1 := filepath.Join(root, "class", "net", "ens1f0")
	mk(filepath.Join(ens1, "speed"), "10000")
	link(x710, filepath.Join(ens1, "device"))

	veth := filepath.Join(root, "class", "net", "veth0")
	mk(filepath.Join(veth, "speed"), "10000")

	down := filepath.Join(root, "class", "net", "down0") // speed unreadable: EINVAL in real sysfs
	link(x710, filepath.Join(down, "device"))

	tests := []struct {
		dir   string
		speed int
		pci   string
	}{
		{eth0, 0, "1af4:1041"},
		{ens1, 10000, "8086:1572"},
		{veth, 10000, ""},
		{down, 0, "8086:1572"},
	}
	for _, tc := range tests {
		t.Run(filepath.Base(tc.dir), func(t *testing.T) {
			s, p := netdevHardware(tc.dir)
			if s != tc.speed || p != tc.pci {
				t.Errorf("netdevHardware = %d, %q; want %d, %q", s, p, tc.speed, tc.pci)
			}
		})
	}
}
