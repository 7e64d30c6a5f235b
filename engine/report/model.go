// Package report renders report.html, the one self-contained page of a run
// directory: the lab, the facts of every host, each workload's numbers as
// tables and hand-built SVG charts, RDMA beside TCP, each capture's opcode
// summary and IO graph, the expect results and links to the raw outputs.
//
// It reads only the run directory (results.json, hosts/*/facts.json, lab/,
// logs and captures) and writes only report.html. It must not import the run
// engine, SSH or the agent: a report can be re-rendered anywhere, long after
// the run, from the directory alone.
package report

// Data is everything the page shows, computed from a run directory before
// any HTML is written. Build returns it; the template only lays it out. It is
// plain data so a golden test can pin it down.
type Data struct {
	RunID        string       `json:"run_id"` // the run directory's base name
	Lab          LabInfo      `json:"lab"`
	Run          RunInfo      `json:"run"`
	Hosts        []Host       `json:"hosts"`
	Workloads    []Workload   `json:"workloads"`
	Compare      *Compare     `json:"compare,omitempty"`    // RDMA vs TCP; nil without both
	LossSweep    *Compare     `json:"loss_sweep,omitempty"` // throughput vs loss (loss.go); nil without two loss points
	Captures     []Capture    `json:"captures"`
	CapturesNote string       `json:"captures_note,omitempty"` // the captures past maxCaptures, not analysed
	Timeline     *Chart       `json:"timeline,omitempty"`      // steps over time, from events.jsonl
	TimelineNote string       `json:"timeline_note,omitempty"`
	Expects      ExpectTotals `json:"expect_totals"`
	Problems     []Problem    `json:"problems,omitempty"` // what needs a reader's eye first
	Students     *Students    `json:"students,omitempty"` // a class lab's students (students.go); nil otherwise
	Files        []Link       `json:"files"`              // every raw output, relative to the run dir
	Warnings     []string     `json:"warnings,omitempty"` // what could not be read
	// Topology depends on Graphviz being installed, so the golden data
	// leaves it out; its own test checks it.
	Topology *Topology `json:"-"`
}

// LabInfo is the lab as it was run.
type LabInfo struct {
	Name        string       `json:"name"`
	Description string       `json:"description,omitempty"`
	Sources     []SourceFile `json:"sources"`
}

// SourceFile is one lab file copied into the run directory.
type SourceFile struct {
	Path string `json:"path"` // relative to the run dir, e.g. lab/quickstart.hcl
	Text string `json:"text"`
}

// RunInfo is the run's own outcome, as results.json records it.
type RunInfo struct {
	Status   string `json:"status,omitempty"` // passed, failed, error...
	Started  string `json:"started,omitempty"`
	Finished string `json:"finished,omitempty"`
	Duration string `json:"duration,omitempty"`
	Error    string `json:"error,omitempty"`
}

// Host is one host's facts.
type Host struct {
	Slug     string `json:"slug"`
	Hostname string `json:"hostname,omitempty"`
	Folded   bool   `json:"folded,omitempty"` // a host of ready students only (Students.Folded)
	Kernel   string `json:"kernel,omitempty"`
	OS       string `json:"os,omitempty"`
	Arch     string `json:"arch,omitempty"`
	// Machine is the DMI vendor, product and version ("Amazon EC2
	// c5.large"), Virtualization systemd-detect-virt's name for the
	// hypervisor, Distro os-release's ID and VERSION_ID.
	Machine        string    `json:"machine,omitempty"`
	Virtualization string    `json:"virtualization,omitempty"`
	CPUModel       string    `json:"cpu_model,omitempty"`
	Distro         string    `json:"distro,omitempty"`
	RDMACore       string    `json:"rdma_core,omitempty"`
	CPUs           int       `json:"cpus,omitempty"`
	Memory         string    `json:"memory,omitempty"`
	RXEModule      string    `json:"rxe_module,omitempty"`
	Tools          []KV      `json:"tools,omitempty"` // rdma-core, perftest... with versions
	Netdevs        []Netdev  `json:"netdevs,omitempty"`
	RDMA           []RDMADev `json:"rdma,omitempty"`
	Errors         []string  `json:"errors,omitempty"`
	// Notes say what the report left out of a healthy host's facts (the
	// rows past maxFactRows): not errors, so a class report still folds
	// the host among its ready students.
	Notes     []string `json:"notes,omitempty"`
	FactsLink string   `json:"facts_link,omitempty"`
	Memlock   string   `json:"memlock,omitempty"`
	// Provision is what this run's provisioning did there (provision.go);
	// nil when the run did not provision the host.
	Provision *Provision `json:"provision,omitempty"`
}

