// Package results is the model of what a run measured: samples (metric,
// value, unit, metadata) as PerfKitBenchmarker shapes them, and per-workload
// outcomes. It writes results.json, summary.md and junit.xml. It imports no
// other rlab package but the tool descriptors' core (kinds, a
// standard-library leaf; never a family package), so parsers, the engine and reports can all share it.
package results

// Sample is one measured number. Unit is always set ("Gb/s", "MiB/s",
// "Mpps", "usec", "Mbit/s", "usec/iter", "bytes", "s").
type Sample struct {
	Metric string  `json:"metric"` // e.g. bw_avg, bw_peak, msg_rate, lat_typical, lat_p99
	Value  float64 `json:"value"`
	Unit   string  `json:"unit"`
	Meta   Meta    `json:"metadata"`
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
	// Platforms is what each of Hosts ran on, in the same order, from the
	// hosts' facts.
	Platforms []Platform `json:"platforms,omitempty"`
	// Extra holds anything else worth keeping (e.g. "source": "json"|"text").
	Extra map[string]string `json:"extra,omitempty"`
}

// Platform is the machine one host of a sample ran on (agent/proto.Platform
// and the kernel, flattened), as PerfKitBenchmarker records machine_type
// with every sample.
type Platform struct {
	Host           string `json:"host"`
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
