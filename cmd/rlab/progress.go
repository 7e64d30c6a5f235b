package main

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	runengine "github.com/rlab-dev/rlab/engine/run"
	"github.com/rlab-dev/rlab/engine/termsafe"
)

// runningWorkloads is the workloads under way, in the order they started, with the
// step each is in (its plan description: tool, sides, sizes, iterations).
type runningWorkloads struct {
	names []string
	step  map[string]string
	unit  map[string]string // the size × repeat under way (run.EventUnit)
	since map[string]time.Time
}

// setUnit records the unit (size × repeat) a running workload is in.
func (r *runningWorkloads) setUnit(wl, u string) {
	if _, ok := r.step[wl]; !ok {
		return
	}
	if r.unit == nil {
		r.unit = map[string]string{}
	}
	r.unit[wl] = u
}

func (r *runningWorkloads) start(wl, step string) {
	if r.step == nil {
		r.step, r.since = map[string]string{}, map[string]time.Time{}
	}
	if _, ok := r.step[wl]; !ok {
		r.names = append(r.names, wl)
		r.since[wl] = time.Now()
	}
	r.step[wl] = step
}

func (r *runningWorkloads) end(wl string) {
	for i, n := range r.names {
		if n == wl {
			r.names = append(r.names[:i], r.names[i+1:]...)
			break
		}
	}
	delete(r.step, wl)
	delete(r.unit, wl)
	delete(r.since, wl)
}

// describe is the bar's description: the oldest running workload with the
// size and repeat under way (before the first: its step, which lists its
// sizes) and how long it has run, and how many others run.
func (r *runningWorkloads) describe() string {
	if len(r.names) == 0 {
		return "between workloads"
	}
	wl := r.names[0]
	d := termText(wl)
	if u := r.unit[wl]; u != "" {
		d += ": " + clip(termText(u), 60)
	} else if st := r.step[wl]; st != "" {
		// "workload-client write_bw: <tool> client …, sizes 64KiB" → after the colon
		if _, rest, ok := strings.Cut(st, ": "); ok {
			st = rest
		}
		d += ": " + clip(termText(st), 60)
	}
	d += fmt.Sprintf(" (%s)", time.Since(r.since[wl]).Round(time.Second))
	if n := len(r.names) - 1; n > 0 {
		d += fmt.Sprintf(" +%d running", n)
	}
	return d
}

// failLine prints a line the moment a step or workload fails, times out or
// is skipped: above the bar on a terminal, as a log line otherwise.
func (p *progress) failLine(e runengine.Event) {
	if e.Type != "step.end" || e.Status == "" || e.Status == "ok" {
		return
	}
	what := e.Workload
	if what == "" {
		what = e.Step
		if e.Host != "" {
			what += " on host " + e.Host
		}
	}
	line := fmt.Sprintf("%s %s", strings.ToUpper(strings.ReplaceAll(e.Status, "_", " ")), termText(what))
	if e.Seconds > 0 {
		line += fmt.Sprintf(" after %s", (time.Duration(e.Seconds * float64(time.Second))).Round(100*time.Millisecond))
	}
	if e.Error != "" {
		line += ": " + termText(firstLine(e.Error))
	}
	if p.bar != nil {
		p.bar.Clear()
	}
	fmt.Fprintln(p.w, line)
}

// tick redraws the bar every second so its elapsed time and the running
// workload's time move while nothing else happens.
func (p *progress) tick() {
	p.stop = make(chan struct{})
	stop := p.stop
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				p.mu.Lock()
				if p.bytes == nil && p.bar != nil && len(p.running.names) > 0 {
					p.bar.Describe(p.running.describe())
				}
				p.mu.Unlock()
			}
		}
	}()
}

// termText keeps text that came from a host or a lab from moving the
// terminal's cursor: control characters are escaped, visibly.
func termText(s string) string { return termsafe.Line(s) }

func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
