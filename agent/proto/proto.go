// Package proto defines the wire protocol between the rlab controller and the
// rlab-agent it ships to every host: newline-delimited JSON over the agent's
// stdin/stdout (one SSH session). It is shared by both sides and must import
// nothing but the standard library (internal/archtest checks it).
//
// The conversation:
//
//  1. The agent writes one Hello line first. Anything a login script printed
//     to stdout before it is skipped by the controller (bounded), so the hello
//     starts with Magic.
//  2. The controller sends Request lines; each carries a unique ID.
//  3. The agent answers each request with exactly one Response line (Result or
//     Error), possibly preceded by Event lines carrying the same ID (progress,
//     log lines, readiness).
//
// stdout carries the protocol only; the agent's own log (log/slog) goes to
// stderr. When stdin closes the agent stops every process it started and
// undoes what it created, unless it was told to keep it.
//
// One agent process can serve several clients in turn (a connection pool
// keeps it, as ssh's ControlPersist keeps a login): a Release request ends
// one client's lease without ending the agent. The agent undoes exactly what
// it undoes when stdin closes — it cancels every request in flight, stops
// every process, capture and TCP listener it started and deletes the rxe
// devices it created — and then keeps serving. Its guarantees on the wire:
//
//   - Every Event and Response of a request sent before the release line is
//     written before the release's Response: that Response is the last line
//     of the lease. (A request cancelled by the release is still answered,
//     with its result or an error.)
//   - A request sent after the release line is not read, let alone started,
//     until the release's Response has been written; it belongs to the next
//     lease, which starts clean: no processes, every handle free.
//   - No second Hello: the next client is given the first one.
//   - Release deletes no files: what the lease wrote in the work dir stays
//     (a later lease reusing a handle overwrites that handle's files).
package proto

import (
	"encoding/json"
	"time"
)

// Magic starts every hello line.
const Magic = "rlab-agent"

// Version is the protocol version. Bump on any incompatible change; the
// controller refuses an agent speaking another version.
const Version = 1

// MaxLine bounds one protocol line in either direction. A peer sending a longer
// line is broken or hostile and the connection is dropped.
const MaxLine = 8 << 20

// Hello is the first line the agent writes.
type Hello struct {
	Magic        string `json:"magic"`
	Proto        int    `json:"proto"`
	Hash         string `json:"hash"`    // sha256 of the agent binary, hex
	Version      string `json:"version"` // build version string
	PID          int    `json:"pid"`
	UID          int    `json:"uid"`
	WorkDir      string `json:"work_dir"` // per-run directory the agent writes into (0700)
	ProcIdentity        // the agent process's own
}

// Request is one call from the controller.
type Request struct {
	ID     uint64          `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

// Response is the single final answer to a Request.
type Response struct {
	ID     uint64          `json:"id"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *Error          `json:"error,omitempty"`
}

// Event is streamed for a request before its Response. Kind is one of the
// Event* constants.
type Event struct {
	ID    uint64          `json:"id"`
	Event string          `json:"event"`
	Data  json.RawMessage `json:"data,omitempty"`
}

