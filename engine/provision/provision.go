// Package provision makes stock hosts ready for a lab: from the lab model
// and each host's facts it derives what the host lacks — the packages of the
// tools its workloads use, tcpdump for its captures, the rdma tool and
// rdma_rxe for its rxe devices — in the package names of the host's
// distribution family (from os-release ID and ID_LIKE), and has the host's
// agent install only that (agent method provision: argv only, as root
// through become, the host's own package manager).
//
// Deciding (Needs, PlanHost) is pure: no I/O; what a lab needs per host is
// the leaf engine/provision/needs, so engine/plan can say it without this
// package's agent client. Apply runs one host's plan through its agent
// client. It imports engine/lab, kinds, agent/proto and agent/rpc;
// never engine/run, engine/sshx or engine/remote (the caller connects;
// internal/archtest checks it).
package provision

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc"
	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/engine/provision/needs"
	"github.com/rlab-dev/rlab/kinds"
)

// Family is a distribution family: one package manager, one set of
// package names (kinds.Packages).
type Family string

// The families rlab provisions.
const (
	Debian Family = "debian" // Debian, Ubuntu and their derivatives: apt-get
	RHEL   Family = "rhel"   // RHEL, Rocky, Alma, CentOS, Fedora, Amazon Linux: dnf (yum)
	SUSE   Family = "suse"   // SLES, openSUSE: zypper
)

// FamilyOf is the family of a host whose os-release says id and idLike;
// "" when none is known (needs.FamilyOf, the pure half).
func FamilyOf(id string, idLike []string) Family { return Family(needs.FamilyOf(id, idLike)) }

// PackageFor is p's package name in family f.
func PackageFor(p kinds.Packages, f Family) string {
	switch f {
	case Debian:
		return p.Debian
	case RHEL:
		return p.RHEL
	case SUSE:
		return p.SUSE
	}
	return ""
}

// Need is what one host must have for the lab. It lives in the leaf
// engine/provision/needs, which engine/plan (pure) imports instead of this
// package and its agent client; the alias keeps one provision API for the
// callers that install.
type Need = needs.Need

// Needs is what each host of the lab needs, in lab order; a host the lab
// uses for nothing needs nothing.
func Needs(l *lab.Lab) []Need { return needs.Of(l) }

// HostPlan is what provisioning one host means.
type HostPlan struct {
	Host   string
	Family Family
	// Packages to install, sorted; For says what needs each one.
	Packages []string
	For      map[string][]string
	// Modules to load once the packages are in.
	Modules []string
	// Present is what the lab needs that the host already has: programs
	// its facts found, and rdma_rxe when the kernel has it; sorted. The
	// report counts it beside what was installed.
	Present []string
	// Err: the host cannot be provisioned (unknown distribution, not
	// root); it names what to install by hand. Nothing was changed.
	Err error
}

// Nothing says the host lacks nothing.
func (p HostPlan) Nothing() bool { return p.Err == nil && len(p.Packages) == 0 && len(p.Modules) == 0 }

// rxeModule is the kernel module of Soft-RoCE.
const rxeModule = needs.RXEModule

