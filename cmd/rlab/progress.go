package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/rlab-dev/rlab/engine/runevent"
	"github.com/rlab-dev/rlab/engine/termsafe"
)

// runningWorkloads is the workloads under way, in the order they started, with the
// step each is in (its plan description: tool, sides, sizes, iterations).
type runningWorkloads struct {
	names []string
	step  map[string]string
	trial map[string]string // the size × repeat under way (runevent.Trial)
	since map[string]time.Time
}

// setTrial records the trial (size × repeat) a running workload is in.
func (r *runningWorkloads) setTrial(wl, u string) {
	if _, ok := r.step[wl]; !ok {
		return
	}
	if r.trial == nil {
		r.trial = map[string]string{}
	}
	r.trial[wl] = u
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
	delete(r.trial, wl)
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
	if u := r.trial[wl]; u != "" {
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

// failLine prints a line above the bar the moment a step or workload
// fails, times out or is skipped (without a TTY the step's end line says
// it: stepLog.event).
func (p *progress) failLine(e runevent.Event) {
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

// progress shows a bar of workloads done on a TTY (stderr), then one of the
// artifact bytes pulled from every host. When stderr is not a terminal (a
// CI job, a pipe) it prints plain lines instead (steplog.go): one at each
// step's start and end with the time since the run began, and a heartbeat
// naming what still runs every beat.
type progress struct {
	mu    sync.Mutex
	w     io.Writer
	tty   bool
	log   *stepLog // without a TTY: the step lines and heartbeats
	bar   *progressbar.ProgressBar
	bytes *progressbar.ProgressBar
	done  map[string]int64 // per host, of its current pull
	total map[string]int64
	base  int64 // bytes of pulls that ended

	running runningWorkloads // workloads under way, for the bar's description
	stop    chan struct{}    // ends the elapsed-time ticker (progress.go)
}

func newProgress(w io.Writer, workloads int) *progress {
	return newProgressEvery(w, workloads, heartbeat)
}

// newProgressEvery is newProgress with the heartbeat's period (tests
// inject a short one).
func newProgressEvery(w io.Writer, workloads int, beat time.Duration) *progress {
	p := &progress{w: w}
	fd, ok := w.(interface{ Fd() uintptr })
	if !ok || !term.IsTerminal(int(fd.Fd())) {
		p.log = newStepLog(time.Now())
		p.beats(beat)
		return p
	}
	p.tty = true
	p.bar = progressbar.NewOptions(workloads,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription("connecting"),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(false),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionClearOnFinish(),
	)
	p.tick()
	return p
}

func (p *progress) event(e runevent.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e.Type == runevent.Notice { // a line of its own, TTY or not
		if p.bar != nil {
			p.bar.Clear()
		}
		fmt.Fprintln(p.w, e.Message)
		return
	}
	if p.log != nil {
		p.log.event(p.w, e) // its end lines carry what failLine says
		return
	}
	p.failLine(e)
	if p.bar == nil {
		return
	}
	switch {
	case e.Type == "step.start" && e.Workload != "":
		p.running.start(e.Workload, e.Step)
		p.bar.Describe(p.running.describe())
	case e.Type == runevent.Trial:
		p.running.setTrial(e.Workload, e.Message)
		p.bar.Describe(p.running.describe())
	case e.Type == "step.start" && e.Host == "":
		p.bar.Describe(e.Step)
	case e.Type == "step.end" && e.Workload != "":
		p.running.end(e.Workload)
		p.bar.Describe(p.running.describe())
		p.bar.Add(1)
	}
}

// vm reports a local VM's boot state ("booting (TCG software emulation
// (...))", "up in 41s") as a line of its own, TTY or not: which accelerator
// runs the lab is part of what the user must see.
func (p *progress) vm(host, state string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		p.bar.Clear()
	}
	fmt.Fprintf(p.w, "vm %s: %s\n", host, state)
}

// pull is the remote.PullOptions Progress callback: one bar for the bytes
// of every host's pulls together.
func (p *progress) pull(host string, done, total int64) {
	if !p.tty {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bytes == nil {
		p.bar.Clear()
		p.bytes = progressbar.NewOptions64(1,
			progressbar.OptionSetWriter(p.w),
			progressbar.OptionSetDescription("pulling artifacts"),
			progressbar.OptionShowBytes(true),
			progressbar.OptionSetPredictTime(false),
			progressbar.OptionClearOnFinish(),
		)
		p.done, p.total = map[string]int64{}, map[string]int64{}
	}
	if done < p.done[host] { // a new pull of that host (captures, then logs)
		p.base += p.done[host]
	}
	p.done[host], p.total[host] = done, total
	var d, t int64
	for h := range p.total {
		d += p.done[h]
		t += p.total[h]
	}
	if t+p.base > 0 {
		p.bytes.ChangeMax64(t + p.base)
	}
	p.bytes.Set64(d + p.base)
}

func (p *progress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stop != nil {
		close(p.stop)
		p.stop = nil
	}
	if p.bytes != nil {
		p.bytes.Finish()
	}
	if p.bar != nil {
		p.bar.Finish()
	}
}
