// Package kinds is the one description of every tool family rlab runs,
// and the one registry of them. A family (kinds/perftest, kinds/pingpong,
// kinds/rping, kinds/tcp, kinds/exec, kinds/program) is one package that
// holds its tools' descriptors (name, whether it is RDMA, its sides, the options it accepts
// and their rules, its metrics with units, the package that ships it per
// distribution family, how to ask its version, its report chart and hint),
// its op and its output parser. It registers ONE value, a Kind, and
// kinds/builtin is the one visible file that registers every built-in
// family, as containerlab's core/register.go registers its node kinds:
// cmd/rlab (and a test binary's TestMain) calls builtin.Register once; there
// is no init() registration.
//
// Words: a tool family is a kinds/<family> package; a kind is the one
// value it registers (Kind); a flavor (Flavor) is a group of a kind's
// tools that one op drives and one parser reads the same way
// (perftest_bw, perftest_lat: perftest has two, every other family one).
// Step, op, trial and unit: package steps.
//
// The shape is acyclic by construction:
//
//	kinds (this package: descriptors and the registry; standard library only)
//	  ↑ steps, engine/toolout, engine/lab, engine/results, … (read the descriptors)
//	  ↑ kinds/<family> (implements what those layers ask of a family)
//	  ↑ kinds/builtin (registers every family)
//	  ↑ cmd/rlab
//
// This package cannot name an op or a parser type (steps and engine/toolout
// import it), so a Kind carries only its descriptor data (Desc); what else a
// family does is an ability the layer that needs it defines as a one-method
// interface, and the family's Kind value implements it: steps.OpMaker
// (NewOp: the family's workload op), toolout.Parser (Parse: its output
// parser), toolopts.Taker (Options: the workload options its tools take
// beyond the common ones, which engine/lab decodes through it; the shared
// ones and their rules are in kinds/toolopts), engine/lab.BodyDecoder
// (DecodeWorkload: workload attributes of its own, as program's commands
// and exec's and program's metric blocks). One ability is defined here,
// because two layers call it and must agree: Argver (argv.go), a family's
// command lines for one trial, pure, which engine/plan resolves into the
// plan (placeholders for what only the run learns) and the family's op
// runs (steps.NewRDMAPair, kinds/tcp, kinds/exec, kinds/program).
// Code the families share without being one lives under kinds/internal. Registering a family is therefore one line, and a family without
// an op is caught when a workload names one of its tools (and by
// builtin's TestEveryKindHasItsAbilities).
//
// Adding a family: a package kinds/<name> with its Kind (Desc, NewOp and,
// when its output is parsed, Parse) — kinds/tcp is the smallest whole one to
// copy — its tests (real outputs under testdata/toolout as fixtures, a fuzz
// target per parser through engine/toolout/tooltest), and one line in
// kinds/builtin. kinds/madeup is such a family, made up to prove it: a
// test build registers it by one line and every view shows it. Adding a
// tool to a family is one entry in its Desc.
//
// Because registration is explicit, nothing registered exists before
// builtin.Register runs: a package-level variable computed from this
// registry at initialisation sees no family (results.Metrics and
// image.DefaultPackages are functions for that reason).
//
// It imports only the standard library. The agent imports nothing of kinds:
// the controller sends the agent the programs to probe with each facts
// request (proto.FactsParams.Probe, built by engine/remote.FactsParams from
// Programs), so editing a hint does not change the agent's hash
// (agent/cmd/rlab-agent's TestAgentImportsNoKinds).
package kinds

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// Direction is which way a tool's data goes between its two sides.
type Direction string

// The directions.
const (
	DataClient Direction = "client" // from the client to the server
	DataServer Direction = "server" // from the server to the client
	DataBoth   Direction = "both"   // both ways in turn (ping-pong)
)