// PlanHost decides what n's host lacks, from its facts: a program the
// agent did not find is its package; rdma_rxe absent from the running
// kernel is, on Ubuntu, linux-modules-extra-<kernel> (Ubuntu's cloud and
// generic kernels ship rdma_rxe there, not in linux-modules).
func PlanHost(n Need, f *proto.Facts) HostPlan {
	p := HostPlan{Host: n.Host.Name, For: map[string][]string{}}
	fam := FamilyOf(f.Platform.DistroID, f.Platform.DistroIDLike)
	p.Family = fam
	var missing []kinds.Program
	for _, name := range n.Programs {
		if _, ok := f.Tools[name]; ok {
			p.Present = append(p.Present, name)
			continue
		}
		prog, ok := kinds.ProgramByName(name)
		if !ok {
			continue
		}
		missing = append(missing, prog)
	}
	needModule := n.RXE && f.RXEModule == "absent"
	if n.RXE && !needModule {
		p.Present = append(p.Present, rxeModule)
		sort.Strings(p.Present)
	}
	// A program block's packages (headers, make): the host's package
	// manager says which it has (provision leaves those alone), so they
	// are asked for whenever the lab names them for this family.
	extra := n.Packages[string(fam)]
	if len(missing) == 0 && !needModule && len(extra) == 0 {
		return p
	}
	distro := strings.TrimSpace(f.Platform.DistroID + " " + f.Platform.DistroVersion)
	if distro == "" {
		distro = "a distribution without /etc/os-release"
	}
	if fam == "" {
		var byHand []string
		for _, pr := range missing {
			byHand = append(byHand, pr.Name)
		}
		p.Err = fmt.Errorf("unknown distribution %s (os-release ID %q, ID_LIKE %q): rlab installs with apt-get, dnf/yum or zypper only; install %s by hand: %s",
			distro, f.Platform.DistroID, strings.Join(f.Platform.DistroIDLike, " "), strings.Join(byHand, ", "), byHandHint(missing))
		return p
	}
	for _, pr := range missing {
		pkg := PackageFor(pr.Packages, fam)
		if pkg == "" {
			continue
		}
		if _, seen := p.For[pkg]; !seen {
			p.Packages = append(p.Packages, pkg)
		}
		p.For[pkg] = append(p.For[pkg], pr.Name)
	}
	for _, pkg := range extra {
		if _, seen := p.For[pkg]; !seen {
			p.Packages = append(p.Packages, pkg)
		}
		p.For[pkg] = append(p.For[pkg], n.For[pkg]...)
	}
	if needModule {
		if isUbuntu(f.Platform) && f.Kernel != "" {
			pkg := "linux-modules-extra-" + f.Kernel
			p.Packages = append(p.Packages, pkg)
			p.For[pkg] = append(p.For[pkg], rxeModule)
			p.Modules = []string{rxeModule}
		} else {
			p.Err = fmt.Errorf("kernel %s (%s) has no %s module, and rlab knows no package of %s that ships it: boot a kernel built with CONFIG_RDMA_RXE (Ubuntu: linux-modules-extra-$(uname -r); Debian's own kernels have it)",
				f.Kernel, distro, rxeModule, distro)
			return p
		}
	}
	sort.Strings(p.Packages)
	if len(p.Packages) > 0 && !f.Root {
		p.Err = fmt.Errorf("installing %s needs root, and the agent runs as %s (uid %d): set become = true on the host (or in the ssh block) with passwordless sudo for its user, or log in as root; nothing was changed",
			strings.Join(p.Packages, ", "), userOf(f), f.UID)
	}
	return p
}

func isUbuntu(pl proto.Platform) bool {
	return pl.DistroID == "ubuntu" || slices.Contains(pl.DistroIDLike, "ubuntu")
}

func userOf(f *proto.Facts) string {
	if f.User != "" {
		return f.User
	}
	return fmt.Sprintf("uid %d", f.UID)
}

// byHandHint names the packages per family, for a distribution rlab does
// not know.
func byHandHint(progs []kinds.Program) string {
	var d, r, s []string
	for _, p := range progs {
		for _, x := range []struct {
			list *[]string
			pkg  string
		}{{&d, p.Packages.Debian}, {&r, p.Packages.RHEL}, {&s, p.Packages.SUSE}} {
			if x.pkg != "" && !slices.Contains(*x.list, x.pkg) {
				*x.list = append(*x.list, x.pkg)
			}
		}
	}
	return fmt.Sprintf("Debian/Ubuntu: %s; RHEL/Fedora: %s; SUSE: %s", strings.Join(d, " "), strings.Join(r, " "), strings.Join(s, " "))
}

// Options bound one host's provisioning.
type Options struct {
	LockWait time.Duration // wait for another package manager's lock; 0: 2m
	Timeout  time.Duration // the whole install on the host; 0: 10m
	Retries  int           // of a transient mirror error; 0: 2
	Grace    time.Duration // a cancelled install is let finish this long; 0: 2m
}

// Result is what provisioning one host did.
type Result struct {
	Host      string   `json:"host"`
	Family    Family   `json:"family,omitempty"`
	Manager   string   `json:"manager,omitempty"`
	Installed []string `json:"installed"`
	Present   []string `json:"present,omitempty"`
	Modules   []string `json:"modules,omitempty"`
	LockWait  string   `json:"lock_wait,omitempty"`
	Seconds   float64  `json:"seconds"`
	Error     string   `json:"error,omitempty"`
	// Log is the package manager's output (for hosts/<name>/logs/provision.log).
	Log string `json:"-"`
	Err error  `json:"-"`
}