// KV is a labelled value.
type KV struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// Netdev is one network interface of a host.
type Netdev struct {
	Name    string `json:"name"`
	MTU     int    `json:"mtu"`
	State   string `json:"state,omitempty"`
	MAC     string `json:"mac,omitempty"`
	Addrs   string `json:"addrs,omitempty"`
	Devices string `json:"rxe,omitempty"` // rxe devices on top of it
	// Driver, Speed ("10 Gb/s") and PCIID ("8086:1572") say what NIC it is.
	Driver string `json:"driver,omitempty"`
	Speed  string `json:"speed,omitempty"`
	PCIID  string `json:"pci_id,omitempty"`
}

// RDMADev is one RDMA device with its first port's state and GIDs.
type RDMADev struct {
	Name      string `json:"name"`
	Driver    string `json:"kind"`
	Parent    string `json:"parent,omitempty"`
	NodeGUID  string `json:"node_guid,omitempty"`
	Port      int    `json:"port,omitempty"`
	State     string `json:"state,omitempty"`
	ActiveMTU int    `json:"active_mtu,omitempty"`
	MaxMTU    int    `json:"max_mtu,omitempty"`
	GIDs      []KV   `json:"gids,omitempty"` // "1 (RoCE v2)" -> gid
}

// Workload is one workload's outcome, numbers and charts.
type Workload struct {
	Name   string `json:"name"`
	Anchor string `json:"anchor"` // id attribute, safe characters only
	Tool   string `json:"tool"`
	// Folded: a workload of a ready student of a large class, shown
	// under a closed <details> after the others (Students.Folded).
	Folded      bool     `json:"folded,omitempty"`
	ChartFamily string   `json:"kind"` // bw, lat, pingpong, rping, tcp, exec
	Hosts       []string `json:"hosts,omitempty"`
	Devices     []string `json:"devices,omitempty"`
	Status      string   `json:"status,omitempty"`
	Error       string   `json:"error,omitempty"`
	Expects     []Expect `json:"expects,omitempty"`
	// ExpectsMore is how many expects past the report's bound are not
	// shown (maxExpects), ExpectsMoreFailed how many of them did not hold.
	ExpectsMore       int `json:"expects_more,omitempty"`
	ExpectsMoreFailed int `json:"expects_more_failed,omitempty"`
	// Result is its headline, as the run's table, summary.md and
	// compare print it (its tool's View; results.KeyNumbers), Trouble the
	// kernel's trouble counters that moved (results.TroubleText).
	Result   string   `json:"result,omitempty"`
	Trouble  string   `json:"trouble,omitempty"`
	Table    Table    `json:"table"`
	Charts   []*Chart `json:"charts,omitempty"`
	Links    []Link   `json:"links,omitempty"`
	Duration string   `json:"duration,omitempty"`
	Config   string   `json:"config,omitempty"` // how the lab asked it to run
	// Stack is what the kernel's counters saw during the workload; nil
	// when none were read (exec, runs before counters).
	Stack *Stack `json:"stack,omitempty"`
	// Impair is the link impairment in force (loss.go).
	Impair string `json:"impair,omitempty"`
	// Why puts the impairment, the trouble counters that moved and the
	// wire analysis of its own captures side by side (why.go).
	Why *Why `json:"why,omitempty"`
	// Bidirectional says its bandwidth and message rate are the sum of
	// both directions (perftest -b); Parse is what the output parser did
	// not read or noted, each distinct line once, ParseSummary says it in
	// one sentence.
	Bidirectional bool        `json:"bidirectional,omitempty"`
	ParseSummary  string      `json:"parse_summary,omitempty"`
	Parse         []ParseLine `json:"parse,omitempty"`
	// RDMA is how its devices carry RDMA ("RoCE (rxe)", "iWARP (siw)"),
	// as results.json recorded it; empty for tcp and exec.
	RDMA string `json:"rdma,omitempty"`
}

