package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/rlab-dev/rlab/engine/runevent"
)

// heartbeat is how often a run without a TTY says what is still running.
// A CI log that is silent for minutes looks like a hung job (and some CI
// systems kill a job that prints nothing for 10 minutes). A variable for
// the CLI's tests only (TestRunCmdStepLog), which beat faster.
var heartbeat = 30 * time.Second

// stepLog is the run's progress without a TTY (a CI job, a pipe, a file):
// plain lines, no escapes, one per step start and end, each with the time
// since the run began, and a heartbeat naming the steps still running.
//
//	[00:00:01] start connect on host server
//	[00:00:10] ok connect on host server after 9.2s
//	[00:00:30] still running: workload write_bw for 20s (size 64KiB, repeat 1 (2/3))
//	[00:00:41] FAILED workload write_bw after 31s: exit 1: ...
//
// The words are those of events.jsonl (step descriptions, statuses), which
// the run made printable already (engine/run's events.emit); they are
// printed as they come, in the order the steps start and end.
type stepLog struct {
	start   time.Time
	running []*runningStep // in the order they started
	now     func() time.Time
}

// runningStep is a step under way: its event's step, host and workload,
// when it started, and the workload's trial (size × repeat) under way.
type runningStep struct {
	step, host, workload string
	since                time.Time
	trial                string
}

func newStepLog(start time.Time) *stepLog { return &stepLog{start: start, now: time.Now} }

// stamp is the time since the run began, as [hh:mm:ss].
func (l *stepLog) stamp() string {
	d := l.now().Sub(l.start).Round(time.Second)
	if d < 0 {
		d = 0
	}
	s := int(d / time.Second)
	return fmt.Sprintf("[%02d:%02d:%02d]", s/3600, s/60%60, s%60)
}

// what names an event's step: the workload, a step on a host, or a phase.
func stepWhat(step, host, workload string) string {
	switch {
	case workload != "":
		return "workload " + workload
	case host != "" && !strings.Contains(step, "host "+host):
		return step + " on host " + host
	}
	return step
}

func (l *stepLog) event(w io.Writer, e runevent.Event) {
	switch e.Type {
	case "step.start":
		l.running = append(l.running, &runningStep{step: e.Step, host: e.Host, workload: e.Workload, since: l.now()})
		line := l.stamp() + " start " + termText(stepWhat(e.Step, e.Host, e.Workload))
		if e.Workload != "" && e.Step != "" {
			line += ": " + termText(e.Step)
		}
		fmt.Fprintln(w, line)
	case "step.end":
		l.ended(e)
		status := e.Status
		if status == "" {
			status = "ok"
		}
		if status != "ok" {
			status = strings.ToUpper(strings.ReplaceAll(status, "_", " "))
		}
		line := l.stamp() + " " + termText(status) + " " + termText(stepWhat(e.Step, e.Host, e.Workload))
		if e.Seconds > 0 || status == "ok" {
			line += " after " + stepTime(e.Seconds)
		}
		if e.Error != "" {
			line += ": " + termText(firstLine(e.Error))
		}
		fmt.Fprintln(w, line)
	case runevent.Trial:
		for _, r := range l.running {
			if r.workload == e.Workload && e.Workload != "" {
				r.trial = e.Message
			}
		}
	}
}

// ended forgets the step an end event is about: the workload's, else the
// oldest of that step and host (an end without a start, as a skipped
// workload's, forgets nothing).
func (l *stepLog) ended(e runevent.Event) {
	for i, r := range l.running {
		if (e.Workload != "" && r.workload == e.Workload) || (e.Workload == "" && r.workload == "" && r.step == e.Step && r.host == e.Host) {
			l.running = append(l.running[:i], l.running[i+1:]...)
			return
		}
	}
}

// maxBeat is how many running steps a heartbeat names, the oldest first.
const maxBeat = 5

// beat is the heartbeat line: every step still running with how long it
// has run (a phase only when none of its hosts' or workloads' steps is
// under way: "connect" runs as long as its hosts' connects do), or "" when
// nothing runs.
func (l *stepLog) beat() string {
	var leaves, phases []string
	for _, r := range l.running {
		s := termText(stepWhat(r.step, r.host, r.workload)) + " for " + l.now().Sub(r.since).Round(time.Second).String()
		if r.trial != "" {
			s += " (" + termText(r.trial) + ")"
		}
		if r.host == "" && r.workload == "" {
			phases = append(phases, s)
		} else {
			leaves = append(leaves, s)
		}
	}
	if len(leaves) == 0 {
		leaves = phases
	}
	if len(leaves) == 0 {
		return ""
	}
	if n := len(leaves) - maxBeat; n > 0 { // a class's 30 pairs at once
		leaves = append(leaves[:maxBeat], fmt.Sprintf("and %d more", n))
	}
	return l.stamp() + " still running: " + strings.Join(leaves, "; ")
}

// stepTime is a step's duration as its end line says it: tenths of a
// second below a minute, whole seconds above.
func stepTime(sec float64) string {
	d := time.Duration(sec * float64(time.Second))
	if d < time.Minute {
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// beats prints the heartbeat every period until finish.
func (p *progress) beats(period time.Duration) {
	p.stop = make(chan struct{})
	stop := p.stop
	go func() {
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				p.mu.Lock()
				select {
				case <-stop: // finish ran while this waited for the lock
					p.mu.Unlock()
					return
				default:
				}
				if line := p.log.beat(); line != "" {
					fmt.Fprintln(p.w, line)
				}
				p.mu.Unlock()
			}
		}
	}()
}
