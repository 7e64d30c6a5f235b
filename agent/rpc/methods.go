package rpc

import (
	"encoding/json"
	"reflect"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
)

// Method is one agent method with its params type P and result type R:
// Call(ctx, c, rpc.Facts, proto.FactsParams{}) returns a proto.Facts, and a
// wrong params type does not compile. Every method of proto has exactly one
// Method value below (TestMethodsCoverProto).
type Method[P, R any] struct {
	Name string
	// Base is how long the agent may take to answer (a deadline generous
	// for hosts emulated by QEMU's TCG); a call that carries a bound of its
	// own (a workload's timeout, a readiness wait) gets that bound plus
	// Base.
	Base time.Duration
	// own is the bound the params carry; unbounded: the agent's answer
	// may legitimately take as long as the caller asked (a proc.wait
	// without a timeout), so only heartbeats watch the agent.
	own func(P) (d time.Duration, unbounded bool)
}

// None is the params of methods that take none.
type None = struct{}

// limit is a method's deadline for untyped calls (Client.Do), by name.
type limit struct {
	base time.Duration
	own  func(any) (time.Duration, bool)
}

var limits = map[string]limit{}

// results is each method's result type, by name (ResultTypes).
var results = map[string]reflect.Type{}

func def[P, R any](name string, base time.Duration, own func(P) (time.Duration, bool)) Method[P, R] {
	m := Method[P, R]{Name: name, Base: base, own: own}
	results[name] = reflect.TypeFor[R]()
	limits[name] = limit{base: base, own: func(params any) (time.Duration, bool) {
		if own == nil {
			return 0, false
		}
		return own(paramsAs[P](params))
	}}
	return m
}

// paramsAs turns what an untyped call passed into P: P itself, a *P, nil
// (the zero P), or anything else through its JSON (the agent reads the
// JSON too, e.g. proto.FilesListParams for files.list's options).
func paramsAs[P any](params any) P {
	var p P
	switch v := params.(type) {
	case nil:
	case P:
		p = v
	case *P:
		if v != nil {
			p = *v
		}
	default:
		if b, err := json.Marshal(params); err == nil {
			json.Unmarshal(b, &p)
		}
	}
	return p
}

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// bounded by a timeout in the params; 0 there means no limit.
func byTimeout(n int) (time.Duration, bool) {
	if n <= 0 {
		return 0, true
	}
	return ms(n), false
}