// Stack is "what the stack saw": the counters that moved (host, device,
// counter, delta), trouble apart from traffic, how many did not, and
// those that could not be read, are absent on their device, or were reset.
type Stack struct {
	Trouble Table         `json:"trouble"`
	Traffic Table         `json:"traffic"`
	Still   int           `json:"still"`
	Notes   []CounterNote `json:"notes,omitempty"`
}

// CounterNote is one counter, or folder of them, that is not a delta.
type CounterNote struct {
	Problem string `json:"kind"` // unreadable, absent, reset
	What    string `json:"what"` // "server rxe_eth1 hw_counters/rcvd_seq_err"
	Reason  string `json:"reason"`
}

// ParseLine is one line the output parser did not read (Unread: as the tool
// printed it) or one note of its own, with the runs it came from.
type ParseLine struct {
	Text   string `json:"text"`
	Unread bool   `json:"unread,omitempty"`
	Runs   string `json:"runs"`
}

// Table is a rendered table: every cell already formatted for people
// (human units, as summary.md). Raw, when set, is beside Rows: the value
// each cell shows as results.json holds it ("" where the cell is that value),
// in Units (by column), for the cell's data-value and title attributes.
type Table struct {
	Columns []string   `json:"columns"`
	Rows    [][]string `json:"rows"`
	Raw     [][]string `json:"raw,omitempty"`
	Units   []string   `json:"units,omitempty"`
}

// add appends a row of cells shown and their raw values.
func (t *Table) add(cells []string, raw []string) {
	t.Rows = append(t.Rows, cells)
	t.Raw = append(t.Raw, raw)
}

// Expect is one expect check.
type Expect struct {
	Condition string `json:"condition"`
	Message   string `json:"message,omitempty"`
	Held      bool   `json:"held"`
	Skipped   bool   `json:"skipped,omitempty"` // its workload did not complete: not evaluated
	Where     string `json:"where,omitempty"`   // "size 4K, repeat 1"
	Value     string `json:"value,omitempty"`   // what the condition read
	Error     string `json:"error,omitempty"`   // the condition could not be evaluated
}

// Problem is a failed workload or an expect that did not hold, listed at
// the top of the page with a link to its workload.
type Problem struct {
	Anchor string `json:"anchor"`
	What   string `json:"what"`
	Detail string `json:"detail,omitempty"`
}

// ExpectTotals counts expect checks over the run.
type ExpectTotals struct {
	Held    int `json:"held"`
	Failed  int `json:"failed"`
	Skipped int `json:"skipped,omitempty"`
}

// Compare puts the RDMA bandwidth workloads beside the TCP baseline.
type Compare struct {
	// Rule says in words which figures are compared (results.RDMAvsTCPRule).
	Rule  string `json:"rule,omitempty"`
	Table Table  `json:"table"`
	Chart *Chart `json:"chart"`
}

// Capture is one pcap's summary.
type Capture struct {
	Name        string `json:"name"`
	Host        string `json:"host"`
	Link        Link   `json:"link"`
	Packets     int64  `json:"packets"`
	Bytes       int64  `json:"bytes"`
	Invalid     int64  `json:"invalid,omitempty"`
	Span        string `json:"span,omitempty"`    // first to last packet
	Config      string `json:"config,omitempty"`  // what the lab asked tcpdump to take
	Traffic     string `json:"traffic,omitempty"` // RoCEv2 / TCP / other totals
	Opcodes     Table  `json:"opcodes"`
	Connections Table  `json:"connections"`
	CM          *Table `json:"cm,omitempty"`    // RDMA-CM messages, the control plane
	IWARP       *Table `json:"iwarp,omitempty"` // iWARP connections, one row per direction
	// TCP lists the TCP connections that carried no iWARP, each named
	// after its workload (a run's capture only).
	TCP     *Table   `json:"tcp,omitempty"`
	IOGraph *Chart   `json:"io_graph,omitempty"`
	Notes   []string `json:"notes,omitempty"` // naks, retransmissions, truncation
	Error   string   `json:"error,omitempty"`
}

// Link is a relative link into the run directory.
type Link struct {
	Path  string `json:"path"` // slash-separated, relative to the run dir
	Label string `json:"label"`
	Size  string `json:"size,omitempty"`
	// Note says why a file has no size: one written after this page.
	Note string `json:"note,omitempty"`
}
