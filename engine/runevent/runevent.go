// Package runevent is the event a run emits (a line of its events.jsonl,
// and what a live display such as the CLI's progress bar is handed): a type
// of its own so that what shows a run's progress need not import the run
// engine (engine/run), which writes the events.
//
// It imports only the standard library (internal/archtest checks it).
package runevent

import "time"

// File is the run's event log in its directory: one JSON Event per line.
const File = "events.jsonl"

// Event is one line of events.jsonl.
type Event struct {
	Time     time.Time `json:"time"`
	Type     string    `json:"type"` // run.start, step.start, step.end, notice, unit, warning, error, run.end
	Step     string    `json:"step,omitempty"`
	Host     string    `json:"host,omitempty"`
	Workload string    `json:"workload,omitempty"`
	Status   string    `json:"status,omitempty"`
	Error    string    `json:"error,omitempty"`
	Seconds  float64   `json:"seconds,omitempty"`
	Message  string    `json:"message,omitempty"`
	// IDs are the plan.json steps the event is about.
	IDs []string `json:"ids,omitempty"`
}

// Event types a display acts on besides the step events.
const (
	// Notice is an event a person watching the run should see at once, as
	// a line of its own (a workload size that timed out, a data link down).
	Notice = "notice"
	// Trial is the start of one trial of a workload (one size × repeat);
	// Message names it, e.g. "size 1MiB, repeat 2 (4/6)".
	Trial = "unit"
)
