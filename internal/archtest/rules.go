package archtest

// Module is rlab's module path. Paths in Rules are relative to it
// ("engine/plan"); a path whose first element has a dot is another module's
// package ("golang.org/x/crypto/ssh"); any other is the standard library's
// ("os/exec"). "p/..." is p and every package below it; "..." alone is
// every rlab package.
const Module = "github.com/rlab-dev/rlab"

// A Rule is what one package (or, with "/...", a tree of packages) promises
// in its doc comment about its imports.
type Rule struct {
	Pkg string
	// Only, when not nil, is every package outside the standard library
	// that Pkg may import directly; empty (not nil): the standard library
	// only.
	Only []string
	// Never is what Pkg must not reach through any chain of imports.
	Never []string
	// ImportedBy, when not nil, is every package allowed to import Pkg;
	// empty (not nil): nothing may.
	ImportedBy []string
	// Why is the reason, as the package doc gives it.
	Why string
}

var (
	stdOnly = []string{}
	nobody  = []string{}
	// hostTalk is everything that reaches a host: SSH, the agent's client
	// and server, spawning programs, the network.
	hostTalk = []string{"engine/sshx/...", "engine/remote", "agent/rpc", "agent/server", "golang.org/x/crypto/ssh", "github.com/pkg/sftp", "os/exec", "net"}
	// agentBits is what the agent binary may carry besides the standard
	// library: it is shipped to every host and must stay small.
	agentBits = []string{"agent/proto", "golang.org/x/sys/...", "github.com/vishvananda/netlink"}
)

