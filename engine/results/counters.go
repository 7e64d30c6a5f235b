package results

import (
	"sort"
	"strings"

	"github.com/rlab-dev/rlab/kinds"
)

// The kernel's own counters, read before and after each workload on both
// ends (counters.read of the agent): their deltas are samples whose metric
// is the kernel's name of the counter (rcvd_seq_err), with Meta.Hosts the
// one host and Meta.Devices the one device (RDMA device or netdev) it was
// read on, and Meta.Extra["counter"] the sysfs folder (hw_counters,
// counters, device_hw_counters, statistics). A workload's counter samples
// cover all its sizes and repeats (Meta.Size 0).

// Counter kinds: how `rlab compare` reads a change.
const (
	// CounterTraffic counts what went through (packets, bytes, operations):
	// compared only with an explicit threshold, as duration is.
	CounterTraffic = "traffic"
	// CounterTrouble counts something that went wrong (a retransmission, a
	// sequence error, an RNR NAK, a drop): lower is better, and from none
	// to some is a regression.
	CounterTrouble = "trouble"
)

// Counter is one counter rlab knows: what it means and which devices have it.
type Counter struct {
	Name    string
	Unit    string // "packets", "bytes" or "count"
	Class   string // CounterTraffic or CounterTrouble
	Devices string // which devices have it: "rxe", "mlx5", "IB PortCounters", "netdev"
	Doc     string
}