// A line from the agent is an Event when it has an "event" member, else a
// Response. Envelope decodes either.
type Envelope struct {
	ID     uint64          `json:"id"`
	Event  string          `json:"event,omitempty"`
	Data   json.RawMessage `json:"data,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *Error          `json:"error,omitempty"`
}

const (
	EventLog      = "log"      // Data: {"msg": "..."}
	EventProgress = "progress" // Data: {"done": n, "total": m}
	EventReady    = "ready"    // Data: ProcReady; a started process became ready
)

// Error is a failed request. Code is one of the Code* constants so the
// controller can branch on it; Message is for humans.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Command, ExitCode and Stderr are set when a host command failed, so the
	// controller can name the command, its exit code and its stderr.
	Command  []string `json:"command,omitempty"`
	ExitCode int      `json:"exit_code,omitempty"`
	Stderr   string   `json:"stderr,omitempty"`
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

const (
	CodeBadRequest  = "bad_request" // malformed params
	CodeUnknown     = "unknown_method"
	CodeNotFound    = "not_found"   // no such netdev, device, process, file
	CodeExists      = "exists"      // e.g. a process handle already in use
	CodePermission  = "permission"  // needs root (become)
	CodeNoModule    = "no_rxe"      // kernel has no rdma_rxe (or no siw, for a siw device)
	CodeNoSpace     = "no_space"    // not enough free disk
	CodeTimeout     = "timeout"     // a wait or readiness check timed out
	CodeCommand     = "command"     // a command the agent ran failed
	CodeUnsupported = "unsupported" // the host cannot do this
	CodeInternal    = "internal"
	CodeBusy        = "busy" // a lease asked for while a client is being served
)

// Methods.
const (
	MethodPing         = "ping"          // -> Pong
	MethodFacts        = "facts"         // FactsParams (optional) -> Facts
	MethodDeviceEnsure = "rxe.ensure"    // DeviceEnsureParams -> DeviceInfo
	MethodDeviceDelete = "rxe.delete"    // DeviceDeleteParams -> DeviceDeleteResult
	MethodRDMAUse      = "rdma.use"      // RDMAUseParams -> DeviceInfo (an existing device; nothing is created)
	MethodProcStart    = "proc.start"    // ProcStartParams -> ProcStarted (after readiness)
	MethodProcWait     = "proc.wait"     // ProcWaitParams -> ProcResult
	MethodProcStop     = "proc.stop"     // ProcStopParams -> ProcResult
	MethodCaptureStart = "capture.start" // CaptureStartParams -> CaptureStarted
	MethodCaptureStop  = "capture.stop"  // CaptureStopParams -> CaptureResult
	MethodTCPServe     = "tcp.serve"     // TCPServeParams -> TCPServing
	MethodTCPSend      = "tcp.send"      // TCPSendParams -> TCPResult
	MethodTCPWait      = "tcp.wait"      // TCPWaitParams -> TCPResult (server side)
	MethodFilesList    = "files.list"    // FilesListParams -> FilesList
	MethodFilesRead    = "files.read"    // FilesReadParams -> FileData (small files: perftest JSON, logs)
	MethodFilesWrite   = "files.write"   // FilesWriteParams -> FileWritten (a program's source, shipped)
	MethodCleanup      = "cleanup"       // CleanupParams -> CleanupResult
	// MethodRelease ends the current client's lease and keeps the agent
	// serving (see the package comment): no params (any are ignored) ->
	// CleanupResult of everything the lease left running, with empty lists,
	// not null, when there was nothing. Rxe devices a cleanup was told to
	// keep stay.
	MethodRelease = "release"
	// MethodLease re-targets the agent at one client's run: LeaseParams ->
	// LeaseResult. Valid only as the first request the agent reads after
	// its start or after a release (CodeBusy otherwise), so nothing of an
	// earlier client is running. The new work dir is not the caller's to
	// name: it is the agent's runs base (the folder holding the run folder
	// of its start work dir, .../runs/<run>/<host> -> .../runs) joined with
	// the new run id and the start work dir's last element, created 0700
	// (owned by --owner) as at start. Everything the agent writes from then
	// on goes there, and files.* are confined to it. Agents from before it
	// answer CodeUnknown.
	MethodLease = "lease"
	// MethodWatchdog arms the agent's watchdog for the current lease:
	// WatchdogParams -> WatchdogParams (the limit in force). Once armed,
	// an agent that reads no line for LimitMs (its controller's network
	// gone: a laptop lid, a VPN drop; sshd keeps the session for hours)
	// undoes everything the lease started, as at the end of its input,
	// writes WatchdogFile in its work dir and exits. The controller pings
	// (MethodPing) well within the limit for the whole run. LimitMs 0
	// disarms; a release disarms too. Agents from before it answer
	// CodeUnknown.
	MethodWatchdog = "watchdog"
)

// WatchdogParams set the agent's watchdog (MethodWatchdog).
type WatchdogParams struct {
	LimitMs int64 `json:"limit_ms"` // 0: off; else at least 1000
}

// WatchdogFile is what an agent whose watchdog fired writes in its work
// dir (a WatchdogRecord): `rlab down` reads it to say what the agent had
// already undone.
const WatchdogFile = "watchdog.json"

// WatchdogRecord is WatchdogFile's content.
type WatchdogRecord struct {
	At       time.Time     `json:"at"`
	SilentMs int64         `json:"silent_ms"` // how long it had read nothing
	LimitMs  int64         `json:"limit_ms"`
	Undone   CleanupResult `json:"undone"`
}

// LeaseParams name the run a lease is for.
type LeaseParams struct {
	RunID string `json:"run_id"` // [A-Za-z0-9._-]{1,200}, not "." or ".."
}

// LeaseResult is what a lease changes of the hello.
type LeaseResult struct {
	WorkDir string `json:"work_dir"`
}

type Pong struct {
	Time int64 `json:"time_unix_nano"`
}

// FactsParams are facts' optional parameters.
type FactsParams struct {
	// Refresh asks every tool its version again instead of taking the
	// answer the agent cached for an unchanged binary, and rewrites the
	// cache.
	Refresh bool `json:"refresh,omitempty"`
	// Probe lists the programs to look for and how to ask each its
	// version. The controller sends the list its tool families declare
	// (kinds.Programs, engine/remote.FactsParams), so a tool's descriptor
	// is compiled into the controller only and editing it never changes the
	// agent's hash. Empty (an older controller, a bare call in a test):
	// DefaultProbes.
	Probe []Probe `json:"probe,omitempty"`
	// Packages are package names (pkgNameRE's shape) whose installed state
	// the controller asks (Facts.Packages): what a lab's program blocks
	// need to build, named by preflight when missing. Every family's names
	// may come: the host answers from its own package database.
	Packages []string `json:"packages,omitempty"`
}

// Probe is one program facts looks for (Facts.Tools).
type Probe struct {
	Name string `json:"name"`
	// Args run the program to ask its version; Pattern finds the version
	// in the output (first submatch, else the whole match).
	Args    []string `json:"args,omitempty"`
	Pattern string   `json:"pattern,omitempty"`
	// From names the program whose version stands for this one (perftest's
	// binaries come in one package).
	From string `json:"from,omitempty"`
	// RDMACore: no version option; the version is rdma-core's, which
	// libibverbs carries in its file name.
	RDMACore bool `json:"rdma_core,omitempty"`
	// PerftestHelp: the program's --help says whether perftest writes
	// --out_json files (Facts.PerftestJSON).
	PerftestHelp bool `json:"perftest_help,omitempty"`
	// HelpFlags (with PerftestHelp) are the options whose presence in that
	// --help the controller asks about (Facts.PerftestFlags).
	HelpFlags []string `json:"help_flags,omitempty"`
}

// DefaultProbes are the programs facts looks for when a request names none:
// the helpers every host's set-up uses, no workload tool. kinds' helper
// programs say the same (engine/remote's TestDefaultProbesAreHelpers).
var DefaultProbes = []Probe{
	{Name: "rdma", Args: []string{"-V"}, Pattern: `[0-9]+(?:\.[0-9]+)+`}, // rdma utility, iproute2-6.1.0
	{Name: "ibv_devinfo", RDMACore: true},
	{Name: "ibv_devices", RDMACore: true},
	{Name: "tcpdump", Args: []string{"--version"}, Pattern: `[0-9]+(?:\.[0-9]+)+`}, // tcpdump version 4.99.3
	{Name: "modprobe", Args: []string{"--version"}, Pattern: `kmod version ([0-9][0-9.]*)`},
}

// Facts is what a host can do. Every field is read, never guessed; a field
// the agent could not read is left empty and named in Errors.
type Facts struct {
	Hostname string       `json:"hostname"`
	Kernel   string       `json:"kernel"` // uname -r
	OS       string       `json:"os"`     // os-release PRETTY_NAME
	Arch     string       `json:"arch"`   // uname -m
	CPUs     int          `json:"cpus"`
	MemBytes uint64       `json:"mem_bytes"`
	User     string       `json:"user"`
	UID      int          `json:"uid"`
	Root     bool         `json:"root"` // agent runs with euid 0 (directly or via become)
	Netdevs  []Netdev     `json:"netdevs"`
	RDMA     []RDMADevice `json:"rdma_devices"`
	// RXEModule: "loaded", "builtin", "loadable" (a module file exists for the
	// running kernel), or "absent".
	RXEModule string `json:"rxe_module"`
	// SIWModule is the same for siw, the soft-iWARP driver.
	SIWModule string `json:"siw_module,omitempty"`
	// NetemModule: sch_netem (link impairments), as RXEModule, or "unknown"
	// when the host has no module lists or kernel config to read.
	NetemModule string `json:"netem_module,omitempty"`
	// Tools maps a program the request probed (FactsParams.Probe: rdma,
	// ibv_devinfo, tcpdump and every registered tool family's programs) to
	// where it is and its version; absent ones are missing.
	Tools Tools `json:"tools"`
	// PerftestJSON is true when the installed perftest accepts --out_json.
	PerftestJSON bool `json:"perftest_json"`
	// PerftestFlags are the options of Probe.HelpFlags the installed
	// perftest's --help lists (--write_with_imm: perftest 24.01 and later).
	PerftestFlags []string `json:"perftest_flags,omitempty"`
	// PackageDB is the package database FactsParams.Packages were looked
	// up in, "dpkg" (dpkg-query) or "rpm"; "" when none was asked or the
	// host has neither. Packages are those of them installed.
	PackageDB string   `json:"package_db,omitempty"`
	Packages  []string `json:"packages,omitempty"`
	// MemlockSoft/Hard are RLIMIT_MEMLOCK in bytes; -1 means unlimited.
	MemlockSoft int64  `json:"memlock_soft"`
	MemlockHard int64  `json:"memlock_hard"`
	WorkDir     string `json:"work_dir"`
	FreeBytes   uint64 `json:"work_dir_free_bytes"`
	// ProcTracking says how the agent keeps what a workload forks:
	// "cgroup" (a cgroup v2 per workload, stopped with cgroup.kill, setsid
	// and daemons included) or "process-group" (what leaves the group,
	// e.g. with setsid, can outlive the run).
	ProcTracking string `json:"proc_tracking,omitempty"`
	// Platform is the machine the host is: hypervisor, DMI, CPU,
	// distribution and rdma-core, for the report and results metadata.
	Platform Platform `json:"platform"`
	Errors   []string `json:"errors,omitempty"`
}

// Platform is what a host runs on, read from sysfs and /proc (no program
// is run). Fields the host does not expose stay empty.
type Platform struct {
	// Virtualization is the hypervisor in systemd-detect-virt's words
	// (none, kvm, qemu, xen, microsoft, vmware, oracle, amazon, google,
	// bochs, parallels, bhyve, apple, vm-other), or "" when unknown.
	Virtualization string `json:"virtualization,omitempty"`
	// Vendor, Product and Version are DMI's sys_vendor, product_name and
	// product_version: on EC2 "Amazon EC2" and the instance type
	// ("c5.large"), on GCE "Google" and "Google Compute Engine", on Azure
	// "Microsoft Corporation" and "Virtual Machine".
	Vendor  string `json:"vendor,omitempty"`
	Product string `json:"product,omitempty"`
	Version string `json:"version,omitempty"`
	// CPUModel is /proc/cpuinfo's first "model name" (x86; arm64 has none).
	CPUModel string `json:"cpu_model,omitempty"`
	// DistroID, DistroIDLike and DistroVersion are os-release's ID,
	// ID_LIKE (space-separated there) and VERSION_ID.
	DistroID      string   `json:"distro_id,omitempty"`
	DistroIDLike  []string `json:"distro_id_like,omitempty"`
	DistroVersion string   `json:"distro_version,omitempty"`
	// RDMACore is the rdma-core release the installed libibverbs comes
	// from ("44.0"), read from its file name libibverbs.so.1.<abi>.<release>.
	RDMACore string `json:"rdma_core,omitempty"`
}

type Netdev struct {
	Name   string `json:"name"`
	MTU    int    `json:"mtu"`
	State  string `json:"state"` // operstate: up, down, unknown...
	MAC    string `json:"mac,omitempty"`
	Driver string `json:"driver,omitempty"`
	// SpeedMbps is the link speed sysfs reports in Mb/s; 0 when the
	// driver reports none (virtual devices, a link that is down).
	SpeedMbps int `json:"speed_mbps,omitempty"`
	// PCIID is the PCI vendor:device id of the NIC ("8086:1572",
	// "1af4:1041" for virtio-net), empty for devices not on PCI.
	PCIID string   `json:"pci_id,omitempty"`
	Addrs []string `json:"addrs,omitempty"` // CIDR notation
}

type RDMADevice struct {
	Name   string `json:"name"`
	Driver string `json:"kind"`             // "rxe", "siw" or "hw"
	Parent string `json:"parent,omitempty"` // netdev, for rxe
	// NodeType is sysfs node_type without its number: "CA" (InfiniBand and
	// RoCE adapters, rxe) or "RNIC" (iWARP: siw, irdma in iWARP mode, cxgb4).
	NodeType string `json:"node_type,omitempty"`
	// Netdevs are the network interfaces of a hardware device (sysfs
	// device/net/*); rxe has Parent, siw the netdev its GUID is made from.
	Netdevs      []string   `json:"netdevs,omitempty"`
	NodeGUID     string     `json:"node_guid,omitempty"`
	SysImageGUID string     `json:"sys_image_guid,omitempty"`
	Ports        []RDMAPort `json:"ports"`
}

type RDMAPort struct {
	Port      int    `json:"port"`
	State     string `json:"state"`      // e.g. "ACTIVE"
	PhysState string `json:"phys_state"` // e.g. "LINK_UP"
	ActiveMTU int    `json:"active_mtu"` // bytes: 256..4096
	MaxMTU    int    `json:"max_mtu"`
	LinkLayer string `json:"link_layer,omitempty"`
	// Rate is sysfs rate as the kernel words it ("100 Gb/sec (4X EDR)").
	Rate string `json:"rate,omitempty"`
	// LID is the port's InfiniBand local identifier (0 on Ethernet ports).
	LID  int   `json:"lid,omitempty"`
	GIDs []GID `json:"gids,omitempty"` // non-zero entries only
}

type GID struct {
	Index  int    `json:"index"`
	GID    string `json:"gid"`
	Type   string `json:"type"` // "RoCE v2", "IB/RoCE v1"
	Netdev string `json:"netdev,omitempty"`
}

type Tool struct {
	Path    string `json:"path"`
	Version string `json:"version,omitempty"`
}

type DeviceEnsureParams struct {
	Name   string `json:"name"`   // e.g. rxe_eth1
	Netdev string `json:"netdev"` // e.g. eth1
	// Type is the software device's link type: "rxe" (the default) or
	// "siw", as `rdma link add NAME type TYPE netdev DEV` takes it.
	Type string `json:"type,omitempty"`
	// WaitMs bounds the wait for the port to become ACTIVE.
	WaitMs int `json:"wait_ms,omitempty"`
}

// DeviceInfo describes a ready rxe device.
type DeviceInfo struct {
	Name      string `json:"name"`
	Netdev    string `json:"netdev"`
	Created   bool   `json:"created"` // false: it existed already and is not ours
	Port      int    `json:"port"`
	GIDIndex  int    `json:"gid_index"` // the RoCE v2 GID mapping the netdev's IPv4 address
	GID       string `json:"gid"`
	IPv4      string `json:"ipv4"`
	ActiveMTU int    `json:"active_mtu"`
	NodeGUID  string `json:"node_guid,omitempty"`
	// Driver is the device's driver as facts report it ("rxe", "siw", "hw").
	Driver string `json:"kind,omitempty"`
	// Transport is how the port carries RDMA: "RoCE", "InfiniBand" or
	// "iWARP" (which connects QPs only through the RDMA CM).
	Transport string `json:"transport,omitempty"`
	LID       int    `json:"lid,omitempty"` // InfiniBand ports
}

// RDMAUseParams names an RDMA device rlab did not create (hardware, or an
// rxe/siw an admin made) and the port a workload is to use.
type RDMAUseParams struct {
	Name string `json:"name"`
	Port int    `json:"port"` // 1-based; 0 means 1
}

type DeviceDeleteParams struct {
	Name string `json:"name"`
}

type DeviceDeleteResult struct {
	Deleted bool `json:"deleted"` // false: there was nothing to delete
}

// Ready says how the agent knows a started process is ready. At most one of
// the listeners is asked for (program's either-or sets both ports; IWARP
// qualifies RDMACMListen); none means ready once started.
type Ready struct {
	TCPListen    int `json:"tcp_listen,omitempty"`     // a TCP socket of the process listens on this port
	RDMACMListen int `json:"rdma_cm_listen,omitempty"` // an rdma_cm id listens on this port
	// IWARP, with RDMACMListen: the listening device is iWARP (siw), whose
	// rdma_cm listener is a kernel TCP socket on the same port that can
	// come up after the cm_id already shows LISTEN (a client then gets
	// "Connection refused"). Ready only once a TCP socket of any owner
	// (the kernel's: no process holds it) also listens on that port in the
	// process's network namespace. An agent older than the field ignores
	// it and waits for the cm_id alone, as before (the race stays there).
	IWARP       bool   `json:"iwarp,omitempty"`
	OutputRegex string `json:"output_regex,omitempty"` // stdout or stderr matches
	TimeoutMs   int    `json:"timeout_ms,omitempty"`
}

type ProcStartParams struct {
	Handle    string   `json:"handle"` // caller-chosen, unique per agent
	Argv      []string `json:"argv"`   // never passed through a shell
	Env       []string `json:"env,omitempty"`
	Ready     *Ready   `json:"ready,omitempty"`
	Become    bool     `json:"become,omitempty"`     // keep root; without it a root agent working for a user (--owner) runs the process as that user
	TimeoutMs int      `json:"timeout_ms,omitempty"` // killed after this long (0: no limit)
	// Dir is the process's working directory, a folder of the work dir
	// (relative, local); "" is the work dir itself. A program built there
	// runs as ./server.
	Dir string `json:"dir,omitempty"`
	// Output files are written under the agent's work dir as
	// <Handle>.stdout / <Handle>.stderr.
}

type ProcStarted struct {
	Handle  string `json:"handle"`
	PID     int    `json:"pid"`
	ReadyMs int64  `json:"ready_ms"`
	ProcIdentity
}

// ProcIdentity tells a process from a later one that reuses its pid (pid_max
// 32768 wraps within the hour on a busy host): the kernel's start time of the
// process (field 22 of /proc/<pid>/stat, clock ticks after boot) and the boot
// it belongs to (/proc/sys/kernel/random/boot_id). Zero when the agent could
// not read them (an older agent).
type ProcIdentity struct {
	StartTicks uint64 `json:"start_ticks,omitempty"`
	BootID     string `json:"boot_id,omitempty"`
}

// MethodProcSignal sends SIGTERM to a process the agent did not start (a
// run's, from `rlab down`), only while it is still that process:
// ProcSignalParams -> ProcSignalResult. The agent holds the process by a
// pidfd before it checks it, and signals through that pidfd, so a pid reused
// between the check and the signal is never hit. Agents from before it
// answer CodeUnknown; a kernel without pidfds (before 5.3) CodeUnsupported.
const MethodProcSignal = "proc.signal"

// ProcSignalParams name the process (and its group) to stop.
type ProcSignalParams struct {
	PID int `json:"pid"`
	// ProcIdentity, when set, must match: the same boot and start time.
	ProcIdentity
	// Program, when set, must be the process's: its kernel name (comm)
	// with an identity; without one (a state.json from before start times
	// were recorded), the base of its argv[0].
	Program string `json:"program,omitempty"`
	// Group signals the process group it leads, by the same pidfd, when
	// it leads one; the process alone otherwise.
	Group bool `json:"group,omitempty"`
}

// ProcSignalResult says what proc.signal did. Signalled is false with Gone
// saying why: the process exited ("exited"), its pid is another process's
// now ("reused"), the host rebooted since ("rebooted"), or the process is
// not the program named ("other_program").
type ProcSignalResult struct {
	Signalled bool   `json:"signalled"`
	Group     bool   `json:"group,omitempty"` // its process group was signalled
	Gone      string `json:"gone,omitempty"`
}

// ProcSignalResult.Gone values.
const (
	GoneExited       = "exited"
	GoneReused       = "reused"
	GoneRebooted     = "rebooted"
	GoneOtherProgram = "other_program"
)

type ProcWaitParams struct {
	Handle    string `json:"handle"`
	TimeoutMs int    `json:"timeout_ms,omitempty"`
}

type ProcStopParams struct {
	Handle  string `json:"handle"`
	GraceMs int    `json:"grace_ms,omitempty"` // SIGTERM, then SIGKILL after this
	// Interrupt sends SIGINT (Ctrl-C) first rather than SIGTERM: what a
	// person at the terminal of a tutorial server would do.
	Interrupt bool `json:"interrupt,omitempty"`
}

// ProcResult is a finished process. Stdout/Stderr hold at most OutputLimit
// bytes each (the tail when longer; Truncated says so); the whole output stays
// in the work dir files and is pulled with the artifacts.
type ProcResult struct {
	Handle        string   `json:"handle"`
	Argv          []string `json:"argv"`
	ExitCode      int      `json:"exit_code"` // -1 when killed by a signal
	Signal        string   `json:"signal,omitempty"`
	TimedOut      bool     `json:"timed_out,omitempty"`
	Stopped       bool     `json:"stopped,omitempty"` // ended by proc.stop or cleanup
	StartUnixNano int64    `json:"start_unix_nano"`
	EndUnixNano   int64    `json:"end_unix_nano"`
	Stdout        string   `json:"stdout"`
	Stderr        string   `json:"stderr"`
	Truncated     bool     `json:"truncated,omitempty"`
	StdoutFile    string   `json:"stdout_file"` // relative to the work dir
	StderrFile    string   `json:"stderr_file"`
}

const OutputLimit = 1 << 20

type CaptureStartParams struct {
	Handle   string `json:"handle"`
	Netdev   string `json:"netdev"`
	Filter   string `json:"filter,omitempty"` // one argv element to tcpdump
	Snaplen  int    `json:"snaplen"`
	MaxBytes int64  `json:"max_bytes"`      // bound on all files of this capture
	File     string `json:"file"`           // base name under the work dir, e.g. roce.pcap
	User     string `json:"user,omitempty"` // tcpdump -Z
}

type CaptureStarted struct {
	Handle string `json:"handle"`
	PID    int    `json:"pid"`
	ProcIdentity
}

type CaptureStopParams struct {
	Handle string `json:"handle"`
}

type CaptureResult struct {
	Handle string     `json:"handle"`
	Files  []FileInfo `json:"files"`
	Stderr string     `json:"stderr,omitempty"` // tcpdump's own report ("N packets captured")
	// Tcpdump's final counters: packets written, packets the filter passed,
	// and packets the kernel dropped because tcpdump fell behind (a capture
	// with drops is incomplete).
	Captured int64 `json:"packets_captured"`
	Received int64 `json:"packets_received"`
	Dropped  int64 `json:"packets_dropped"`
}

type TCPServeParams struct {
	Handle string `json:"handle"`
	Addr   string `json:"addr,omitempty"` // listen address; default all
	Port   int    `json:"port,omitempty"` // 0: any free port
}

type TCPServing struct {
	Handle string `json:"handle"`
	Port   int    `json:"port"`
}

type TCPSendParams struct {
	Handle string `json:"handle"`
	Addr   string `json:"addr"`
	Port   int    `json:"port"`
	Bytes  int64  `json:"bytes"`
	// DurationMs, when > 0, sends until that much time has passed (Bytes
	// is then ignored).
	DurationMs int64 `json:"duration_ms,omitempty"`
	TimeoutMs  int   `json:"timeout_ms,omitempty"`
}

type TCPWaitParams struct {
	Handle    string `json:"handle"`
	TimeoutMs int    `json:"timeout_ms,omitempty"`
}

type TCPResult struct {
	Handle  string  `json:"handle"`
	Bytes   int64   `json:"bytes"`
	Seconds float64 `json:"seconds"`
	MiBps   float64 `json:"mib_per_sec"`
	Gbps    float64 `json:"gbit_per_sec"`
	// TotalRetrans is the sender's tcpi_total_retrans (TCP_INFO) at the end
	// of tcp.send: the segments its connection retransmitted. Nil when it
	// could not be read (and on tcp.wait's result).
	TotalRetrans *uint32 `json:"tcpi_total_retrans,omitempty"`
}

type FilesListParams struct {
	Dir string `json:"dir,omitempty"` // relative to the work dir; "" is the work dir
}

type FilesList struct {
	Root  string     `json:"root"` // absolute path of the work dir on the host
	Files []FileInfo `json:"files"`
	// More: files sorting after the last one follow (FilesListOptions).
	More bool `json:"more,omitempty"`
}

// FileInfo names a regular file relative to the work dir. The controller
// treats Path as hostile: it must be local (filepath.IsLocal) or it is refused.
type FileInfo struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	Mode   uint32 `json:"mode"`
}

type FilesReadParams struct {
	Path     string `json:"path"`      // relative to the work dir; must be local
	MaxBytes int64  `json:"max_bytes"` // at most this much (capped at OutputLimit)
}

// FilesWriteParams writes one file of the work dir (a program's source):
// Data replaces the file, or with Append is added to its end (a file sent
// in parts). Folders on the way are made. Mode keeps only the permission
// bits 0755 (an executable script stays one).
type FilesWriteParams struct {
	Path   string `json:"path"` // relative to the work dir; must be local
	Data   []byte `json:"data"` // base64 in JSON; at most FilesWriteLimit
	Mode   uint32 `json:"mode,omitempty"`
	Append bool   `json:"append,omitempty"`
}

// FilesWriteLimit bounds one files.write's data; bigger files come in parts.
const FilesWriteLimit = 1 << 20

type FileWritten struct {
	Path string `json:"path"`
	Size int64  `json:"size"` // the file's size after the write
}

type FileData struct {
	Path      string `json:"path"`
	Size      int64  `json:"size"`
	Data      []byte `json:"data"` // base64 in JSON
	Truncated bool   `json:"truncated,omitempty"`
}

type CleanupParams struct {
	// Keep names rxe devices to leave in place.
	Keep []string `json:"keep,omitempty"`
	// Run, when set (rlab down), also ends what is left in the workload
	// cgroups of that run id (of the agent's user): what an agent killed
	// before its cleanup left behind; a root agent working for a user also
	// removes the capture folders such an agent left in that run's work dir.
	Run string `json:"run,omitempty"`
}

type CleanupResult struct {
	Stopped        []string `json:"stopped"` // process handles
	DevicesDeleted []string `json:"rxe_deleted"`
	Errors         []string `json:"errors,omitempty"`
	// ImpairsRemoved are the netdevs whose netem (rlab's) was removed.
	ImpairsRemoved []string `json:"impairs_removed,omitempty"`
}

// Link impairments (netem), agent/server/impair.go.
const (
	MethodImpairApply  = "impair.apply"  // ImpairParams -> ImpairResult
	MethodImpairRemove = "impair.remove" // ImpairRemoveParams -> ImpairResult
)

// CodeQdiscBusy: the netdev already has a root qdisc someone else set up;
// the agent refuses to replace it.
const CodeQdiscBusy = "qdisc_busy"

// ImpairParams put netem as the root qdisc of a netdev. Percentages are
// 0..100; times in microseconds; RateBytes in bytes per second (0: none).
type ImpairParams struct {
	ID        string  `json:"id"` // the impair block's reference name, for logs and cleanup
	Netdev    string  `json:"netdev"`
	DelayUs   uint32  `json:"delay_us,omitempty"`
	JitterUs  uint32  `json:"jitter_us,omitempty"`
	Loss      float64 `json:"loss,omitempty"`
	Duplicate float64 `json:"duplicate,omitempty"`
	Reorder   float64 `json:"reorder,omitempty"`
	Corrupt   float64 `json:"corrupt,omitempty"`
	RateBytes uint64  `json:"rate_bytes,omitempty"`
	// PerPacket: the lab set loss, duplicate, reorder or corrupt, even to
	// 0 %; the agent sends each packet on its own (gso_max_segs 1) while
	// this netem is in force, as it does for any of them above 0.
	PerPacket bool `json:"per_packet,omitempty"`
}

// ImpairRemoveParams name the netdev whose netem (set by rlab) to remove.
type ImpairRemoveParams struct {
	Netdev string `json:"netdev"`
	// GSOOwn is the netdev's own gso_max_segs as the run's agent reported
	// it (ImpairResult.GSOOwn, journaled): `rlab down` passes it, and an
	// agent that did not set the netem (the run's was killed) gives it
	// back when it finds rlab's netem with gso_max_segs 1. 0: not known,
	// the kernel's default is given back.
	GSOOwn uint32 `json:"gso_own,omitempty"`
}

// ImpairResult says what the netdev's root qdisc is after the call, read
// back from the kernel: Qdisc "netem" with its Handle after an apply; after
// a remove, the kernel's default again (Removed false: there was no netem
// of rlab's to remove).
type ImpairResult struct {
	Netdev  string `json:"netdev"`
	Qdisc   string `json:"qdisc"`             // root qdisc kind, e.g. "netem", "fq_codel", "noqueue"
	Handle  string `json:"handle"`            // e.g. "5241:"
	Netem   string `json:"netem,omitempty"`   // netem's parameters as read back, tc's words
	Removed bool   `json:"removed,omitempty"` // impair.remove: a netem of rlab's was deleted
	// GSO says what the call did to the netdev's gso_max_segs, when it did
	// or could not: 1 while a netem that decides per packet is in force, so
	// it decides per packet and not per GSO burst; the netdev's own value
	// again at removal (empty: nothing to say).
	GSO string `json:"gso,omitempty"`
	// GSOOwn is the netdev's own gso_max_segs as the agent found it before
	// its first netem on it, which it gives back at removal (impair.apply;
	// 0: not known). The run journals it for `rlab down`
	// (ImpairRemoveParams.GSOOwn).
	GSOOwn uint32 `json:"gso_own,omitempty"`
}

// MethodProvision installs packages with the host's own package manager:
// ProvisionParams -> ProvisionResult. It needs root (become); it checks what
// is installed first and installs only the rest, then loads the modules.
const MethodProvision = "provision"

// ProvisionParams say what a host needs installed.
type ProvisionParams struct {
	// Family is the distribution family: "debian" (apt-get), "rhel" (dnf,
	// else yum) or "suse" (zypper).
	Family string `json:"family"`
	// Packages to have installed (names only: [A-Za-z0-9][A-Za-z0-9.+_-]*).
	Packages []string `json:"packages"`
	// Modules to load (modprobe) once the packages are in (rdma_rxe).
	Modules []string `json:"modules,omitempty"`
	// LockWaitMs bounds the wait for another package manager (cloud-init,
	// unattended-upgrades) to release its lock; 0: 2 minutes.
	LockWaitMs int `json:"lock_wait_ms,omitempty"`
	// TimeoutMs bounds the whole call on the host; 0: 10 minutes.
	TimeoutMs int `json:"timeout_ms,omitempty"`
	// Retries of a transient mirror error; 0: 2 (3 attempts).
	Retries int `json:"retries,omitempty"`
	// GraceMs is how long a package manager already installing may finish
	// its transaction after the call is cancelled; 0: 2 minutes.
	GraceMs int `json:"grace_ms,omitempty"`
	// Remove removes Packages instead (rlab down --remove-provisioned).
	Remove bool `json:"remove,omitempty"`
}

// ProvisionResult is what provision did. A failed provision answers an
// Error whose Stderr carries the package manager's output.
type ProvisionResult struct {
	Manager   string   `json:"manager"`             // the program used: apt-get, dnf, yum, zypper
	Installed []string `json:"installed"`           // installed by this call (removed, with Remove)
	Present   []string `json:"present"`             // already installed: left alone
	Modules   []string `json:"modules,omitempty"`   // loaded by this call
	Updated   bool     `json:"updated,omitempty"`   // the package index was refreshed
	LockWait  string   `json:"lock_wait,omitempty"` // who held the lock, and for how long it was waited for
	Log       string   `json:"log"`                 // the commands run and their output (bounded)
}

// MethodCountersRead reads the kernel's own counters of RDMA devices and
// netdevs from sysfs: CountersReadParams -> Counters. Read-only; needs no
// privilege on the kernels rlab knows (the files are 0444).
const MethodCountersRead = "counters.read"

// CountersReadParams name what to read. Names are checked by the agent:
// one sysfs path element each.
type CountersReadParams struct {
	// RDMA are RDMA device names (rxe_eth1, mlx5_0): their port counters
	// (ports/N/counters), port hw_counters (ports/N/hw_counters) and device
	// hw_counters (hw_counters), whichever the device has.
	RDMA []string `json:"rdma,omitempty"`
	// Netdevs are netdev names: their statistics (rx_packets, tx_dropped...).
	Netdevs []string `json:"netdevs,omitempty"`
	// Route, when set, adds the netdev that carries traffic to this address
	// (an address or host name): the netdev holding it when it is one of
	// this host's addresses, else the one the route to it leaves by.
	Route string `json:"route,omitempty"`
}

// Counter sources: which sysfs folder a counter came from.
const (
	CounterPort     = "counters"           // /sys/class/infiniband/DEV/ports/N/counters: the IB PortCounters
	CounterPortHW   = "hw_counters"        // /sys/class/infiniband/DEV/ports/N/hw_counters: the driver's own
	CounterDeviceHW = "device_hw_counters" // /sys/class/infiniband/DEV/hw_counters: the driver's, device-wide
	CounterNetdev   = "statistics"         // /sys/class/net/NETDEV/statistics
)

// CounterValue is one counter as read.
type CounterValue struct {
	Device string `json:"device"`         // RDMA device or netdev
	Port   int    `json:"port,omitempty"` // RDMA port; 0 for device-wide and netdev counters
	Source string `json:"source"`         // Counter* constant
	Name   string `json:"name"`           // the kernel's file name, e.g. rcvd_seq_err
	Value  uint64 `json:"value"`
}

// CounterUnreadable is a counter, or a whole folder of them (Name empty),
// that could not be read: never reported as zero.
type CounterUnreadable struct {
	Device string `json:"device"`
	Port   int    `json:"port,omitempty"`
	Source string `json:"source"`
	Name   string `json:"name,omitempty"`
	// Absent: the device has no such folder (rxe has no IB PortCounters),
	// as opposed to one it has but could not read.
	Absent bool   `json:"absent,omitempty"`
	Reason string `json:"reason"`
}

// Counters is one reading.
type Counters struct {
	TimeUnixNano int64               `json:"time_unix_nano"`
	Values       []CounterValue      `json:"values"`
	Unreadable   []CounterUnreadable `json:"unreadable,omitempty"`
	// RouteNetdev is the netdev Route resolved to ("" when none was asked
	// or it could not be found: then Unreadable says why).
	RouteNetdev string `json:"route_netdev,omitempty"`
}
