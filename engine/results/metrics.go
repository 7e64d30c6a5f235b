package results

// Metric describes one kind of sample: its name in results.json, its unit,
// the attribute an `expect` condition reads it as (result.<Attr>), and which
// direction is better (for `rlab compare`). This table is the one place these
// names are defined; parsers, expect evaluation, summaries and compare use it.
type Metric struct {
	Name           string // Sample.Metric
	Unit           string // Sample.Unit
	Attr           string // result.<Attr> in expect conditions
	HigherIsBetter bool
	Doc            string
}

// Metrics lists every metric rlab records.
var Metrics = []Metric{
	// perftest ib_*_bw (always run with --report_gbits)
	{"bw_peak", "Gb/s", "bw_peak_gbps", true, "perftest peak bandwidth"},
	{"bw_avg", "Gb/s", "bw_avg_gbps", true, "perftest average bandwidth"},
	{"msg_rate", "Mpps", "msg_rate_mpps", true, "perftest message rate"},
	// perftest ib_*_lat
	{"lat_min", "usec", "lat_min_us", false, "perftest minimum latency"},
	{"lat_max", "usec", "lat_max_us", false, "perftest maximum latency"},
	{"lat_typical", "usec", "lat_typical_us", false, "perftest typical (median) latency"},
	{"lat_avg", "usec", "lat_avg_us", false, "perftest average latency"},
	{"lat_stdev", "usec", "lat_stdev_us", false, "perftest latency standard deviation"},
	{"lat_p99", "usec", "lat_p99_us", false, "perftest 99th percentile latency"},
	{"lat_p999", "usec", "lat_p999_us", false, "perftest 99.9th percentile latency"},
	// ibv_*_pingpong
	{"pp_bw", "Mbit/s", "pp_mbps", true, "pingpong throughput"},
	{"pp_lat", "usec/iter", "pp_usec_per_iter", false, "pingpong time per iteration"},
	// rping
	{"rping_count", "count", "rping_count", true, "rping ping-pongs completed"},
	// built-in TCP bulk transfer
	{"tcp_bw", "Gb/s", "tcp_gbps", true, "TCP bulk throughput"},
	{"tcp_bw_mib", "MiB/s", "tcp_mibps", true, "TCP bulk throughput"},
	// every workload
	{"exit_code", "code", "exit_code", false, "exit code of the client side (exec: the command)"},
	{"duration", "s", "duration_s", false, "wall time of the workload run"},
}

// MetricByName returns the metric named n.
func MetricByName(n string) (Metric, bool) {
	for _, m := range Metrics {
		if m.Name == n {
			return m, true
		}
	}
	return Metric{}, false
}

// MetricByAttr returns the metric an expect attribute refers to.
func MetricByAttr(a string) (Metric, bool) {
	for _, m := range Metrics {
		if m.Attr == a {
			return m, true
		}
	}
	return Metric{}, false
}

// ToolMetrics returns the metric names a tool produces, for checking expect
// conditions at load time.
func ToolMetrics(tool string) []string {
	common := []string{"exit_code", "duration"}
	switch tool {
	case "ib_write_bw", "ib_read_bw", "ib_send_bw", "ib_atomic_bw":
		return append([]string{"bw_peak", "bw_avg", "msg_rate"}, common...)
	case "ib_write_lat", "ib_read_lat", "ib_send_lat", "ib_atomic_lat":
		return append([]string{"lat_min", "lat_max", "lat_typical", "lat_avg", "lat_stdev", "lat_p99", "lat_p999"}, common...)
	case "ibv_rc_pingpong", "ibv_uc_pingpong", "ibv_ud_pingpong", "ibv_srq_pingpong":
		return append([]string{"pp_bw", "pp_lat"}, common...)
	case "rping":
		return append([]string{"rping_count"}, common...)
	case "tcp":
		return append([]string{"tcp_bw", "tcp_bw_mib"}, common...)
	default: // exec
		return common
	}
}
