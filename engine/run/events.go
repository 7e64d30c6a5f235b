package run

import (
	"encoding/json"
	"sync"
	"time"

	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/engine/rundir"
	"github.com/rlab-dev/rlab/engine/runevent"
	"github.com/rlab-dev/rlab/engine/termsafe"
)

// EventsFile is the run's event log: one JSON object per line.
const EventsFile = runevent.File

// Event is one line of events.jsonl (engine/runevent, which a display
// imports instead of the run engine).
type Event = runevent.Event

// EventNotice is an event a person watching the run should see at once.
const EventNotice = runevent.Notice

// events appends events to events.jsonl with every sensitive value redacted.
type events struct {
	mu     sync.Mutex
	f      *rundir.File
	redact *lab.Replacer
	notify func(Event)
	err    error // the first write that failed
}

// newRedactor matches each secret in every encoding the run writes
// (lab.Redactor).
func newRedactor(secrets []string) *lab.Replacer { return lab.Redactor(secrets) }

func (e *events) emit(ev Event) {
	if e == nil {
		return
	}
	ev.Time = time.Now().UTC()
	// Redacted first (a secret holding a control character is matched as
	// written), then neutralised: the CLI prints events as they come, and an
	// error's text may be a host's.
	ev.Step = termsafe.Line(e.redact.Replace(ev.Step))
	ev.Error = termsafe.Block(e.redact.Replace(ev.Error))
	ev.Message = termsafe.Block(e.redact.Replace(ev.Message))
	ev.Host, ev.Workload, ev.Status = termsafe.Line(ev.Host), termsafe.Line(ev.Workload), termsafe.Line(ev.Status)
	b, _ := json.Marshal(ev)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.f != nil {
		if _, err := e.f.Write(append(b, '\n')); err != nil && e.err == nil {
			e.err = err // a line lost (disk full): the run directory is incomplete
		}
	}
	if e.notify != nil {
		e.notify(ev)
	}
}

func (e *events) close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.f == nil {
		return nil
	}
	err := e.err
	if serr := e.f.Sync(); err == nil {
		err = serr
	}
	if cerr := e.f.Close(); err == nil {
		err = cerr
	}
	e.f = nil
	return err
}
