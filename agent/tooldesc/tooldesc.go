// Package tooldesc is the one description of every workload tool rlab runs:
// its name, family, whether it is RDMA, its sides, the options it accepts and
// their rules, its metrics with units, the package that ships it per
// distribution family, how to ask its version, its report chart and hint,
// and its part of every view (View, view.go: headline, charts, RDMA vs TCP).
// Every layer reads it: the lab checker (engine/lab), the step kinds
// (steps), the output parsers (engine/toolout), the metric vocabulary
// (engine/results), preflight, the plan text, the report, the VM image and
// the agent's tool probe. A test in each of those packages fails when a table
// of its own disagrees with this one.
//
// Adding a tool is its entry here (Register, in the one visible builder
// below), one step file in steps/ (a Kind for its Family) and its parser in
// engine/toolout with fixtures.
//
// It imports only the standard library, so both the controller and the
// agent (which may import nothing of engine/) can use it.
package tooldesc

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// Family groups tools that one step kind drives and one parser reads.
type Family string

// The families.
const (
	PerftestBW  Family = "perftest_bw"  // ib_*_bw
	PerftestLat Family = "perftest_lat" // ib_*_lat
	Pingpong    Family = "pingpong"     // ibv_*_pingpong
	Rping       Family = "rping"        // rping
	TCP         Family = "tcp"          // the agent's own TCP bulk transfer
	Exec        Family = "exec"         // one command on one host
)

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
}

// Program is an executable the agent looks for on a host.
type Program struct {
	Name     string
	Packages Packages
	Version  Version
}

