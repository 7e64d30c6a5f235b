package main

import (
	"runtime/debug"
)

// A run over many hosts holds a live heap that grows with the host count
// (each host's SSH transport, agent session, facts, counters and results:
// ~150-175 KiB a host at 1,000 hosts, BENCHMARKS.md "Class run at 1,000
// hosts"), and the Go runtime's default (GOGC=100) lets the process grow to
// about twice that before it collects: 366-405 MiB peak RSS for a 1,000-host
// class run. A soft memory limit sized from the host count keeps the peak
// near the live heap at a small CPU cost. It is set only for runs this
// large, never for every command: a limit below a command's live heap (rlab
// pcap or report of a big capture) would make it collect continuously.
const (
	memLimitMinHosts = 256       // below this the default GC's peak is small (~120 MiB at 200 hosts)
	memLimitBase     = 64 << 20  // the process without hosts: binary, plan, report
	memLimitPerHost  = 192 << 10 // above the ~150-175 KiB a host holds live at the peak
)

// memoryLimit is the soft memory limit (bytes) for a run over hosts hosts,
// or 0 for none: a small run, or the user's own GOMEMLIMIT (env, as the
// environment has it), which the Go runtime has already applied and rlab
// leaves alone.
func memoryLimit(hosts int, env string) int64 {
	if env != "" || hosts < memLimitMinHosts {
		return 0
	}
	return memLimitBase + int64(hosts)*memLimitPerHost
}

// setMemoryLimit applies memoryLimit's limit, if any, and returns it.
func setMemoryLimit(hosts int, env string) int64 {
	n := memoryLimit(hosts, env)
	if n > 0 {
		debug.SetMemoryLimit(n)
	}
	return n
}
