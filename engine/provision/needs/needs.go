// Package needs says what each host of a lab needs installed for it to run:
// the programs of its workloads' tools, tcpdump for its captures, the rdma
// tool and the rdma_rxe module for its rxe devices. It is the pure half of
// engine/provision, split off so that engine/plan, which is pure, can name
// a host's needs in its provision step without depending on the agent client
// engine/provision installs through.
//
// It imports engine/lab and kinds only; never agent/rpc, SSH or
// os/exec (internal/archtest checks it).
package needs

import (
	"sort"
	"strings"

	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/kinds"
)

// RXEModule is the kernel module of Soft-RoCE.
const RXEModule = "rdma_rxe"

// Need is what one host must have for the lab.
type Need struct {
	Host     *lab.Host
	Programs []string // sorted: workload tools, tcpdump, rdma, modprobe
	RXE      bool     // creates rxe devices: needs rdma_rxe
	// Packages are what the program blocks its workloads build and run
	// need, by distribution family (debian, rhel, suse), each family's
	// sorted; For says which program needs each.
	Packages map[string][]string
	For      map[string][]string
}

// Of is what each host of the lab needs, in lab order; a host the lab
// uses for nothing needs nothing.
func Of(l *lab.Lab) []Need {
	progs := map[*lab.Host]map[string]bool{}
	rxe := map[*lab.Host]bool{}
	add := func(h *lab.Host, p string) {
		if h == nil {
			return
		}
		if progs[h] == nil {
			progs[h] = map[string]bool{}
		}
		progs[h][p] = true
	}
	for _, r := range l.Devices {
		rxe[r.Host] = true
		add(r.Host, "rdma")     // iproute2's rdma: what rlab's own fix hints use
		add(r.Host, "modprobe") // loads rdma_rxe
	}
	for _, c := range l.Captures {
		add(c.Host, "tcpdump")
	}
	pkgs := map[*lab.Host]map[string]map[string]bool{} // host, family, package
	pkgFor := map[*lab.Host]map[string][]string{}
	for _, w := range l.Workloads {
		t, ok := lab.LookupTool(w.Tool)
		if !ok || t.Program == nil {
			continue
		}
		for _, h := range []*lab.Host{w.ServerHost, w.ClientHost, w.Host} {
			add(h, t.Program.Name)
			if h == nil || w.Program == nil {
				continue
			}
			for fam, ps := range w.Program.Packages {
				if pkgs[h] == nil {
					pkgs[h], pkgFor[h] = map[string]map[string]bool{}, map[string][]string{}
				}
				if pkgs[h][fam] == nil {
					pkgs[h][fam] = map[string]bool{}
				}
				for _, p := range ps {
					pkgs[h][fam][p] = true
					if !contains(pkgFor[h][p], "program "+w.Program.Name) {
						pkgFor[h][p] = append(pkgFor[h][p], "program "+w.Program.Name)
					}
				}
			}
		}
	}
	var out []Need
	for _, h := range l.Hosts {
		n := Need{Host: h, RXE: rxe[h]}
		for p := range progs[h] {
			n.Programs = append(n.Programs, p)
		}
		sort.Strings(n.Programs)
		if len(pkgs[h]) > 0 {
			n.Packages, n.For = map[string][]string{}, pkgFor[h]
			for fam, set := range pkgs[h] {
				for p := range set {
					n.Packages[fam] = append(n.Packages[fam], p)
				}
				sort.Strings(n.Packages[fam])
			}
		}
		out = append(out, n)
	}
	return out
}

// familyIDs maps os-release ID and ID_LIKE words to a family. ID is looked
// at first, then each ID_LIKE word in order (os-release(5): "closest
// first").
var familyIDs = map[string]string{
	"debian": "debian", "ubuntu": "debian", "raspbian": "debian", "linuxmint": "debian", "pop": "debian",
	"rhel": "rhel", "fedora": "rhel", "centos": "rhel", "rocky": "rhel", "almalinux": "rhel", "ol": "rhel", "amzn": "rhel",
	"suse": "suse", "opensuse": "suse", "sles": "suse", "opensuse-leap": "suse", "opensuse-tumbleweed": "suse", "sled": "suse",
}

// FamilyOf is the family of a host whose os-release says id and idLike;
// "" when none is known.
func FamilyOf(id string, idLike []string) string {
	for _, w := range append([]string{id}, idLike...) {
		if f, ok := familyIDs[strings.ToLower(w)]; ok {
			return f
		}
	}
	return ""
}

// PackageNames are the packages every program block of the lab names, of
// every distribution family, sorted, each once: what `rlab facts` and
// `rlab check`'s host probe ask every host about, having no plan (a run
// asks each host what its plan needs there: Need.PackageNames), whose
// answer preflight reads for the host's own family.
func PackageNames(l *lab.Lab) []string {
	var out []string
	for _, p := range l.Programs {
		for _, ps := range p.Packages {
			for _, n := range ps {
				if !contains(out, n) {
					out = append(out, n)
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// PackageNames are the packages n names (its host's program blocks), of
// every distribution family, sorted, each once: what a run's facts request
// asks that host about (proto.FactsParams.Packages); the host's own family
// decides which preflight reads.
func (n Need) PackageNames() []string {
	var out []string
	for _, ps := range n.Packages {
		for _, p := range ps {
			if !contains(out, p) {
				out = append(out, p)
			}
		}
	}
	sort.Strings(out)
	return out
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// Describe says what provisioning n's host would install if it lacks it,
// for `rlab plan`, which has no host to ask: the packages in Debian/Ubuntu
// names, each with the programs it is for where they differ, and the
// rdma_rxe module; "" when the lab needs nothing there.
func (n Need) Describe() string {
	forPkg := map[string][]string{}
	var pkgs []string
	for _, name := range n.Programs {
		prog, ok := kinds.ProgramByName(name)
		if !ok || prog.Packages.Debian == "" {
			continue
		}
		pkg := prog.Packages.Debian
		if _, seen := forPkg[pkg]; !seen {
			pkgs = append(pkgs, pkg)
		}
		forPkg[pkg] = append(forPkg[pkg], name)
	}
	sort.Strings(pkgs)
	var parts []string
	for _, pkg := range pkgs {
		if f := forPkg[pkg]; len(f) == 1 && f[0] == pkg {
			parts = append(parts, pkg)
		} else {
			parts = append(parts, pkg+" ("+strings.Join(f, ", ")+")")
		}
	}
	for _, pkg := range n.Packages["debian"] {
		if _, seen := forPkg[pkg]; !seen {
			parts = append(parts, pkg+" ("+strings.Join(n.For[pkg], ", ")+")")
		}
	}
	if n.RXE {
		parts = append(parts, RXEModule+" (Ubuntu: linux-modules-extra-<kernel>)")
	}
	return strings.Join(parts, ", ")
}
