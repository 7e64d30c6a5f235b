// Package results is the model of what a run measured: samples (metric,
// value, unit, metadata) as PerfKitBenchmarker shapes them, and per-workload
// outcomes. It writes results.json, summary.md and junit.xml, and is the one
// writer (Encode) and reader (Decode, which upgrades older schemas) of
// results.json, whose JSON Schema is docs/results.schema.json. It imports no
// other rlab package but the tool descriptors' core (kinds, a
// standard-library leaf; never a family package), so parsers, the engine and reports can all share it.
package results

// Sample is one measured number. Unit is always set ("Gb/s", "MiB/s",
// "Mpps", "usec", "Mbit/s", "usec/iter", "bytes", "s").
type Sample struct {
	Metric string  `json:"metric"` // e.g. bw_avg, bw_peak, msg_rate, lat_typical, lat_p99
	Value  float64 `json:"value"`
	Unit   string  `json:"unit"`
	// Source is SourceTool for what a tool measured (and its wall time),
	// SourceCounter for a kernel counter's delta over the workload, so a
	// script filters the few tool numbers from the many counters. WriteRun
	// fills it when a step left it empty (SourceOf).
	Source string `json:"kind,omitempty"`
	Meta   Meta   `json:"metadata"`
}

// Sample sources.
const (
	SourceTool    = "tool"
	SourceCounter = "counter"
)

// SourceOf is a sample's source: its own, else SourceCounter for a sample that
// names the counter folder it was read from (Meta.Extra[CounterExtra]).
func SourceOf(s Sample) string {
	switch {
	case s.Source != "":
		return s.Source
	case s.Meta.Extra[CounterExtra] != "":
		return SourceCounter
	}
	return SourceTool
}

// Meta is what a sample was measured on: enough to reproduce it and to match
// it against the same sample of another run.
type Meta struct {
	Workload    string   `json:"workload"`
	Tool        string   `json:"tool"`
	Size        int64    `json:"size,omitempty"` // message size in bytes
	Iterations  int64    `json:"iterations,omitempty"`
	Repeat      int      `json:"repeat"`          // 0-based
	Hosts       []string `json:"hosts,omitempty"` // server first, then client
	Devices     []string `json:"devices,omitempty"`
	GIDIndex    *int     `json:"gid_index,omitempty"`
	MTU         int      `json:"mtu,omitempty"`
	Transport   string   `json:"transport,omitempty"`
	QPs         int      `json:"qps,omitempty"`
	ToolVersion string   `json:"tool_version,omitempty"`
	// Interval numbers the rows a tool printed for one size (1, 2, ...:
	// perftest's --run_infinitely); 0 when it printed one.
	Interval int `json:"interval,omitempty"`
	// Bytes is what a tcp client sent, ServerBytes what its server received.
	Bytes       int64 `json:"bytes,omitempty"`
	ServerBytes int64 `json:"server_bytes,omitempty"`
	// ImpairLoss is the highest netem loss in force, in percent (0 is a
	// measured point of a loss sweep); nil when nothing was impaired.
	ImpairLoss *float64 `json:"impair_loss,omitempty"`
	// Extra holds any other text worth keeping (e.g. "source": "json"|"text");
	// numbers have fields of their own.
	Extra map[string]string `json:"extra,omitempty"`
}

// Platform is the machine one host ran on (agent/proto.Platform and the
// kernel, flattened), as PerfKitBenchmarker records machine_type with every
// sample: Run.Platforms holds one per host, keyed by the host's name, which
// each sample's Meta.Hosts names.
type Platform struct {
	Virtualization string `json:"virtualization,omitempty"` // systemd-detect-virt's name: none, kvm, amazon...
	Vendor         string `json:"vendor,omitempty"`         // DMI sys_vendor
	Product        string `json:"product,omitempty"`        // DMI product_name: the machine type
	Version        string `json:"version,omitempty"`        // DMI product_version
	CPUModel       string `json:"cpu_model,omitempty"`
	Kernel         string `json:"kernel,omitempty"`
	Distro         string `json:"distro,omitempty"` // os-release ID VERSION_ID, e.g. "ubuntu 22.04"
	RDMACore       string `json:"rdma_core,omitempty"`
}

// BetterExtra is the Meta.Extra key of a lab's own metric (a metric block
// of a program or exec workload) that says which way it is better:
// "higher" or "lower", as its block says. Compare reads it where the
// descriptor knows no such metric.
const BetterExtra = "better"
