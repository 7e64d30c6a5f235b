package main

import (
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync"
	"time"

	"github.com/rlab-dev/rlab/engine/lab"
)

// The lab's evaluation is metered step by step (engine/lab's budget), and
// every attack round so far has found a function or value the meter did
// not see in time (SECURITY.md 93, 96, 99, 100–102): a lab of a few hundred
// bytes that takes validate or plan past a gigabyte or past minutes. The
// guard is the bound behind the meter: while a command loads, evaluates and
// plans a lab (before it connects to anything), the process may hold at
// most evalMemory bytes of Go memory and take at most evalTime; past either,
// rlab says so and exits 1 with nothing connected or written. It bounds
// what the meter misses; it is not the meter (a lab the meter refuses gets
// its file:line:col diagnostic, which the guard cannot give).
const (
	evalMemory = 1 << 30          // a 10,000-host class lab plans in 320 MB (RSS), one at the trial bound in 165 MB
	evalTime   = 60 * time.Second // a lab at the trial bound (100,000) plans in about 2 s at load 15; a 10,000-host class lab in 9 s at load 6
	// evalSoft is the Go heap's soft limit while the guard holds: the
	// collector works hard enough that garbage alone does not reach
	// evalMemory, so only a live heap that large stops rlab.
	evalSoft  = 3 * evalMemory / 4
	evalEvery = 20 * time.Millisecond
)

// evalGuard watches one evaluation; stop ends the watch (and restores the
// heap's soft limit). stop may be called more than once.
type evalGuard struct {
	stopOnce sync.Once
	done     chan struct{}
	finished chan struct{}
	oldSoft  int64
}

// guardLimits are a guard's bounds and what it does when one is passed:
// the command's guard prints to stderr and exits; tests record.
type guardLimits struct {
	memory int64
	time   time.Duration
	soft   int64
	over   func(msg string) // called once, from the guard's goroutine
	// say makes the message from what was passed and when (guardMessage
	// when nil; fmtGuardMessage for rlab fmt).
	say func(lab, what string, took time.Duration) string
}

// guardEval starts the guard for the evaluation of lab (a path, for the
// message) with rlab's bounds: past one, it writes why to w and exits 1.
func guardEval(w io.Writer, lab string) *evalGuard {
	return startGuard(lab, guardLimits{
		memory: evalMemory, time: evalTime, soft: evalSoft,
		over: func(msg string) {
			fmt.Fprintln(w, msg)
			os.Exit(exitFail)
		},
	})
}

// guardFmt starts the guard for rlab fmt of paths, once for the whole
// command: fmt evaluates nothing, but lexes and rewrites whole files, and
// ran without any bound (attack round 16: a folder of 4 MiB files took a
// minute and 2 GB each). Its message speaks of formatting.
var fmtGuard = guardFmt // tests see that fmt starts it

func guardFmt(w io.Writer, paths []string) *evalGuard {
	return startGuard(strings.Join(paths, " "), guardLimits{
		memory: evalMemory, time: evalTime, soft: evalSoft,
		say: fmtGuardMessage,
		over: func(msg string) {
			fmt.Fprintln(w, msg)
			os.Exit(exitFail)
		},
	})
}

func startGuard(lab string, lim guardLimits) *evalGuard {
	if lim.say == nil {
		lim.say = guardMessage
	}
	g := &evalGuard{done: make(chan struct{}), finished: make(chan struct{})}
	g.oldSoft = -1
	if lim.soft > 0 && os.Getenv("GOMEMLIMIT") == "" {
		g.oldSoft = debug.SetMemoryLimit(lim.soft)
	}
	start := time.Now()
	go func() {
		defer close(g.finished)
		samples := []metrics.Sample{
			{Name: "/memory/classes/total:bytes"},
			{Name: "/memory/classes/heap/released:bytes"},
		}
		t := time.NewTicker(evalEvery)
		defer t.Stop()
		for {
			select {
			case <-g.done:
				return
			case <-t.C:
			}
			metrics.Read(samples)
			held := int64(samples[0].Value.Uint64()) - int64(samples[1].Value.Uint64())
			took := time.Since(start)
			switch {
			case held > lim.memory:
				lim.over(lim.say(lab, fmt.Sprintf("held %s of memory (the bound is %s)", mib(held), mib(lim.memory)), took))
				return
			case took > lim.time:
				lim.over(lim.say(lab, fmt.Sprintf("took longer than %s", lim.time), took))
				return
			}
		}
	}()
	return g
}

// stop ends the watch and waits for the guard's goroutine, so a guard that
// fired has finished saying so when stop returns.
func (g *evalGuard) stop() {
	g.stopOnce.Do(func() {
		close(g.done)
		<-g.finished
		if g.oldSoft >= 0 {
			debug.SetMemoryLimit(g.oldSoft)
		}
	})
}

func guardMessage(name string, what string, took time.Duration) string {
	return fmt.Sprintf("Error: evaluating lab %s %s, %.1f s in; rlab stopped there, with nothing connected to or run.\n"+
		"  A lab this costly to load and evaluate is refused, whatever it would run. rlab cannot tell which part\n"+
		"  cost it: look at the size of the lab's files (each may hold %d pieces: words, symbols, line ends)\n"+
		"  and -var-files, and at expressions that make large values: for expressions and range() nested in\n"+
		"  each other, join/format over them, set functions over long lists, regex/regexall over long text,\n"+
		"  decoders (yamldecode, jsondecode, csvdecode) of large or deeply nested text; then run rlab validate again.",
		quoteLab(name), what, took.Seconds(), lab.MaxTokens)
}

// fmtGuardMessage is the guard's message for rlab fmt of paths.
func fmtGuardMessage(paths string, what string, took time.Duration) string {
	return fmt.Sprintf("Error: formatting %s %s, %.1f s in; rlab fmt stopped there: files it named above are\n"+
		"  formatted (unless -check), the rest are as they were. Formatting costs time and memory in proportion\n"+
		"  to a file's pieces (words, symbols, line ends; a lab file may hold %d, past which fmt says\n"+
		"  %q at once): format fewer or smaller files at a time.",
		quoteLab(paths), what, took.Seconds(), lab.MaxTokens, lab.TokensSummary)
}

func quoteLab(p string) string { return fmt.Sprintf("%q", p) }