// Arrow is a two-sided workload's hosts (server first, then client, as
// results record them) drawn the way its tool's data goes: "client →
// server" for WRITE, SEND and tcp, "server → client" for READ, "server ↔
// client" for a ping-pong; hosts joined with " → " when the tool is not
// known or not two-sided.
func Arrow(tool string, hosts []string) string {
	t, ok := Lookup(tool)
	if !ok || len(hosts) != 2 {
		return strings.Join(hosts, " → ")
	}
	switch t.Data {
	case DataClient:
		return hosts[1] + " → " + hosts[0]
	case DataBoth:
		return hosts[0] + " ↔ " + hosts[1]
	}
	return hosts[0] + " → " + hosts[1]
}

// Flavor groups the tools of a kind that one op drives and one parser
// reads the same way (perftest has two: bandwidth and latency; the other
// families one each); its constants live in the family's package
// (perftest.BW, tcp.Flavor). Not a family: that is the package.
type Flavor string

// Packages names the package that ships a program, per distribution family.
// Empty: the program is built into the agent. Where the names come from:
// rdma-core's own packaging (debian/control: ibverbs-utils, rdmacm-utils;
// redhat/rdma-core.spec and suse/rdma-core.spec: `%package -n
// libibverbs-utils`, `librdmacm-utils`), perftest packaged under its own
// name in all three, the rdma tool in iproute2 (Debian, SUSE; Ubuntu's
// rdma(8) man page says "Provided by: iproute2") and in RHEL's and Fedora's
// iproute, modprobe in kmod. engine/provision installs by these names
// (its TestEveryProgramHasPackages fails on an empty one).
type Packages struct {
	Debian string // Debian and Ubuntu (apt-get)
	RHEL   string // RHEL, Fedora and their rebuilds (dnf)
	SUSE   string // SLES and openSUSE (zypper)
}

// InstallHint is the command line that installs the package on each
// distribution family, for error messages.
func (p Packages) InstallHint() string {
	return fmt.Sprintf("apt-get install %s (dnf install %s; zypper install %s)", p.Debian, p.RHEL, p.SUSE)
}

// InstallHintFor is the command line for the host's distribution, known by
// its os-release PRETTY_NAME; InstallHint when the name says no family.
func (p Packages) InstallHintFor(osName string) string {
	n := strings.ToLower(osName)
	has := func(words ...string) bool {
		for _, w := range words {
			if strings.Contains(n, w) {
				return true
			}
		}
		return false
	}
	switch {
	case has("debian", "ubuntu", "mint", "raspbian", "pop!_os"):
		return "apt-get install " + p.Debian
	case has("fedora", "red hat", "rhel", "centos", "rocky", "alma", "oracle linux", "amazon linux"):
		return "dnf install " + p.RHEL
	case has("suse", "sles"):
		return "zypper install " + p.SUSE
	}
	return p.InstallHint()
}

// Version says how to ask a program its version.
type Version struct {
	// Args run the program to ask (e.g. --version); Pattern finds the
	// version in its output (first submatch, else the whole match).
	Args    []string
	Pattern string
	// From names the program whose version stands for this one: the
	// perftest binaries come in one package, so one answer serves all.
	From string
	// RDMACore: the program has no version option and ships with rdma-core,
	// whose version libibverbs carries in its file name.
	RDMACore bool
	// PerftestHelp: the program's --help says whether perftest writes
	// --out_json files.
	PerftestHelp bool
	// HelpFlags (with PerftestHelp): the options whose presence that
	// --help is asked about, for every tool's ProbedFlags.
	HelpFlags []string
}

// ProbedFlag is an option of a tool that not every installed version has:
// the facts probe asks the program's --help (Version.HelpFlags), and
// preflight names the hosts whose program lacks it when a workload's args
// ask for it.
type ProbedFlag struct {
	Flag string // "--write_with_imm"
	// Since says which versions have it and why a host may not.
	Since string
}

// Program is an executable the agent looks for on a host.
type Program struct {
	Name     string
	Packages Packages
	Version  Version
}

