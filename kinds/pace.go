package kinds

import (
	"fmt"
	"strconv"
	"time"
)

// Pace is how a family says how long one run of its tool takes (one size,
// one repeat), for the estimate `rlab plan` and `rlab run` print
// (engine/plan Estimate). Each family puts its rule in its Desc, so the
// estimate switches on no tool name: a run bound by a duration takes that
// duration, one bound by bytes (tcp) takes them at Rate, one bound by
// iterations takes each iteration the larger of PerIteration and the
// message's size at Rate; every run adds Start.
//
// The figures are conservative ones for the slowest bed rlab is used on:
// Soft-RoCE between two TCG-emulated VMs on a shared 2-core machine
// (BENCHMARKS.md: about 0.1 Gb/s, latencies of 300 µs to 1 ms, several
// seconds to start a perftest pair), so real hardware and KVM finish
// sooner than estimated.
type Pace struct {
	// Start is what each run costs besides its traffic: the server started
	// and waited for, the client's connection and set-up, its output read.
	Start time.Duration
	// PerIteration is one iteration of a small message; Rate (bytes per
	// second) bounds a large one, and a bytes-bound run.
	PerIteration time.Duration
	Rate         float64
	// Iterations and Size are the tool's own defaults, used when the lab
	// sets neither iterations nor a duration, or no sizes.
	Iterations int64
	Size       int64
	// Unknown says why the lab does not tell a run's time (exec: the
	// command's own); such a run counts as Start.
	Unknown string
}

// Run is the estimated time of one run with o's options at size (0: the
// tool's default size).
func (p Pace) Run(o Options, size int64) time.Duration {
	switch {
	case p.Unknown != "":
		return p.Start
	case o.Duration > 0:
		return p.Start + o.Duration
	case o.Bytes > 0 && p.Rate > 0:
		return p.Start + rateTime(o.Bytes, p.Rate)
	}
	n := o.Iterations
	if n <= 0 {
		n = p.Iterations
	}
	if size <= 0 {
		size = p.Size
	}
	per := p.PerIteration
	if p.Rate > 0 {
		per = max(per, rateTime(size, p.Rate))
	}
	return p.Start + time.Duration(n)*per
}

// Rule says in words how Run counts one run with o's options: what the
// estimate assumes.
func (p Pace) Rule(o Options) string {
	start := "+ " + short(p.Start) + " to start"
	switch {
	case p.Unknown != "":
		return p.Unknown + ": counted as " + short(p.Start)
	case o.Duration > 0:
		return short(o.Duration) + " each " + start
	case o.Bytes > 0 && p.Rate > 0:
		return SizeText(o.Bytes) + " at " + gbps(p.Rate) + " " + start
	}
	n := o.Iterations
	if n <= 0 {
		n = p.Iterations
	}
	s := fmt.Sprintf("%d iterations at %s", n, short(p.PerIteration))
	if p.Rate > 0 {
		s += " (or the size at " + gbps(p.Rate) + ")"
	}
	return s + " each " + start
}

func rateTime(bytes int64, rate float64) time.Duration {
	return time.Duration(float64(bytes) / rate * float64(time.Second))
}

// gbps says a rate in bytes per second in Gb/s, the unit of the
// bandwidth metrics.
func gbps(rate float64) string {
	return strconv.FormatFloat(rate*8/1e9, 'g', 3, 64) + " Gb/s"
}

// short prints a duration without a trailing zero unit ("3s", "1m30s",
// "500µs").
func short(d time.Duration) string {
	s := d.String()
	for _, z := range []string{"m0s", "h0m"} {
		if len(s) > len(z) && s[len(s)-len(z):] == z {
			s = s[:len(s)-len(z)+1]
		}
	}
	return s
}
