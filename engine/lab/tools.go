package lab

import "sort"

// ToolKind groups tools by how they are driven.
type ToolKind int

const (
	KindPerftestBW  ToolKind = iota // ib_*_bw
	KindPerftestLat                 // ib_*_lat
	KindPingpong                    // ibv_*_pingpong
	KindRping                       // rping
	KindTCP                         // built-in TCP bulk transfer
	KindExec                        // one command on one host
)

// Tool describes what a workload tool accepts. The table below is the one
// place tool options are checked, so a new tool is one entry.
type Tool struct {
	Name       string
	Kind       ToolKind
	RDMA       bool     // server/client are rxe references
	Transports []string // allowed transports, first is the default; nil = the tool fixes it
	// Why a transport is missing, for the diagnostic.
	TransportWhy string
	Sizes        bool  // accepts sizes
	FixedSize    int64 // sizes must all equal this (atomics: 8)
	MaxSize      int64 // 0 = no limit
	Iterations   bool
	Duration     bool
	QPs          bool
}

// tools is the table of every workload tool, built in one visible place.
var tools = toolTable()

func toolTable() map[string]Tool {
	tools := map[string]Tool{}
	register := func(t Tool) { tools[t.Name] = t }
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
		register(Tool{Name: "ib_" + op + "_bw", Kind: KindPerftestBW, RDMA: true, Transports: tr, TransportWhy: why,
			Sizes: true, FixedSize: fixed, Iterations: true, Duration: true, QPs: true})
		register(Tool{Name: "ib_" + op + "_lat", Kind: KindPerftestLat, RDMA: true, Transports: tr, TransportWhy: why,
			Sizes: true, FixedSize: fixed, Iterations: true, Duration: true})
	}
	for _, t := range []string{"rc", "uc", "srq"} {
		register(Tool{Name: "ibv_" + t + "_pingpong", Kind: KindPingpong, RDMA: true,
			TransportWhy: "the pingpong tool fixes its transport by name (ibv_rc_pingpong, ibv_uc_pingpong, ibv_ud_pingpong)",
			Sizes:        true, Iterations: true})
	}
	// UD messages must fit one packet: the largest RoCE MTU is 4096.
	register(Tool{Name: "ibv_ud_pingpong", Kind: KindPingpong, RDMA: true,
		TransportWhy: "the pingpong tool fixes its transport by name (ibv_rc_pingpong, ibv_uc_pingpong, ibv_ud_pingpong)",
		Sizes:        true, MaxSize: 4096, Iterations: true})
	register(Tool{Name: "rping", Kind: KindRping, RDMA: true,
		TransportWhy: "rping always uses an RC connection through the RDMA CM",
		Sizes:        true, Iterations: true})
	register(Tool{Name: "tcp", Kind: KindTCP, TransportWhy: "the tcp workload is a TCP stream", Duration: true})
	register(Tool{Name: "exec", Kind: KindExec, TransportWhy: "exec runs a command as given"})
	return tools
}

// LookupTool returns the tool named n.
func LookupTool(n string) (Tool, bool) {
	t, ok := tools[n]
	return t, ok
}

// ToolNames lists every tool name, sorted.
func ToolNames() []string {
	var ns []string
	for n := range tools {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return ns
}