// Tool describes one workload tool.
type Tool struct {
	// Data says which way a two-sided tool's data goes (DataClient: client
	// to server, as WRITE, SEND and tcp; DataServer: server to client, as
	// READ's responses; DataBoth: ping-pong). Views draw the arrow so, and
	// the lab checker warns of an impairment that only slows the ACKs.
	Data Direction
	// View is the tool's part of every view (view.go).
	View   View
	Name   string
	Flavor Flavor
	RDMA   bool // server and client are rxe references
	// OneHost: the tool runs on host (exec); otherwise between server and
	// client.
	OneHost bool
	// HostOrPair: the tool runs on host, or between server and client, as
	// the lab sets (program); its sides are hosts or RDMA devices.
	HostOrPair bool
	// Transports the tool may be told to use, the default first; nil: the
	// tool fixes it (FixedTransport when it has one), and TransportWhy says
	// why for the diagnostic.
	Transports     []string
	FixedTransport string
	TransportWhy   string
	Sizes          bool  // accepts sizes
	FixedSize      int64 // sizes must all equal this (atomics: 8)
	MaxSize        int64 // 0: no limit
	Iterations     bool
	Duration       bool
	QPs            bool
	Bytes          bool // tcp: an amount of bytes to send
	// Metrics the tool records besides the ones every workload records
	// (the common ones: exit_code, duration), by Metric.Name.
	Metrics []string
	// Program is what the agent looks for on a host; nil for tools built into
	// the agent (tcp) or given by the lab (exec).
	Program *Program
	// NeedsModules are kernel modules the tool needs beyond rdma_rxe (rping:
	// rdma_cm), for the plan's preflight line.
	NeedsModules []string
	// Chart is the family of charts the report draws; Hint explains them to
	// a reader new to them ("" for none).
	Chart string
	Hint  string
	// Pace is how long one run of the tool takes (pace.go), for the
	// estimate of a run's time.
	Pace Pace
	// HeadlineSmallest: the summary's headline number is at the smallest
	// message size (latency), not the largest (bandwidth).
	HeadlineSmallest bool
	// iWARP (siw, irdma and cxgb4 in iWARP mode) connects QPs only through
	// the RDMA CM, over a TCP connection it sets up. RDMACM: the tool
	// always does (rping); RDMACMFlag: the flag that makes it (perftest's
	// -R), which rlab adds when an end is iWARP; NoIWARP: why the tool
	// cannot run over iWARP at all ("" when it can).
	RDMACM     bool
	RDMACMFlag string
	NoIWARP    string
	// QPTimeout is how the tool sets the ACK timeout of its RC QPs, which
	// rlab raises when an end of the workload is an emulated (TCG) guest
	// (qptimeout.go); zero for tools without RC QPs.
	QPTimeout QPTimeout
	// ProbedFlags are options (in a workload's args) that some installed
	// versions of the program lack: preflight names those hosts.
	ProbedFlags []ProbedFlag
}

// Metric is one measured quantity: its name is the one results.json,
// summary.md, the report, `rlab compare`, --metric-threshold and an expect
// condition (result.<Name>) all use. Unit is how it is recorded; another unit
// is a display choice, not another metric.
type Metric struct {
	Name           string
	Unit           string
	HigherIsBetter bool
	Doc            string
	// Aliases are older names an expect condition may still use; each one
	// reads the metric times Scale (a unit the metric is not recorded in).
	Aliases []Alias
}

// Alias is an older expect name of a metric.
type Alias struct {
	Name  string
	Scale float64 // alias value = metric value × Scale
}

// Common are the names of the metrics every workload records.
var Common = func() []string {
	var ns []string
	for _, m := range common {
		ns = append(ns, m.Name)
	}
	return ns
}()

// The metrics every workload records, by name: what an op records them
// under (steps.CommonSamples).
const (
	ExitCode = "exit_code"
	Duration = "duration"
)

// common are the metrics every workload records, last in report order.
var common = []Metric{
	{ExitCode, "code", false, "exit code of the client side (exec: the command)", nil},
	{Duration, "s", false, "wall time of the workload run", []Alias{{"duration_s", 1}}},
}

// Retired returns the metric that replaced an old metric name, if n is one
// (a family's Desc.Retired).
func Retired(n string) (string, bool) {
	m, ok := current.Load().retired[n]
	return m, ok
}

