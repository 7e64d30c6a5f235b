package main

import (
	"io"
	"sync"

	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/spf13/cobra"
)

// maskOutput makes everything cmd prints from here on, on its stdout and
// its stderr, masked by the lab's sensitive values: set once, where a
// command has loaded its lab, instead of a redaction call at each print
// (SECURITY 210). A lab's text or a host's reaching the terminal without
// the redactor was found again and again (a description, a metric's
// unit, graph's diagnostics, host errors, a not-ready server's output).
// The writers hold back only what may start a value (lab.TermWriter), so
// a progress bar is drawn as it is written. flush writes what is held
// back; main calls every flush when the command has returned
// (flushOutputs). The error main prints after
// the command is masked too (printErrors through maskedStderr).
func maskOutput(cmd *cobra.Command, l *lab.Lab) (flush func()) {
	if l == nil || len(l.Sensitive) == 0 {
		return func() {}
	}
	r := lab.Redactor(l.Sensitive)
	out, errw := r.TermWriter(cmd.OutOrStdout()), r.TermWriter(cmd.ErrOrStderr())
	cmd.SetOut(out)
	cmd.SetErr(errw)
	flush = func() {
		out.Flush()
		errw.Flush()
	}
	lastMask.Lock()
	lastMask.r = r
	lastMask.flushes = append(lastMask.flushes, flush)
	lastMask.Unlock()
	return flush
}

// flushOutputs writes what every maskOutput writer holds back, newest
// first (validate wraps once per lab): main calls it when the command
// has returned.
func flushOutputs() {
	lastMask.Lock()
	fs := lastMask.flushes
	lastMask.flushes = nil
	lastMask.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}

// lastMask is the redactor of the lab the command loaded, for the error
// main prints after it returns.
var lastMask struct {
	sync.Mutex
	r       *lab.Replacer
	flushes []func()
}

// maskedStderr is w masked by the lab the command loaded, if any; flush
// after writing.
func maskedStderr(w io.Writer) (io.Writer, func()) {
	lastMask.Lock()
	r := lastMask.r
	lastMask.Unlock()
	if r == nil {
		return w, func() {}
	}
	t := r.TermWriter(w)
	return t, func() { t.Flush() }
}
