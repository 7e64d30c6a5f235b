// Command rlab is the CLI of rlab, a declarative lab orchestrator for
// multi-VM RDMA (Soft-RoCE) environments. This package holds flags, wiring and
// exit codes only; every behaviour lives in engine/, steps/ and agent/ where
// tests reach it without the CLI.
package main

import (
	"errors"
	"fmt"
	"os"
	"runtime/pprof"
	"runtime/trace"
	"time"

	"github.com/rlab-dev/rlab/kinds/builtin"
)

// Exit codes, shared by every command.
const (
	exitOK          = 0   // success; lab valid; all workloads ran and every expect held
	exitFail        = 1   // invalid input, a workload failed or an expect did not hold
	exitInfra       = 2   // infrastructure: host unreachable, agent lost, preflight failed
	exitInterrupted = 130 // SIGINT
)

// exitError carries an exit code through cobra's error return.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}
func (e *exitError) Unwrap() error { return e.err }

// withCode wraps err so main exits with code. A nil err with a non-zero code
// means the command already printed what went wrong.
func withCode(code int, err error) error { return &exitError{code: code, err: err} }

func main() {
	// RLAB_CPUPROFILE=FILE writes a CPU profile of the command, and
	// RLAB_MEMPROFILE=FILE a heap profile at its end (allocations over the
	// whole command: -sample_index=alloc_space), for the benchmarks in
	// BENCHMARKS.md: `go tool pprof bin/rlab FILE`. With
	// RLAB_MEMPROFILE_EVERY=DURATION the live heap (as of the last GC) is
	// also written every DURATION to FILE.<seconds>: where a run's peak is.
	if f, every := os.Getenv("RLAB_MEMPROFILE"), os.Getenv("RLAB_MEMPROFILE_EVERY"); f != "" && every != "" {
		if d, err := time.ParseDuration(every); err == nil && d > 0 {
			go heapProfiles(f, d)
		}
	}
	// RLAB_TRACE=FILE writes an execution trace of the command (`go tool
	// trace FILE`: which goroutine ran on which core, and when a core sat
	// idle), for the same benchmarks.
	if f := os.Getenv("RLAB_TRACE"); f != "" {
		if out, err := os.Create(f); err == nil && trace.Start(out) == nil {
			code := run(os.Args[1:])
			trace.Stop()
			out.Close()
			os.Exit(code)
		}
	}
	if f := os.Getenv("RLAB_CPUPROFILE"); f != "" {
		if out, err := os.Create(f); err == nil && pprof.StartCPUProfile(out) == nil {
			code := run(os.Args[1:])
			pprof.StopCPUProfile()
			out.Close()
			writeHeapProfile()
			os.Exit(code)
		}
	}
	code := run(os.Args[1:])
	writeHeapProfile()
	os.Exit(code)
}

// writeHeapProfile writes the heap profile RLAB_MEMPROFILE names, if any.
func writeHeapProfile() {
	f := os.Getenv("RLAB_MEMPROFILE")
	if f == "" {
		return
	}
	if out, err := os.Create(f); err == nil {
		pprof.Lookup("allocs").WriteTo(out, 0)
		out.Close()
	}
}

// heapProfiles writes the live heap (as of the last GC) to f.<seconds> every d.
func heapProfiles(f string, d time.Duration) {
	start := time.Now()
	for range time.Tick(d) {
		if out, err := os.Create(fmt.Sprintf("%s.%03d", f, int(time.Since(start).Seconds()))); err == nil {
			pprof.Lookup("heap").WriteTo(out, 0)
			out.Close()
		}
	}
}

func run(args []string) int {
	builtin.Register() // every built-in tool family, in one visible place
	root := newRootCmd()
	root.SetArgs(args)
	err := root.Execute()
	flushOutputs()
	if err == nil {
		return exitOK
	}
	stderr, flush := maskedStderr(os.Stderr)
	defer flush()
	var ee *exitError
	if errors.As(err, &ee) {
		printErrors(stderr, "Error: ", ee.err)
		return ee.code
	}
	printErrors(stderr, "Error: ", err)
	return exitFail
}