// Counters is the vocabulary of counters, by device.
var Counters = []Counter{
	// rxe: ports/1/hw_counters (drivers/infiniband/sw/rxe/rxe_hw_counters.c)
	{"sent_pkts", "packets", CounterTraffic, "rxe", "RoCEv2 packets rxe sent (requests, responses and ACKs)"},
	{"rcvd_pkts", "packets", CounterTraffic, "rxe", "RoCEv2 packets rxe received and accepted"},
	{"duplicate_request", "packets", CounterTrouble, "rxe, mlx5", "requests the responder received twice: the requester retransmitted (a lost ACK or response, or a timeout)"},
	{"out_of_seq_request", "packets", CounterTrouble, "rxe", "requests the responder received ahead of the PSN it expected: a packet before them was lost; it answers with a NAK sequence error"},
	{"rcvd_rnr_err", "count", CounterTrouble, "rxe", "RNR NAKs the requester received: the peer had no receive posted"},
	{"send_rnr_err", "count", CounterTrouble, "rxe", "RNR NAKs the responder sent: no receive was posted when a SEND arrived"},
	{"rcvd_seq_err", "count", CounterTrouble, "rxe", "NAK sequence errors the requester received: the responder saw a gap and asked for a resend from that PSN"},
	{"ack_deferred", "count", CounterTraffic, "rxe", "times the completer put off its work to run later (scheduling, not an error)"},
	{"retry_exceeded_err", "count", CounterTrouble, "rxe", "work requests that failed after retry_cnt transport retries (the peer stopped answering)"},
	{"retry_rnr_exceeded_err", "count", CounterTrouble, "rxe", "work requests that failed after rnr_retry RNR retries"},
	{"completer_retry_err", "count", CounterTrouble, "rxe", "retransmissions the requester started: after a NAK sequence error or an ACK timeout"},
	{"send_err", "count", CounterTrouble, "rxe", "packets rxe could not hand to the netdev"},
	{"link_downed", "count", CounterTrouble, "rxe, IB PortCounters", "times the port's link went down"},
	{"rdma_sends", "count", CounterTraffic, "rxe", "send work requests the requester completed"},
	{"rdma_recvs", "count", CounterTraffic, "rxe", "receive work requests the responder completed"},
	// mlx5: ports/N/hw_counters and hw_counters (drivers/infiniband/hw/mlx5/counters.c)
	{"rx_write_requests", "count", CounterTraffic, "mlx5", "RDMA WRITE requests received"},
	{"rx_read_requests", "count", CounterTraffic, "mlx5", "RDMA READ requests received"},
	{"rx_atomic_requests", "count", CounterTraffic, "mlx5", "atomic requests received"},
	{"out_of_buffer", "count", CounterTrouble, "mlx5", "packets dropped for lack of a receive WQE"},
	{"out_of_sequence", "packets", CounterTrouble, "mlx5", "packets received out of sequence (a gap: a packet was lost)"},
	{"rnr_nak_retry_err", "count", CounterTrouble, "mlx5", "RNR NAKs received whose retries were exhausted"},
	{"packet_seq_err", "count", CounterTrouble, "mlx5", "NAK sequence errors received: the requester retransmits"},
	{"implied_nak_seq_err", "count", CounterTrouble, "mlx5", "implied NAK sequence errors (an ACK with a later PSN than expected)"},
	{"local_ack_timeout_err", "count", CounterTrouble, "mlx5", "ACK timeouts of the requester: it retransmits"},
	{"req_transport_retries_exceeded", "count", CounterTrouble, "mlx5", "requests that failed after the transport retries"},
	{"req_rnr_retries_exceeded", "count", CounterTrouble, "mlx5", "requests that failed after the RNR retries"},
	{"np_cnp_sent", "packets", CounterTrouble, "mlx5", "CNPs sent as the notification point (ECN-marked packets arrived: congestion)"},
	{"np_ecn_marked_roce_packets", "packets", CounterTrouble, "mlx5", "RoCE packets received ECN-marked (congestion on the path)"},
	{"rp_cnp_handled", "packets", CounterTrouble, "mlx5", "CNPs the reaction point received and slowed down for"},
	{"rp_cnp_ignored", "packets", CounterTrouble, "mlx5", "CNPs the reaction point received and ignored"},
	// IB PortCounters: ports/N/counters (drivers/infiniband/core/sysfs.c);
	// devices with a MAD interface (mlx5, not rxe).
	{"port_xmit_packets", "packets", CounterTraffic, "IB PortCounters", "packets the port sent"},
	{"port_rcv_packets", "packets", CounterTraffic, "IB PortCounters", "packets the port received"},
	{"port_xmit_data", "count", CounterTraffic, "IB PortCounters", "data the port sent, in 4-byte words"},
	{"port_rcv_data", "count", CounterTraffic, "IB PortCounters", "data the port received, in 4-byte words"},
	{"port_rcv_errors", "packets", CounterTrouble, "IB PortCounters", "packets received with errors"},
	{"port_xmit_discards", "packets", CounterTrouble, "IB PortCounters", "packets the port discarded instead of sending"},
	{"symbol_error", "count", CounterTrouble, "IB PortCounters", "symbol errors on the link"},
	{"port_xmit_wait", "count", CounterTrouble, "IB PortCounters", "ticks the port had data to send and no credit (back pressure)"},
	// netdev: /sys/class/net/NETDEV/statistics
	{"rx_packets", "packets", CounterTraffic, "netdev", "packets the netdev received"},
	{"tx_packets", "packets", CounterTraffic, "netdev", "packets the netdev sent"},
	{"rx_bytes", "bytes", CounterTraffic, "netdev", "bytes the netdev received"},
	{"tx_bytes", "bytes", CounterTraffic, "netdev", "bytes the netdev sent"},
	{"rx_dropped", "packets", CounterTrouble, "netdev", "received packets dropped by the kernel (no buffer, unknown protocol...)"},
	{"tx_dropped", "packets", CounterTrouble, "netdev", "packets dropped on the way out (a full queue, a qdisc drop)"},
	{"rx_errors", "packets", CounterTrouble, "netdev", "received packets with errors (CRC, frame, length)"},
	{"tx_errors", "packets", CounterTrouble, "netdev", "packets that failed to be sent"},
	{"rx_missed_errors", "packets", CounterTrouble, "netdev", "packets the NIC missed for lack of host buffers"},
	// tcp: the sender's connection, TCP_INFO (include/uapi/linux/tcp.h)
	{"tcpi_total_retrans", "packets", CounterTrouble, "tcp", "segments the tcp workload's sender retransmitted (its connection's tcpi_total_retrans at the end of each transfer, summed over repeats): losses and timeouts"},
}