// Apply carries out p on its host through c: nothing when p lacks nothing
// (no call at all), p.Err as the result's error, else the agent's
// provision method.
func Apply(ctx context.Context, c rpc.Caller, p HostPlan, o Options) Result {
	r := Result{Host: p.Host, Family: p.Family, Installed: []string{}}
	if p.Err != nil {
		r.Err = fmt.Errorf("host %q: provision: %w", p.Host, p.Err)
		r.Error = r.Err.Error()
		return r
	}
	if p.Nothing() {
		return r
	}
	start := time.Now()
	res, err := rpc.Invoke(ctx, c, rpc.Provision, proto.ProvisionParams{
		Family: string(p.Family), Packages: p.Packages, Modules: p.Modules,
		LockWaitMs: ms(o.LockWait), TimeoutMs: ms(o.Timeout), Retries: o.Retries, GraceMs: ms(o.Grace),
	})
	r.Seconds = time.Since(start).Seconds()
	if err != nil && ctx.Err() != nil {
		// Interrupted (Ctrl-C): the agent, told so as its session ends,
		// lets the package manager finish its transaction before it
		// exits; it is never killed mid-dpkg unless the grace runs out.
		grace := o.Grace
		if grace <= 0 {
			grace = 2 * time.Minute
		}
		r.Err = &Error{Host: p.Host, Code: proto.CodeTimeout, err: err, text: fmt.Sprintf(
			"host %q: provision interrupted while installing %s: the host's package manager is let finish its transaction (up to %s) and only then stopped; if the host's apt/dpkg then reports an unfinished transaction, run `dpkg --configure -a` there", p.Host, strings.Join(p.Packages, " "), grace)}
		r.Error = r.Err.Error()
		return r
	}
	if err != nil {
		r.Err = hostError(p, err)
		r.Error = r.Err.Error()
		var pe *proto.Error
		if errors.As(err, &pe) {
			r.Log = pe.Stderr
		}
		return r
	}
	r.Manager, r.LockWait, r.Log = res.Manager, res.LockWait, res.Log
	r.Installed, r.Present, r.Modules = asked(res.Installed, p.Packages), asked(res.Present, p.Packages), asked(res.Modules, p.Modules)
	return r
}

// asked is got without what was not asked for, in got's order, each once.
// What the host says it installed is journaled (state.json, written whole
// at every step) and is what `rlab down --remove-provisioned` removes: only
// what the run asked for is the run's (SECURITY 131: a host's list was
// taken as it came, up to a reply line).
func asked(got, want []string) []string {
	out := []string{}
	for _, g := range got {
		if slices.Contains(want, g) && !slices.Contains(out, g) {
			out = append(out, g)
		}
	}
	return out
}

// Remove removes packages an earlier provision installed (rlab down
// --remove-provisioned).
func Remove(ctx context.Context, c rpc.Caller, host string, fam Family, pkgs []string, o Options) Result {
	r := Result{Host: host, Family: fam, Installed: []string{}}
	res, err := rpc.Invoke(ctx, c, rpc.Provision, proto.ProvisionParams{
		Family: string(fam), Packages: pkgs, Remove: true,
		LockWaitMs: ms(o.LockWait), TimeoutMs: ms(o.Timeout), Retries: o.Retries, GraceMs: ms(o.Grace),
	})
	if err != nil {
		r.Err = hostError(HostPlan{Host: host, Packages: pkgs}, err)
		r.Error = r.Err.Error()
		return r
	}
	r.Manager, r.Installed, r.Log = res.Manager, asked(res.Installed, pkgs), res.Log
	return r
}

func ms(d time.Duration) int { return int(d / time.Millisecond) }

// hostError names the host, the step, the command, its exit code and the
// last lines of the package manager's output.
func hostError(p HostPlan, err error) error {
	var ce *rpc.CallError
	var pe *proto.Error
	if !errors.As(err, &pe) {
		return fmt.Errorf("host %q: provision %s: %w", p.Host, strings.Join(p.Packages, " "), err)
	}
	msg := strings.TrimPrefix(pe.Message, "provision: ")
	s := fmt.Sprintf("host %q: provision: %s", p.Host, msg)
	if errors.As(err, &ce) && ce.Host != "" && ce.Host != p.Host {
		s = fmt.Sprintf("host %q: provision: %s", ce.Host, msg)
	}
	if len(pe.Command) > 0 {
		s += fmt.Sprintf("\n  command: %s (exit %d)", strings.Join(pe.Command, " "), pe.ExitCode)
	}
	if tail := lastLines(pe.Stderr, 6); tail != "" {
		s += "\n  " + strings.ReplaceAll(tail, "\n", "\n  ")
	}
	return &Error{Host: p.Host, Code: pe.Code, text: s, err: err}
}

// Error is one host's provisioning failure.
type Error struct {
	Host string
	Code string // proto.Code*: not_found (a package the repositories lack), no_space, timeout (lock, interrupt), permission, command
	text string
	err  error
}

func (e *Error) Error() string { return e.text }
func (e *Error) Unwrap() error { return e.err }

// lastLines is the last n non-comment lines of s (the manager's verdict
// comes last).
func lastLines(s string, n int) string {
	var keep []string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		l = strings.TrimRightFunc(l, unicode.IsSpace)
		if l == "" || strings.HasPrefix(l, "# ") || strings.HasPrefix(l, "$ ") {
			continue
		}
		keep = append(keep, l)
	}
	if len(keep) > n {
		keep = keep[len(keep)-n:]
	}
	return strings.Join(keep, "\n")
}
