package kinds

import (
	"fmt"
	"strconv"
)

// A tool's command lines are written once, by its family's argv hook
// (Argver), and called once per run: engine/plan resolves every trial of
// a workload into the argv its steps will run (PlanTrials), and the
// family's op runs exactly those (steps.Workload.Trials). What only the
// run can know (a device's GID index, the pair's path MTU, the server's
// data address: the device-create steps report them) the plan holds as a
// named placeholder, shown as {server.gid}; the op fills the real value
// in the same place (Fill, fill.go), and adds only what the plan cannot
// know at all (perftest: --out_json, per the client host's facts).

// Value is one value of a command line: a resolved value ("3"), a
// placeholder the run fills (PathMTU), or "" when there is none (the
// option is left out).
type Value string

// The placeholders of what device-create steps report at run time. In an
// argv a placeholder is its name between two NULs, as a program's self.*
// is (SelfRef): no argument the kernel passes can hold a NUL, so no
// literal text of a lab (an awk '{print $1}', an echo {x}) is ever taken
// for one. Show prints them as {server.gid}; Fill replaces them.
const (
	ServerGID  Value = selfMark + "server.gid" + selfMark  // the server device's GID index
	ClientGID  Value = selfMark + "client.gid" + selfMark  // the client device's GID index
	PathMTU    Value = selfMark + "mtu" + selfMark         // the smaller active MTU of the two devices
	ServerAddr Value = selfMark + "server.addr" + selfMark // the IPv4 address of the server device's netdev (tcp: of the rxe it dials)
	// The devices' names on their hosts: the lab's name, or the name of
	// an rxe or siw already on the netdev that rxe.ensure reuses. A plan
	// shows the lab's names (ShowAs); the run fills what the host reported.
	ServerDev Value = selfMark + "server.dev" + selfMark
	ClientDev Value = selfMark + "client.dev" + selfMark
)

// Int is n as a Value: "" for 0, which leaves the option out.
func Int(n int) Value {
	if n == 0 {
		return ""
	}
	return Value(strconv.Itoa(n))
}

// Trial is one run of a workload's tool: one message size × one repeat,
// what a workload op runs once and the plan resolves.
type Trial struct {
	Size   int64 // 0: the tool's default size, or a kind without sizes
	Repeat int
	N      int // 0-based position over all trials, for ports and handles
}

// String names the trial for messages: "size 1MiB, repeat 2".
func (u Trial) String() string {
	if u.Size == 0 {
		return fmt.Sprintf("repeat %d", u.Repeat+1)
	}
	return fmt.Sprintf("size %s, repeat %d", SizeText(u.Size), u.Repeat+1)
}

// Trials lists w's trials in order: each size (sizes nil: one unsized
// run) × each repeat.
func Trials(w *Workload, sizes []int64) []Trial {
	if len(sizes) == 0 {
		sizes = []int64{0}
	}
	reps := max(w.Repeat, 1)
	var us []Trial
	for _, size := range sizes {
		for rep := 0; rep < reps; rep++ {
			us = append(us, Trial{Size: size, Repeat: rep, N: len(us)})
		}
	}
	return us
}

// Ports: each workload owns a block of PortsPerWorkload ports from
// BasePort, so workloads running at the same time never share one and a
// capture filter can name it.
const PortsPerWorkload = 10

// BasePort is where the first workload's block starts. A variable only so
// that each test binary that runs workloads on this machine's loopback
// takes a free block of its own (kinds/kindstest.UseFreePorts): two such
// binaries at once both listened on 20000 and 20010 ("address already in
// use"). rlab never changes it.
var BasePort = DefaultBasePort

// DefaultBasePort is BasePort as rlab runs.
const DefaultBasePort = 20000

// PortFor is the deterministic port of trial n of a workload at file
// position index whose ports start at first (0: its block from BasePort).
func PortFor(index, first, n int) int {
	if first != 0 {
		return first + n%PortsPerWorkload
	}
	return BasePort + PortsPerWorkload*index + n%PortsPerWorkload
}

// End is one side of a two-sided RDMA tool as its command names it.
type End struct {
	// Device is the device's name on its host (ibdev); PlanTrials makes
	// it ServerDev or ClientDev, which the run fills with the name the
	// host reported.
	Device string
	GID    Value // its GID index
	// Port is the device port (-i), told only when not 1 (an rdma block's
	// port).
	Port int
	// Transport is the device's, when known ("iWARP" connects QPs only
	// through the RDMA CM, which the family's hook then asks for).
	Transport string
}

// ArgvIn is everything a family's command lines depend on for one trial.
type ArgvIn struct {
	W     *Workload
	Trial Trial
	Port  int // the trial's port (PortFor)
	// Server and Client are the two RDMA ends (RDMA tools).
	Server, Client End
	MTU            Value // the pair's path MTU ("": the tool's own)
	Addr           Value // the server's data address, which the client dials
	// Emulated: an end is an emulated (TCG) guest, so a tool that can
	// raises its RC QP timeout (kinds/qptimeout.go).
	Emulated bool
}

// Argver is a family's argv hook: the command lines of the server and
// the client for one trial. A tool that runs one command on one host
// (exec, a program on host) has no server: server is nil and client is
// that command, the side whose end is the workload's end. It is pure (no
// host, no facts): engine/plan calls it, with placeholders; the family's
// op runs what it returned with those filled, so the two cannot disagree.
type Argver interface {
	Argv(in ArgvIn) (server, client []string)
}

// ArgvOf is the argv of one trial of a workload of tool, through the hook
// of the family that registered it; ok is false when the family has none.
func ArgvOf(in ArgvIn) (server, client []string, ok bool) {
	k, found := KindOf(in.W.Tool)
	if !found {
		return nil, nil, false
	}
	a, can := k.(Argver)
	if !can {
		return nil, nil, false
	}
	server, client = a.Argv(in)
	return server, client, true
}