var counterIndex = func() map[string]int {
	m := map[string]int{}
	for i, c := range Counters {
		m[c.Name] = i
	}
	return m
}()

// CounterByName returns the counter named n.
func CounterByName(n string) (Counter, bool) {
	if i, ok := counterIndex[n]; ok {
		return Counters[i], true
	}
	return Counter{}, false
}

// CounterUnit is the unit of a counter's delta: the vocabulary's, else what
// the kernel's name says.
func CounterUnit(name string) string {
	if c, ok := CounterByName(name); ok {
		return c.Unit
	}
	switch {
	case strings.Contains(name, "bytes"):
		return "bytes"
	case strings.Contains(name, "pkts"), strings.Contains(name, "packets"):
		return "packets"
	}
	return "count"
}

// netdevCounter: the counter is a netdev statistic (read for tcp workloads
// too).
func netdevCounter(c Counter) bool { return c.Devices == "netdev" }

// tcpCounter: the counter is the tcp workload's own connection's (TCP_INFO).
func tcpCounter(c Counter) bool { return c.Devices == "tcp" }

// TCPInfoSource is the Meta.Extra[CounterExtra] of a tcp workload's
// TCP_INFO counters.
const TCPInfoSource = "tcp_info"

// CounterNames are the counters an expect of tool may read: every device
// counter for RDMA tools, the netdev statistics and the connection's
// TCP_INFO for tcp, none for exec.
func CounterNames(tool string) []string {
	t, ok := kinds.Lookup(tool)
	if !ok || t.OneHost {
		return nil
	}
	var out []string
	for _, c := range Counters {
		if t.RDMA && !tcpCounter(c) || !t.RDMA && (netdevCounter(c) || tcpCounter(c)) {
			out = append(out, c.Name)
		}
	}
	return out
}

// CounterExtra is the Meta.Extra key that marks a counter sample: its value
// is the sysfs folder the counter was read from.
const CounterExtra = "counter"

// IsCounter reports whether s is the delta of a kernel counter.
func IsCounter(s Sample) bool { return SourceOf(s) == SourceCounter }

// Measures returns the samples that are not counter deltas: what the tools
// measured, the rows of the summary's and report's tables.
func Measures(ss []Sample) []Sample {
	out := make([]Sample, 0, len(ss))
	for _, s := range ss {
		if !IsCounter(s) {
			out = append(out, s)
		}
	}
	return out
}

// CounterNote is something about a workload's counters that is not a
// delta: a counter, or a folder of them, that could not be read (never
// recorded as zero), one that is absent on the device, or one that went
// backwards between before and after (reset or wrapped).
type CounterNote struct {
	Host    string `json:"host"`
	Device  string `json:"device,omitempty"`
	Source  string `json:"source,omitempty"`
	Counter string `json:"counter,omitempty"` // empty: the whole folder
	// Problem is "unreadable", "absent" or "reset".
	Problem string `json:"kind"`
	Reason  string `json:"reason"`
}

// What names the counter or folder a note is about, for people:
// "server rxe_eth1 hw_counters/rcvd_seq_err".
func (n CounterNote) What() string {
	what := n.Host
	if n.Device != "" {
		what += " " + n.Device
	}
	if n.Source != "" {
		what += " " + n.Source
	}
	if n.Counter != "" {
		what += "/" + n.Counter
	}
	return what
}

// Counter note kinds.
const (
	NoteUnreadable = "unreadable"
	NoteAbsent     = "absent"
	NoteReset      = "reset"
)

// CounterDeltas returns a workload's counter samples, non-zero first, for
// display: sorted by host, device, then name.
func CounterDeltas(ss []Sample, workload string) []Sample {
	var out []Sample
	for _, s := range ss {
		if IsCounter(s) && s.Meta.Workload == workload {
			out = append(out, s)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if ha, hb := strings.Join(a.Meta.Hosts, ","), strings.Join(b.Meta.Hosts, ","); ha != hb {
			return ha < hb
		}
		if da, db := strings.Join(a.Meta.Devices, ","), strings.Join(b.Meta.Devices, ","); da != db {
			return da < db
		}
		return a.Metric < b.Metric
	})
	return out
}