// Rules is rlab's layering, one row per package doc that states it.
var Rules = []Rule{
	// The agent side: shipped to hosts, shared with the controller.
	{Pkg: "agent/...", Never: []string{"engine/...", "cmd/...", "steps/...", "kinds/..."},
		Why: "the agent and its protocol are shared by both sides; nothing of the controller may ride along to the hosts"},
	{Pkg: "agent/proto", Only: stdOnly, Why: "the wire protocol is shared by controller and agent"},
	{Pkg: "agent/dist", Only: stdOnly, Why: "it only embeds the built agents"},
	{Pkg: "agent/rpc", Only: []string{"agent/proto"}, Why: "the controller's client is a leaf over the protocol"},
	{Pkg: "agent/server", Only: agentBits, Why: "the agent's serve loop is shipped to every host"},
	{Pkg: "agent/cmd/rlab-agent", Only: append([]string{"agent/server"}, agentBits...),
		Never: []string{"github.com/spf13/cobra"}, Why: "the agent binary must stay small: no cobra, no engine"},
	{Pkg: "agent/rpc/rpctest", Only: []string{"agent/server", "agent/rpc", "agent/proto"}, Why: "a test bed of the client against the real in-process agent"},

	// Leaves of the controller.
	{Pkg: "kinds", Only: stdOnly, Why: "the descriptors' core: every layer reads it, so it reads nothing of theirs"},
	{Pkg: "kinds/...", Never: []string{"engine/run", "engine/lab", "engine/sshx/...", "engine/remote", "cmd/...", "golang.org/x/crypto/ssh"},
		Why: "a family is its descriptor, step and parser: testable against an in-process agent, knowing no lab model or SSH"},
	{Pkg: "kinds/toolopts", Never: []string{"steps", "engine/...", "kinds/perftest", "kinds/pingpong", "kinds/rping", "kinds/tcp", "kinds/exec", "kinds/program", "kinds/builtin"},
		Why: "the options some families share and the hook engine/lab decodes them through: it knows no family, step or lab model"},
	{Pkg: "engine/termsafe", Only: stdOnly, Why: "a leaf every layer that shows host text uses"},
	{Pkg: "engine/runevent", Only: stdOnly, Why: "the event log's one line type, read by what shows progress without the executor"},
	{Pkg: "engine/agentdisk", Only: stdOnly, Why: "the agent disk's format is shared by the VMs that attach it and the shipping that reads it in the guest"},
	{Pkg: "engine/rundir", Only: stdOnly, Why: "a leaf every reader of a received run directory, and every writer of a run directory, uses"},
	{Pkg: "engine/testbed", Only: stdOnly, Why: "every package's tests may use it"},
	{Pkg: "templates", Only: stdOnly, Why: "starter labs are data embedded in rlab"},
	{Pkg: "templates/report", Only: stdOnly, ImportedBy: []string{"engine/report"}, Why: "engine/report parses and executes the report templates; nothing else should"},
	// engine/results' doc names only kinds; it also imports the
	// leaves engine/termsafe (summary.md shows host text), engine/rundir
	// (a received run directory is read confined) and agent/proto (its one
	// scanner of JSON cost, CountJSON, bounds what Decode builds).
	{Pkg: "engine/results", Only: []string{"kinds", "engine/rundir", "engine/termsafe", "agent/proto", "golang.org/x/perf/..."},
		Why: "parsers, the engine and reports all share the model of what a run measured"},
	{Pkg: "engine/toolout", Only: []string{"kinds", "engine/results"}, Why: "parsers are pure functions of a tool's output"},
	{Pkg: "engine/roce", Never: []string{"cmd/...", "engine/run"}, Why: "the decoder works on a capture file alone"},
	{Pkg: "engine/iwarp", Never: []string{"cmd/...", "engine/run"}, Why: "it reads the frames engine/roce decoded, from a capture file alone"},
	{Pkg: "engine/attrib", Never: []string{"cmd/...", "engine/run", "engine/report", "engine/sshx/...", "engine/remote", "agent/rpc", "os/exec"}, Why: "naming a capture's connections reads a run directory alone"},
	{Pkg: "engine/iograph", Only: []string{"engine/roce"}, Why: "it draws with the standard library alone"},

	// The lab model and what is derived from it without a host.
	{Pkg: "engine/lab", Never: append([]string{"engine/run", "steps"}, hostTalk...),
		Why: "the lab model is the contract the run engine, SSH and the agent build on"},
	{Pkg: "engine/plan", Never: append([]string{"engine/run", "engine/vm", "engine/image", "steps"}, hostTalk...),
		Why: "the plan is pure: no I/O, no SSH, no agent"},
	{Pkg: "engine/provision/needs", Only: []string{"engine/lab", "kinds"}, Never: hostTalk,
		Why: "what a lab needs per host is pure, so engine/plan can say it"},
	{Pkg: "engine/preflight", Never: append([]string{"engine/run"}, hostTalk...), Why: "preflight is a pure function of the lab and the hosts' facts"},
	{Pkg: "engine/provision", Never: []string{"engine/run", "engine/sshx/...", "engine/remote", "golang.org/x/crypto/ssh"},
		Why: "provisioning goes through an agent client the caller connected"},
	{Pkg: "engine/graph", Never: []string{"engine/run", "engine/sshx/...", "engine/remote", "agent/rpc", "agent/server", "golang.org/x/crypto/ssh"},
		Why: "the topology is drawn from the lab model and facts only"},
	{Pkg: "engine/report", Never: []string{"engine/run", "engine/sshx/...", "engine/remote", "agent/rpc", "agent/server", "golang.org/x/crypto/ssh"},
		Why: "a report is re-rendered anywhere, long after the run, from the run directory alone"},

	// Reaching hosts.
	{Pkg: "engine/sshx", Never: []string{"engine/lab", "engine/remote", "agent/..."}, Why: "SSH knows nothing of labs or agents"},
	{Pkg: "engine/remote", Never: []string{"engine/lab", "engine/plan", "engine/run", "steps"}, Why: "shipping and speaking to the agent knows nothing of labs"},
	{Pkg: "steps", Only: []string{"agent/proto", "agent/rpc", "kinds", "engine/results", "engine/rundir"},
		Never: []string{"engine/lab", "engine/sshx/...", "engine/remote", "engine/run", "golang.org/x/crypto/ssh"},
		Why:   "every step is testable against an in-process agent"},
	{Pkg: "engine/image", Never: []string{"engine/vm", "engine/sshx/...", "engine/remote", "agent/rpc", "agent/server", "golang.org/x/crypto/ssh", "github.com/pkg/sftp"},
		Why: "building the image (mmdebstrap as root) talks to no host"},
	{Pkg: "engine/vm", Never: []string{"engine/run", "steps", "agent/rpc", "agent/server"}, Why: "VMs know nothing of agents or workloads"},
	{Pkg: "engine/runstate", Only: []string{"agent/proto", "engine/plan", "engine/rundir", "engine/sshx", "steps"},
		Never: []string{"engine/run", "engine/down", "engine/report", "engine/remote", "cmd/..."},
		Why:   "state.json's format, signing and bounds: the run writes it, down and the CLI read it, and it knows neither"},
	{Pkg: "engine/down", Never: []string{"engine/run", "engine/report", "engine/remote", "engine/vm", "cmd/..."},
		Why: "rlab down undoes a run from its state.json alone: it executes no plan, and reaches hosts through the connector it is given"},
	{Pkg: "engine/run", Never: []string{"cmd/..."}, Why: "every behaviour is reachable from a test without the CLI"},
	{Pkg: "internal/fanout", Only: []string{}, Why: "a leaf the run and rlab down share: the standard library only"},
	{Pkg: "engine/sectest", ImportedBy: nobody, Why: "the security suite is tests only"},
	{Pkg: "internal/archtest", ImportedBy: nobody, Why: "the rules are checked, not used"},
	{Pkg: "kinds/kindstest", Only: []string{"kinds"}, Why: "a test helper: the kinds' port block and the standard library"},
	{Pkg: "kinds/madeup", ImportedBy: nobody, Why: "the made-up family is registered by test builds only; rlab ships without it"},
}
