// Package lab turns lab files (HCL) into a typed, fully expanded model plus
// hcl.Diagnostics. Loading has no side effects beyond reading the lab files
// and the files a lab reads with file(); it never touches a host. Variables,
// locals, for_each and count are evaluated in one phase (Load), so every
// consumer sees concrete hosts, rxe devices, captures and workloads. A
// workload block's schema is what every workload has; the rest is its tool
// family's, reached through the family's registered value (family.go).
//
// It must not import the run engine, SSH, the agent or a tool family (the
// descriptors' core package kinds, a standard-library leaf, and
// kinds/toolopts, the options families share, are allowed): it is the
// contract those packages build on (internal/archtest checks it).
package lab

import (
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/rlab-dev/rlab/kinds"
	"github.com/zclconf/go-cty/cty"
)

// LoadOptions carries the values given to a lab from outside its files.
type LoadOptions struct {
	Vars     map[string]string // -var k=v (raw strings, parsed per the variable's type)
	VarFiles []string          // -var-file
	Env      []string          // os.Environ() for RLAB_VAR_name
	// Confined reads the lab's files as a run directory's (engine/rundir):
	// a regular file within its folder, no symlink out of it, no FIFO. For
	// a lab/ copy in a run directory received from someone else, which
	// rlab report loads and shows.
	Confined bool
}

// Lab is one loaded, expanded and validated lab.
type Lab struct {
	Name, Description string
	Dir               string            // folder the lab was loaded from; file() paths are relative to it
	Files             map[string][]byte // source of every lab file loaded (for the run dir and diagnostics); -var-files are left out, as they often hold secrets
	Hosts             []*Host           // file order, instances expanded
	Devices           []*Device
	Captures          []*Capture
	Workloads         []*Workload      // file order
	Impairs           []*Impair        // link impairments (impair.go), file order
	Programs          []*kinds.Source  // program blocks (program.go), file order
	Groups            []*Group         // workloads that run together (group.go)
	Sensitive         []string         // values of sensitive variables (for redaction)
	Variables         []*Variable      // declared variables with their final values
	EmptyExpansions   []EmptyExpansion // count / for_each that made no instance (empty.go)
	Range             hcl.Range        // the lab block's definition range
	// Hidden are the default expressions of sensitive variables in Files:
	// Source blanks them, so a diagnostic's source lines and the run's
	// copy of the lab never show a default as written (a heredoc a line
	// at a time, a long line cut around it), which no redactor of the
	// value matches.
	Hidden []hcl.Range

	meter *budget // the load's budget, which expect conditions keep drawing on
}

// Variable is a declared input variable with the value it ended up with.
type Variable struct {
	Name        string
	Description string
	Type        cty.Type
	Sensitive   bool
	Value       cty.Value
	Source      string // "default", "env", "var-file", "var"
	Range       hcl.Range
}

// Host is a machine the lab runs on: reached over SSH, or a local QEMU VM.
type Host struct {
	Name  string // reference form: `server` or `server["ana"]` or `server[0]`
	Slug  string // filesystem-safe unique form: `server`, `server.ana`, `server.0`
	Block string // block label
	Key   string // for_each key or count index, "" if none

	Address      string // DNS name or IP; "" for a VM (the VM engine knows it)
	Port         int    // default 22
	User         string // "" = from ~/.ssh/config, else the local user
	IdentityFile string // "" = ssh-agent and ~/.ssh/config
	KnownHosts   string // "" = ~/.ssh/known_hosts
	Jump         string // "" | "user@host:port" | another host's Name (then JumpHost is set)
	JumpHost     *Host
	Become       bool
	Provision    bool // `rlab run` installs what the lab needs here first (engine/provision)
	VM           *VM  // local QEMU VM form; nil for SSH hosts (then Address is required)
	Range        hcl.Range
}

// VM is the local-VM form of a host: `host "a" { vm { ... } }`.
type VM struct {
	Image       string // "" = the built-in default image; "minimal", a release, "<release>-minimal" (image.RecipeFor)
	Internet    bool   // reaches the network through QEMU's user-mode NAT (default: only its SSH forward)
	MemoryBytes int64  // default 1 GiB
	CPUs        int    // default 1
	BootTimeout time.Duration
	Networks    []VMNetwork // data NICs eth1, eth2... in order
}