// Tool describes one workload tool.
type Tool struct {
	Name   string
	Family Family
	RDMA   bool // server and client are rxe references
	// OneHost: the tool runs on host (exec); otherwise between server and
	// client.
	OneHost bool
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
	// (Common), by Metric.Name.
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
	// View is the tool's part of every view (view.go).
	View View
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

// Common are the metrics every workload records.
var Common = []string{"exit_code", "duration"}

// metrics is the built-in vocabulary, in report order.
var metrics = []Metric{
	// perftest ib_*_bw (always run with --report_gbits)
	{"bw_peak", "Gb/s", true, "perftest peak bandwidth", []Alias{{"bw_peak_gbps", 1}}},
	{"bw_avg", "Gb/s", true, "perftest average bandwidth", []Alias{{"bw_avg_gbps", 1}}},
	{"msg_rate", "Mpps", true, "perftest message rate", []Alias{{"msg_rate_mpps", 1}}},
	// perftest ib_*_lat
	{"lat_min", "usec", false, "perftest minimum latency", []Alias{{"lat_min_us", 1}}},
	{"lat_max", "usec", false, "perftest maximum latency", []Alias{{"lat_max_us", 1}}},
	{"lat_typical", "usec", false, "perftest typical (median) latency", []Alias{{"lat_typical_us", 1}}},
	{"lat_avg", "usec", false, "perftest average latency", []Alias{{"lat_avg_us", 1}}},
	{"lat_stdev", "usec", false, "perftest latency standard deviation", []Alias{{"lat_stdev_us", 1}}},
	{"lat_p99", "usec", false, "perftest 99th percentile latency", []Alias{{"lat_p99_us", 1}}},
	{"lat_p999", "usec", false, "perftest 99.9th percentile latency", []Alias{{"lat_p999_us", 1}}},
	// ibv_*_pingpong
	{"pp_bw", "Mbit/s", true, "pingpong throughput", []Alias{{"pp_mbps", 1}}},
	{"pp_lat", "usec/iter", false, "pingpong time per iteration", []Alias{{"pp_usec_per_iter", 1}}},
	// rping
	{"rping_count", "count", true, "rping ping-pongs completed", nil},
	// built-in TCP bulk transfer: one quantity, recorded in Gb/s; MiB/s is
	// a display choice (the old expect name tcp_mibps reads it so).
	{"tcp_bw", "Gb/s", true, "TCP bulk throughput", []Alias{{"tcp_gbps", 1}, {"tcp_mibps", mibPerGb}}},
	// every workload
	{"exit_code", "code", false, "exit code of the client side (exec: the command)", nil},
	{"duration", "s", false, "wall time of the workload run", []Alias{{"duration_s", 1}}},
}

// mibPerGb converts Gb/s into MiB/s.
const mibPerGb = 1e9 / 8 / (1 << 20)

// retired are metric names older runs recorded that are no longer metrics of
// their own: the same quantity as another one in another unit. Readers of
// old results.json drop them, so one quantity is counted once.
var retired = map[string]string{
	"tcp_bw_mib": "tcp_bw", // TCP throughput in MiB/s, until November 2026
}

// Retired returns the metric that replaced an old metric name, if n is one.
func Retired(n string) (string, bool) {
	m, ok := retired[n]
	return m, ok
}

// vocab is an immutable index of the metrics, swapped whole when one is
// registered: readers (one lookup per sample) take no lock.
type vocab struct {
	list    []Metric
	byName  map[string]int
	byAlias map[string][2]int // metric index, alias index
}

var current atomic.Pointer[vocab]

func init() { current.Store(index(metrics)) }

func index(list []Metric) *vocab {
	v := &vocab{list: list, byName: map[string]int{}, byAlias: map[string][2]int{}}
	for i, m := range list {
		v.byName[m.Name] = i
		for j, a := range m.Aliases {
			v.byAlias[a.Name] = [2]int{i, j}
		}
	}
	return v
}

// Metrics returns the metric vocabulary, in report order.
func Metrics() []Metric { return append([]Metric(nil), current.Load().list...) }

// RegisterMetric adds a metric to the vocabulary: what a made-up tool of a
// test records. The built-in metrics are the table above. A name taken (as a
// metric or an alias) panics: it is a programming error.
func RegisterMetric(m Metric) {
	mu.Lock()
	defer mu.Unlock()
	v := current.Load()
	if _, ok := v.byName[m.Name]; ok {
		panic("tooldesc: metric " + m.Name + " registered twice")
	}
	if _, ok := v.byAlias[m.Name]; ok {
		panic("tooldesc: metric " + m.Name + " is an alias already")
	}
	current.Store(index(append(append([]Metric(nil), v.list...), m)))
}

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

// Helpers are the programs other than workload tools the agent looks for.
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

var (
	mu    sync.RWMutex
	tools = map[string]Tool{}
	order []string
)

// Register adds a tool. The built-in tools are registered below, in one
// visible place; a test may register a made-up tool of its own. Registering
// a name twice panics: it is a programming error.
func Register(t Tool) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := tools[t.Name]; dup {
		panic("tooldesc: tool " + t.Name + " registered twice")
	}
	tools[t.Name] = t
	order = append(order, t.Name)
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

// MetricsOf returns the metric names tool records (its own, then Common);
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

func init() { registerBuiltins() }

// registerBuiltins is every tool rlab ships with.
func registerBuiltins() {
	perftestPkg := Packages{"perftest", "perftest", "perftest"}
	ibverbsPkg := Packages{"ibverbs-utils", "libibverbs-utils", "libibverbs-utils"}
	rdmacmPkg := Packages{"rdmacm-utils", "librdmacm-utils", "librdmacm-utils"}
	const perftestFirst = "ib_write_bw" // asked for the version of all perftest binaries
	const (
		bwHint  = "perftest's bandwidth in Gb/s (10^9 bits per second) and message rate in millions of messages per second, for each message size; a point is the median over repeats, and a bar through it spans the slowest to the fastest repeat (hover a point for the values)."
		latHint = "perftest's latency in microseconds for each message size: min, typical (median), average, 99th and 99.9th percentile and max (each the median over repeats). The gap between typical and p99 shows the jitter."
		ppHint  = "ibv_*_pingpong's throughput for each message size."
	)
	// perftest: RDMA WRITE needs a connected QP, so no UD; READ and atomics
	// need the responder's reliable transport, so RC only.
	for _, op := range []string{"write", "read", "send", "atomic"} {
		tr, why := []string{"RC", "UC"}, "RDMA WRITE needs a connected QP; UD has none"
		switch op {
		case "read":
			tr, why = []string{"RC"}, "RDMA READ is defined only on RC"
		case "atomic":
			tr, why = []string{"RC"}, "atomic operations are defined only on RC"
		case "send":
			tr, why = []string{"RC", "UC", "UD"}, ""
		}
		var fixed int64
		if op == "atomic" {
			fixed = 8
		}
		bw, lat := "ib_"+op+"_bw", "ib_"+op+"_lat"
		ver := Version{From: perftestFirst}
		if bw == perftestFirst {
			ver = Version{Args: []string{"--version"}, Pattern: `[0-9]+(?:\.[0-9]+)+`, PerftestHelp: true} // Version: 6.06
		}
		// siw reports no atomic capability (siw_query_device sets
		// atomic_cap = 0, "Revisit atomic caps if RFC 7306 gets supported",
		// drivers/infiniband/sw/siw/siw_verbs.c), nor does iWARP's RDMAP
		// (RFC 5040) define atomics.
		var noIWARP string
		if op == "atomic" {
			noIWARP = "iWARP has no atomic operations (RFC 5040's RDMAP defines none, and siw reports atomic_cap 0)"
		}
		Register(Tool{Name: bw, Family: PerftestBW, RDMA: true, Transports: tr, TransportWhy: why, RDMACMFlag: "-R", NoIWARP: noIWARP,
			Sizes: true, FixedSize: fixed, Iterations: true, Duration: true, QPs: true,
			Metrics: []string{"bw_peak", "bw_avg", "msg_rate"},
			Program: &Program{Name: bw, Packages: perftestPkg, Version: ver},
			Chart:   "bw", Hint: bwHint, View: builtinViews[PerftestBW]})
		Register(Tool{Name: lat, Family: PerftestLat, RDMA: true, Transports: tr, TransportWhy: why, RDMACMFlag: "-R", NoIWARP: noIWARP,
			Sizes: true, FixedSize: fixed, Iterations: true, Duration: true,
			Metrics: []string{"lat_min", "lat_max", "lat_typical", "lat_avg", "lat_stdev", "lat_p99", "lat_p999"},
			Program: &Program{Name: lat, Packages: perftestPkg, Version: Version{From: perftestFirst}},
			Chart:   "lat", Hint: latHint, HeadlineSmallest: true, View: builtinViews[PerftestLat]})
	}
	// The pingpong tools fix their transport by name. XRC (ibv_xsrq_pingpong)
	// is left out: rdma_rxe has no XRC, so it could never run on rxe.
	const ppWhy = "the pingpong tool fixes its transport by name (ibv_rc_pingpong, ibv_uc_pingpong, ibv_ud_pingpong)"
	for _, t := range []struct{ name, transport string }{{"rc", "RC"}, {"uc", "UC"}, {"ud", "UD"}, {"srq", "RC"}} {
		name := "ibv_" + t.name + "_pingpong"
		var max int64
		if t.transport == "UD" {
			max = 4096 // a UD message is one packet: the largest RoCE MTU
		}
		Register(Tool{Name: name, Family: Pingpong, RDMA: true, FixedTransport: t.transport, TransportWhy: ppWhy,
			NoIWARP: "the pingpong tools connect their QPs themselves (LID, QPN and GID swapped over TCP, then modify to RTR), never through the RDMA CM, which iWARP requires",
			Sizes:   true, MaxSize: max, Iterations: true,
			Metrics: []string{"pp_bw", "pp_lat"},
			Program: &Program{Name: name, Packages: ibverbsPkg, Version: Version{RDMACore: true}},
			Chart:   "pingpong", Hint: ppHint, HeadlineSmallest: true, View: builtinViews[Pingpong]})
	}
	Register(Tool{Name: "rping", Family: Rping, RDMA: true, FixedTransport: "RC", RDMACM: true,
		TransportWhy: "rping always uses an RC connection through the RDMA CM",
		Sizes:        true, Iterations: true,
		Metrics:      []string{"rping_count"},
		Program:      &Program{Name: "rping", Packages: rdmacmPkg, Version: Version{RDMACore: true}},
		NeedsModules: []string{"rdma_cm"},
		Chart:        "rping", View: builtinViews[Rping]})
	Register(Tool{Name: "tcp", Family: TCP, TransportWhy: "the tcp workload is a TCP stream", Duration: true, Bytes: true,
		Metrics: []string{"tcp_bw"}, Chart: "tcp", View: builtinViews[TCP]})
	Register(Tool{Name: "exec", Family: Exec, OneHost: true, TransportWhy: "exec runs a command as given", Chart: "exec", View: builtinViews[Exec]})
}