// The agent's methods. Base deadlines are generous: facts asks every tool
// its version (capped at 30 s on the host), files.list hashes every file
// it lists (a 1 GiB capture on an emulated VM), rxe.ensure may load
// rdma_rxe, and the stops wait out their grace.
var (
	Ping         = def[None, proto.Pong](proto.MethodPing, time.Minute, nil)
	Facts        = def[proto.FactsParams, proto.Facts](proto.MethodFacts, 2*time.Minute, nil)
	DeviceEnsure = def[proto.DeviceEnsureParams, proto.DeviceInfo](proto.MethodDeviceEnsure, 2*time.Minute, func(p proto.DeviceEnsureParams) (time.Duration, bool) { return ms(p.WaitMs), false })
	DeviceDelete = def[proto.DeviceDeleteParams, proto.DeviceDeleteResult](proto.MethodDeviceDelete, 2*time.Minute, nil)
	RDMAUse      = def[proto.RDMAUseParams, proto.DeviceInfo](proto.MethodRDMAUse, time.Minute, nil)
	ProcStart    = def[proto.ProcStartParams, proto.ProcStarted](proto.MethodProcStart, time.Minute, procReady)
	ProcWait     = def[proto.ProcWaitParams, proto.ProcResult](proto.MethodProcWait, time.Minute, func(p proto.ProcWaitParams) (time.Duration, bool) { return byTimeout(p.TimeoutMs) })
	ProcSignal   = def[proto.ProcSignalParams, proto.ProcSignalResult](proto.MethodProcSignal, time.Minute, nil)
	ProcStop     = def[proto.ProcStopParams, proto.ProcResult](proto.MethodProcStop, time.Minute, func(p proto.ProcStopParams) (time.Duration, bool) { return ms(p.GraceMs), false })
	CaptureStart = def[proto.CaptureStartParams, proto.CaptureStarted](proto.MethodCaptureStart, 2*time.Minute, nil)
	CaptureStop  = def[proto.CaptureStopParams, proto.CaptureResult](proto.MethodCaptureStop, 2*time.Minute, nil)
	TCPServe     = def[proto.TCPServeParams, proto.TCPServing](proto.MethodTCPServe, time.Minute, nil)
	TCPSend      = def[proto.TCPSendParams, proto.TCPResult](proto.MethodTCPSend, time.Minute, func(p proto.TCPSendParams) (time.Duration, bool) { return byTimeout(p.TimeoutMs) })
	TCPWait      = def[proto.TCPWaitParams, proto.TCPResult](proto.MethodTCPWait, time.Minute, func(p proto.TCPWaitParams) (time.Duration, bool) { return byTimeout(p.TimeoutMs) })
	FilesList    = def[proto.FilesListOptions, proto.FilesList](proto.MethodFilesList, 10*time.Minute, nil)
	FilesRead    = def[proto.FilesReadParams, proto.FileData](proto.MethodFilesRead, 2*time.Minute, nil)
	FilesWrite   = def[proto.FilesWriteParams, proto.FileWritten](proto.MethodFilesWrite, 2*time.Minute, nil)
	Cleanup      = def[proto.CleanupParams, proto.CleanupResult](proto.MethodCleanup, 2*time.Minute, nil)
	Release      = def[None, proto.CleanupResult](proto.MethodRelease, 2*time.Minute, nil)
	Lease        = def[proto.LeaseParams, proto.LeaseResult](proto.MethodLease, time.Minute, nil)
	Watchdog     = def[proto.WatchdogParams, proto.WatchdogParams](proto.MethodWatchdog, time.Minute, nil)
	// Provision: the host's own bound (TimeoutMs, 10 minutes by default)
	// plus the grace a cancelled install gets to finish its transaction.
	Provision = def[proto.ProvisionParams, proto.ProvisionResult](proto.MethodProvision, 2*time.Minute, func(p proto.ProvisionParams) (time.Duration, bool) {
		t, g := p.TimeoutMs, p.GraceMs
		if t <= 0 {
			t = 10 * 60 * 1000
		}
		if g <= 0 {
			g = 2 * 60 * 1000
		}
		return ms(t + g), false
	})
	// CountersRead reads a few dozen sysfs files: fast, but emulated VMs
	// are slow and this runs twice per workload and host.
	CountersRead = def[proto.CountersReadParams, proto.Counters](proto.MethodCountersRead, time.Minute, nil)
	// impair.apply may load sch_netem.
	ImpairApply  = def[proto.ImpairParams, proto.ImpairResult](proto.MethodImpairApply, time.Minute, nil)
	ImpairRemove = def[proto.ImpairRemoveParams, proto.ImpairResult](proto.MethodImpairRemove, time.Minute, nil)
)

// procReady: proc.start answers once the process is ready, after at most
// its readiness timeout (the agent's default is 10 s).
func procReady(p proto.ProcStartParams) (time.Duration, bool) {
	if p.Ready == nil {
		return 0, false
	}
	if p.Ready.TimeoutMs > 0 {
		return ms(p.Ready.TimeoutMs), false
	}
	return 10 * time.Second, false
}

// Deadline is how long the client waits for the answer to a call of method
// with params; ok is false when only heartbeats bound it. base, when > 0,
// replaces the method's Base (Options.Timeout). An unknown method gets
// the longest fixed base.
func Deadline(method string, params any, base time.Duration) (d time.Duration, ok bool) {
	l, known := limits[method]
	if !known {
		l = limits[proto.MethodFilesList]
	}
	if base <= 0 {
		base = l.base
	}
	if l.own == nil {
		return base, true
	}
	own, unbounded := l.own(params)
	if unbounded {
		return 0, false
	}
	return base + own, true
}

// Methods lists the names of every Method value.
func Methods() []string {
	out := make([]string, 0, len(limits))
	for n := range limits {
		out = append(out, n)
	}
	return out
}

// ResultTypes maps every method's name to its result type: the answers a
// host sends, each of whose fields has a bound (proto.Bounds).
func ResultTypes() map[string]reflect.Type {
	out := make(map[string]reflect.Type, len(results))
	for n, t := range results {
		out[n] = t
	}
	return out
}