// vocab is an immutable index of the metrics, swapped whole when a family is
// registered: readers (one lookup per sample) take no lock.
type vocab struct {
	list    []Metric
	byName  map[string]int
	byAlias map[string][2]int // metric index, alias index
	retired map[string]string
}

var current atomic.Pointer[vocab]

func init() { current.Store(index(nil, nil)) } // the common metrics before any family

// index builds the vocabulary: every family's metrics in registration
// order, then the common ones.
func index(ks []Kind, descs []Desc) *vocab {
	v := &vocab{byName: map[string]int{}, byAlias: map[string][2]int{}, retired: map[string]string{}}
	for _, d := range descs {
		v.list = append(v.list, d.Metrics...)
		for old, now := range d.Retired {
			v.retired[old] = now
		}
	}
	v.list = append(v.list, common...)
	for i, m := range v.list {
		v.byName[m.Name] = i
		for j, a := range m.Aliases {
			v.byAlias[a.Name] = [2]int{i, j}
		}
	}
	return v
}

// Metrics returns the metric vocabulary, in report order: each family's in
// registration order, then the ones every workload records.
func Metrics() []Metric { return append([]Metric(nil), current.Load().list...) }

// MetricByName returns the metric named n (not an alias).
func MetricByName(n string) (Metric, bool) {
	v := current.Load()
	if i, ok := v.byName[n]; ok {
		return v.list[i], true
	}
	return Metric{}, false
}

// MetricByAlias returns the metric an older name refers to, and the alias.
func MetricByAlias(n string) (Metric, Alias, bool) {
	v := current.Load()
	if ij, ok := v.byAlias[n]; ok {
		m := v.list[ij[0]]
		return m, m.Aliases[ij[1]], true
	}
	return Metric{}, Alias{}, false
}

// helpers are the programs other than workload tools the agent looks for.
var helpers = []Program{
	{Name: "rdma", Packages: Packages{"iproute2", "iproute", "iproute2"},
		Version: Version{Args: []string{"-V"}, Pattern: `[0-9]+(?:\.[0-9]+)+`}}, // rdma utility, iproute2-6.1.0
	{Name: "ibv_devinfo", Packages: Packages{"ibverbs-utils", "libibverbs-utils", "libibverbs-utils"}, Version: Version{RDMACore: true}},
	{Name: "ibv_devices", Packages: Packages{"ibverbs-utils", "libibverbs-utils", "libibverbs-utils"}, Version: Version{RDMACore: true}},
	{Name: "tcpdump", Packages: Packages{"tcpdump", "tcpdump", "tcpdump"},
		Version: Version{Args: []string{"--version"}, Pattern: `[0-9]+(?:\.[0-9]+)+`}}, // tcpdump version 4.99.3
	{Name: "modprobe", Packages: Packages{"kmod", "kmod", "kmod"},
		Version: Version{Args: []string{"--version"}, Pattern: `kmod version ([0-9][0-9.]*)`}},
}

// Kind is one tool family as its package registers it. Desc is its data;
// the abilities the other layers need (steps.OpMaker, toolout.Parser) are
// methods of the same value, each defined as an interface by the layer that
// calls it.
type Kind interface {
	Desc() Desc
}

// Desc is what a family declares about itself.
type Desc struct {
	// Name is the family's package name (perftest, tcp), for messages.
	Name string
	// Tools are its tools, each with its Flavor (a kind may hold several:
	// perftest's bandwidth and latency tools).
	Tools []Tool
	// Metrics are the metrics its tools record besides the common ones, in
	// report order.
	Metrics []Metric
	// Retired are metric names older runs recorded that are no longer
	// metrics of their own (the same quantity as another in another unit),
	// mapped to the metric that replaced them: readers of old results.json
	// drop them, so one quantity is counted once.
	Retired map[string]string
}

var (
	mu     sync.RWMutex
	kinds  []Kind
	descs  []Desc
	tools  = map[string]Tool{}
	kindOf = map[string]Kind{}
	order  []string
)