// VMNetwork is one data NIC of a VM: `network "LABEL" { name, address, mtu }`.
// VMs naming the same network are linked on one segment. Name is the
// block's name attribute (an expression: "pair-${each.key}" gives each
// for_each instance its own segment), else its label.
type VMNetwork struct {
	Name    string
	Address string // CIDR form, e.g. 10.99.0.1/24
	MTU     int    // default 1500
}

// Device is an RDMA device a workload runs on: a Soft-RoCE (rxe) or
// soft-iWARP (siw) device rlab creates on a host's netdev, or an existing
// device (rdma block) rlab only uses.
type Device struct {
	Name   string // reference form, like Host.Name
	Slug   string
	Block  string // the block: "rxe", "siw" or "rdma"
	Device string // the device name: `name` attribute, default "<kind>_<netdev>"; rdma: `device`
	Host   *Host
	Netdev string // rxe, siw: the netdev to create it on; rdma: ""
	Port   int    // the device port to use (1; rdma: `port`)
	Keep   bool   // rdma: always (rlab never deletes a device it did not create)
	Range  hcl.Range
}

// Found reports whether the device exists before the run (an rdma block):
// rlab uses it and never deletes it.
func (r *Device) Found() bool { return r.Block == "rdma" }

// IWARP reports whether the device is known, at load time, to speak iWARP
// (siw). An rdma block's transport is known only from the host's facts.
func (r *Device) IWARP() bool { return r.Block == "siw" }

// Capture is a bounded packet capture on a host's netdev.
type Capture struct {
	Name, Slug string
	Host       *Host
	Netdev     string
	Filter     string      // a pcap filter (a named one expanded: NamedFilters)
	FilterName string      // "roce-cm", "roce-data", "iwarp" when the lab named one
	Snaplen    int         // default 128
	MaxBytes   int64       // default 256 MiB
	During     []*Workload // empty = whole run on that host
	Range      hcl.Range
}

// Workload is one tool run between two sides (or one command, for exec).
type Workload struct {
	// Workload is its names, tool (see Tools) and option values: the type
	// steps.Workload embeds too, handed to it whole.
	kinds.Workload

	ServerDevice, ClientDevice *Device // RDMA tools
	ServerHost, ClientHost     *Host   // always set for 2-sided tools

	Host *Host // exec

	Expects []*Expect
	Range   hcl.Range
}

// Hosts returns the hosts a workload runs on: server then client, or the
// exec host.
func (w *Workload) Hosts() []*Host {
	if w.Host != nil {
		return []*Host{w.Host}
	}
	if w.ServerHost == w.ClientHost {
		return []*Host{w.ServerHost}
	}
	return []*Host{w.ServerHost, w.ClientHost}
}

// Expect is a condition over a workload's result.
type Expect struct {
	Condition hcl.Expression // over result.<attr>
	Message   string
	Range     hcl.Range

	ctx   *hcl.EvalContext // var, local, each, count of the workload instance
	attrs []string         // result attributes of the workload's tool
}

// HostByName returns the host with reference name n (`server["ana"]`), or nil.
func (l *Lab) HostByName(n string) *Host {
	for _, h := range l.Hosts {
		if h.Name == n {
			return h
		}
	}
	return nil
}

// DeviceByName returns the rxe with reference name n, or nil.
func (l *Lab) DeviceByName(n string) *Device {
	for _, r := range l.Devices {
		if r.Name == n {
			return r
		}
	}
	return nil
}

// WorkloadByName returns the workload with reference name n, or nil.
func (l *Lab) WorkloadByName(n string) *Workload {
	for _, w := range l.Workloads {
		if w.Name == n {
			return w
		}
	}
	return nil
}

// CaptureByName returns the capture with reference name n, or nil.
func (l *Lab) CaptureByName(n string) *Capture {
	for _, c := range l.Captures {
		if c.Name == n {
			return c
		}
	}
	return nil
}
