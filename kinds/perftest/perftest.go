// Package perftest is the perftest tool family: ib_{write,read,send,atomic}_{bw,lat}
// from the perftest package, between two RDMA devices. It holds their
// descriptors (Kind.Desc), their op (Kind.NewOp: a server/client pair per
// size and repeat, argv built by Argv) and their output parser (Kind.Parse:
// the text report and the --out_json file).
//
// It imports kinds, steps and engine/toolout (the shared op and parsing
// libraries); kinds/builtin registers it. Nothing imports it but
// kinds/builtin and tests.
package perftest

import (
	"time"

	"github.com/rlab-dev/rlab/engine/toolout"
	"github.com/rlab-dev/rlab/kinds"
	"github.com/rlab-dev/rlab/kinds/toolopts"
	"github.com/rlab-dev/rlab/steps"
)

// The flavors of this kind (kinds.Flavor): one op drives both, their
// tables differ.
const (
	BW  kinds.Flavor = "perftest_bw"  // ib_*_bw
	Lat kinds.Flavor = "perftest_lat" // ib_*_lat
)

// Kind is the perftest family; kinds/builtin registers it.
type Kind struct{}

// NewOp is the op of one perftest workload.
func (Kind) NewOp(w *steps.Workload) (steps.Op, error) { return newOp(w) }

// Parse reads one run's text report, or with opts.JSON its --out_json file.
func (Kind) Parse(stdout []byte, opts toolout.Options) ([]toolout.Row, toolout.Info, error) {
	return parse(stdout, opts)
}

const (
	bwHint  = "perftest's bandwidth in Gb/s (10^9 bits per second) and message rate in millions of messages per second, for each message size; a point is the median over repeats, and a bar through it spans the slowest to the fastest repeat (hover a point for the values)."
	latHint = "perftest's latency in microseconds for each message size: min, typical (median), average, 99th and 99.9th percentile and max (each the median over repeats). The gap between typical and p99 shows the jitter."
)

// writeImm is ib_write_bw's and ib_write_lat's RDMA WRITE with immediate:
// perftest's usage text lists it for the WRITE tests since 24.01.
var writeImm = kinds.ProbedFlag{Flag: "--write_with_imm",
	Since: "perftest has it since 24.01 (Debian trixie ships 25.01; bookworm's 4.5-0.17 has none)"}

// first is asked for the version of all perftest binaries: they come in one
// package.
const first = "ib_write_bw"