// Register adds a family: its tools, its metrics and its abilities. The
// built-in families are registered by kinds/builtin, in one visible place;
// a test may register a made-up family of its own. A tool or metric name
// registered twice panics: it is a programming error.
func Register(k Kind) {
	mu.Lock()
	defer mu.Unlock()
	d := k.Desc()
	v := current.Load()
	for _, m := range d.Metrics {
		for _, n := range append([]string{m.Name}, aliasNames(m)...) {
			if _, ok := v.byName[n]; ok {
				panic("kinds: " + d.Name + ": metric name " + n + " registered twice")
			}
			if _, ok := v.byAlias[n]; ok {
				panic("kinds: " + d.Name + ": metric name " + n + " is an alias already")
			}
		}
	}
	for _, t := range d.Tools {
		if _, dup := tools[t.Name]; dup {
			panic("kinds: tool " + t.Name + " registered twice")
		}
	}
	for _, t := range d.Tools {
		tools[t.Name] = t
		kindOf[t.Name] = k
		order = append(order, t.Name)
	}
	kinds = append(kinds, k)
	descs = append(descs, d)
	current.Store(index(kinds, descs))
}

func aliasNames(m Metric) []string {
	var out []string
	for _, a := range m.Aliases {
		out = append(out, a.Name)
	}
	return out
}

// KindOf returns the registered family of the tool named n.
func KindOf(n string) (Kind, bool) {
	mu.RLock()
	defer mu.RUnlock()
	k, ok := kindOf[n]
	return k, ok
}

// Kinds returns every registered family, in registration order.
func Kinds() []Kind {
	mu.RLock()
	defer mu.RUnlock()
	return append([]Kind(nil), kinds...)
}

// MustBeRegistered panics, naming who, when no family is registered: what
// reads the whole catalogue to act on hosts (the VM image's packages, the
// programs a facts request probes) would otherwise quietly act on none, as
// a test binary that forgot kinds/builtin.Register built an image without
// perftest. It is a programming error, as registering twice is.
func MustBeRegistered(who string) {
	mu.RLock()
	n := len(kinds)
	mu.RUnlock()
	if n == 0 {
		panic(who + ": no tool family is registered: call kinds/builtin.Register() first")
	}
}

// Lookup returns the tool named n.
func Lookup(n string) (Tool, bool) {
	mu.RLock()
	defer mu.RUnlock()
	t, ok := tools[n]
	return t, ok
}

// Names lists every tool name, sorted.
func Names() []string {
	mu.RLock()
	defer mu.RUnlock()
	ns := append([]string(nil), order...)
	sort.Strings(ns)
	return ns
}

// All returns every tool in registration order.
func All() []Tool {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]Tool, 0, len(order))
	for _, n := range order {
		out = append(out, tools[n])
	}
	return out
}

// MetricsOf returns the metric names tool records (its own, then the common ones);
// nil for an unknown tool.
func MetricsOf(tool string) []string {
	t, ok := Lookup(tool)
	if !ok {
		return nil
	}
	return append(append([]string(nil), t.Metrics...), Common...)
}

// Programs lists every program the agent looks for: the helpers first, then
// each workload tool's program, each name once.
func Programs() []Program {
	out := append([]Program(nil), helpers...)
	seen := map[string]bool{}
	for _, p := range out {
		seen[p.Name] = true
	}
	for _, t := range All() {
		if t.Program != nil && !seen[t.Program.Name] {
			seen[t.Program.Name] = true
			out = append(out, *t.Program)
		}
	}
	return out
}

// ProgramByName returns the program named n.
func ProgramByName(n string) (Program, bool) {
	for _, p := range Programs() {
		if p.Name == n {
			return p, true
		}
	}
	return Program{}, false
}

// ChartHint returns the report's hint for a chart family.
func ChartHint(chart string) string {
	for _, t := range All() {
		if t.Chart == chart && t.Hint != "" {
			return t.Hint
		}
	}
	return ""
}