// Desc is every perftest tool and the metrics they record (ib_*_bw always
// run with --report_gbits).
func (Kind) Desc() kinds.Desc {
	d := kinds.Desc{Name: "perftest", Metrics: []kinds.Metric{
		{Name: "bw_peak", Unit: "Gb/s", HigherIsBetter: true, Doc: "perftest peak bandwidth", Aliases: []kinds.Alias{{Name: "bw_peak_gbps", Scale: 1}}},
		{Name: "bw_avg", Unit: "Gb/s", HigherIsBetter: true, Doc: "perftest average bandwidth", Aliases: []kinds.Alias{{Name: "bw_avg_gbps", Scale: 1}}},
		{Name: "msg_rate", Unit: "Mpps", HigherIsBetter: true, Doc: "perftest message rate", Aliases: []kinds.Alias{{Name: "msg_rate_mpps", Scale: 1}}},
		{Name: "lat_min", Unit: "usec", HigherIsBetter: false, Doc: "perftest minimum latency", Aliases: []kinds.Alias{{Name: "lat_min_us", Scale: 1}}},
		{Name: "lat_max", Unit: "usec", HigherIsBetter: false, Doc: "perftest maximum latency", Aliases: []kinds.Alias{{Name: "lat_max_us", Scale: 1}}},
		{Name: "lat_typical", Unit: "usec", HigherIsBetter: false, Doc: "perftest typical (median) latency", Aliases: []kinds.Alias{{Name: "lat_typical_us", Scale: 1}}},
		{Name: "lat_avg", Unit: "usec", HigherIsBetter: false, Doc: "perftest average latency", Aliases: []kinds.Alias{{Name: "lat_avg_us", Scale: 1}}},
		{Name: "lat_stdev", Unit: "usec", HigherIsBetter: false, Doc: "perftest latency standard deviation", Aliases: []kinds.Alias{{Name: "lat_stdev_us", Scale: 1}}},
		{Name: "lat_p99", Unit: "usec", HigherIsBetter: false, Doc: "perftest 99th percentile latency", Aliases: []kinds.Alias{{Name: "lat_p99_us", Scale: 1}}},
		{Name: "lat_p999", Unit: "usec", HigherIsBetter: false, Doc: "perftest 99.9th percentile latency", Aliases: []kinds.Alias{{Name: "lat_p999_us", Scale: 1}}},
	}}
	pkg := kinds.Packages{Debian: "perftest", RHEL: "perftest", SUSE: "perftest"}
	// How long a run takes under TCG (BENCHMARKS.md, the demo's soak): a
	// 3 s ib_write_bw size took 6–9 s, a 300-iteration ib_write_lat size
	// 6–12 s; Soft-RoCE moved about 0.1 Gb/s (1,500 µs per 4 KiB message)
	// with latencies of 300 µs to 1 ms.
	pace := kinds.Pace{Start: 6 * time.Second, Rate: 0.1e9 / 8}
	// -u, --qp-timeout: "QP timeout, timeout value is 4 usec * 2
	// ^(timeout), default 14" (perftest_parameters.c, DEF_QP_TIME), set on
	// RC QPs with retry_cnt 7 (perftest_resources.c), and with -R through
	// rdma_set_option(RDMA_OPTION_ID_ACK_TIMEOUT) since perftest 24.10.0-0.66.
	qpt := kinds.QPTimeout{Flag: "-u", Long: "--qp-timeout", Default: 14}
	// RDMA WRITE needs a connected QP, so no UD; READ and atomics need the
	// responder's reliable transport, so RC only.
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
		// perftest's own defaults: 5000 iterations for ib_write_bw, 1000
		// for the others (perftest_parameters.c), 65536-byte messages for
		// bandwidth, 2 for latency.
		bwIters := int64(1000)
		if op == "write" {
			bwIters = 5000
		}
		bwPace, latPace := pace, pace
		bwPace.PerIteration, bwPace.Iterations, bwPace.Size = 1500*time.Microsecond, bwIters, 65536
		latPace.PerIteration, latPace.Iterations, latPace.Size = time.Millisecond, 1000, 2
		// Which way the data goes: READ's responses come from the server;
		// a latency test of WRITE or SEND ping-pongs.
		bwData, latData := kinds.DataClient, kinds.DataBoth
		switch op {
		case "read":
			bwData, latData = kinds.DataServer, kinds.DataServer
		case "atomic":
			latData = kinds.DataClient
		}
		ver := kinds.Version{From: first}
		if bw == first {
			ver = kinds.Version{Args: []string{"--version"}, Pattern: `[0-9]+(?:\.[0-9]+)+`, PerftestHelp: true, // Version: 6.06
				HelpFlags: []string{writeImm.Flag}}
		}
		var probed []kinds.ProbedFlag
		if op == "write" {
			probed = []kinds.ProbedFlag{writeImm}
		}
		// siw reports no atomic capability (siw_query_device sets
		// atomic_cap = 0, "Revisit atomic caps if RFC 7306 gets supported",
		// drivers/infiniband/sw/siw/siw_verbs.c), nor does iWARP's RDMAP
		// (RFC 5040) define atomics.
		var noIWARP string
		if op == "atomic" {
			noIWARP = "iWARP has no atomic operations (RFC 5040's RDMAP defines none, and siw reports atomic_cap 0)"
		}
		d.Tools = append(d.Tools,
			kinds.Tool{Name: bw, Flavor: BW, RDMA: true, Data: bwData, Transports: tr, TransportWhy: why, RDMACMFlag: "-R", NoIWARP: noIWARP, QPTimeout: qpt,
				Sizes: true, FixedSize: fixed, Iterations: true, Duration: true, QPs: true, Pace: bwPace, ProbedFlags: probed,
				Metrics: []string{"bw_peak", "bw_avg", "msg_rate"},
				Program: &kinds.Program{Name: bw, Packages: pkg, Version: ver},
				Chart:   "bw", Hint: bwHint,
				View: kinds.View{
					Headline: []kinds.Figure{{Metric: "bw_avg", At: kinds.EverySize, Bidir: true,
						Then: []kinds.Figure{{Metric: "msg_rate", ShowSize: true}}}},
					Glance: kinds.Figure{Metric: "bw_avg", At: kinds.Largest},
					Charts: []kinds.Chart{
						{ID: "bw", Title: "Bandwidth vs message size",
							Series: []kinds.Series{{Metric: "bw_avg", Name: "average"}, {Metric: "bw_peak", Name: "peak"}}},
						{ID: "rate", Title: "Message rate vs message size",
							Series: []kinds.Series{{Metric: "msg_rate", Name: "message rate"}}},
					},
					Throughput: "bw_avg",
				}},
			kinds.Tool{Name: lat, Flavor: Lat, RDMA: true, Data: latData, Transports: tr, TransportWhy: why, RDMACMFlag: "-R", NoIWARP: noIWARP, QPTimeout: qpt,
				Sizes: true, FixedSize: fixed, Iterations: true, Duration: true, Pace: latPace, ProbedFlags: probed,
				Metrics: []string{"lat_min", "lat_max", "lat_typical", "lat_avg", "lat_stdev", "lat_p99", "lat_p999"},
				Program: &kinds.Program{Name: lat, Packages: pkg, Version: kinds.Version{From: first}},
				Chart:   "lat", Hint: latHint, HeadlineSmallest: true,
				View: kinds.View{
					Headline: []kinds.Figure{{Metric: "lat_typical", Label: "typical", ShowSize: true,
						With: []kinds.Figure{{Metric: "lat_p99", Label: "p99"}}}},
					Glance: kinds.Figure{Metric: "lat_typical", Word: "typ"},
					Charts: []kinds.Chart{{ID: "lat", Title: "Latency percentiles by message size", Type: kinds.Bars,
						Series: []kinds.Series{{Metric: "lat_min", Name: "min"}, {Metric: "lat_typical", Name: "typical"}, {Metric: "lat_avg", Name: "avg"},
							{Metric: "lat_p99", Name: "p99"}, {Metric: "lat_p999", Name: "p99.9"}, {Metric: "lat_max", Name: "max"}},
						When: []string{"lat_typical", "lat_avg"}}},
					TableOnly: []string{"lat_stdev"},
				}})
	}
	return d
}

// Options are the options perftest's tools take beyond the common ones, by
// their descriptor's flags (toolopts.Standard); engine/lab decodes a
// workload's through them (toolopts.Taker).
func (Kind) Options(t kinds.Tool) []toolopts.Option { return toolopts.Standard(t) }
