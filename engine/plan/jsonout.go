package plan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// MaxTrialBytes bounds what a plan's trials' commands come to as plan JSON
// writes them (each argv element escaped, with its line): a trial holds
// its workload's argv, so the argv the evaluation guard admits once per
// workload (lab.MaxEvalBytes) is written once per trial, and 100,000
// trials (lab.MaxTrials) of a 60 MiB argv were 6 TB of plan -json and
// plan.json. The largest legal lab of short commands (100,000 perftest
// trials) comes to about 80 MiB.
const MaxTrialBytes = 256 << 20

// checkTrialBytes refuses a plan whose trials' commands come to more than
// MaxTrialBytes as written, counting each byte a JSON or terminal escape
// may widen as six and stopping at the first workload past the bound.
func (p *Plan) checkTrialBytes() error {
	var n int64
	for _, s := range p.Steps {
		for _, t := range s.Trials {
			for _, a := range t.Argv {
				n += writtenBytes(a) + 16 // quotes, comma, newline and indent
			}
			if n > MaxTrialBytes {
				return fmt.Errorf("the commands of its trials come to more than %d MiB as the plan writes them (workload %q, %d trials on host %q): rlab writes every trial's command into plan.json and sends it to its host; use fewer sizes or repeats, or a shorter command",
					MaxTrialBytes>>20, s.Subject, len(s.Trials), s.Host)
			}
		}
	}
	return nil
}

// writtenBytes is at least the bytes s takes in JSON escaped for a
// terminal: a byte that may be escaped counts as \u0000's six.
func writtenBytes(s string) int64 {
	n := int64(len(s))
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			n += 5
		}
	}
	return n
}

// WriteJSON writes the plan as json.MarshalIndent(p, "", "  ") does, and a
// newline, one step and one trial at a time: a plan of 100,000 trials is
// some 80 MiB of JSON, held three times over (the encoding, its indented
// copy and a terminal-safe one) when written in one piece. Each Write is
// whole JSON values and punctuation, never part of a string, so a writer
// may escape each on its own (cmd/rlab's terminal-safe one).
func (p *Plan) WriteJSON(w io.Writer) error {
	type plain Plan // the fields alone, as MarshalIndent sees them
	q := plain(*p)
	q.Steps = nil
	head, err := json.MarshalIndent(q, "", "  ")
	if err != nil {
		return fmt.Errorf("write plan of lab %q as JSON: %w", p.Lab, err)
	}
	key := []byte("\n  \"steps\": null") // at the top level: two spaces
	i := bytes.Index(head, key)
	if i < 0 || p.Steps == nil {
		return writeAll(w, head, []byte("\n"))
	}
	if err := writeAll(w, head[:i+len(key)-len("null")]); err != nil {
		return err
	}
	if len(p.Steps) == 0 {
		if err := writeAll(w, []byte("[]")); err != nil {
			return err
		}
	} else {
		for k, s := range p.Steps {
			sep := ",\n    "
			if k == 0 {
				sep = "[\n    "
			}
			if err := writeAll(w, []byte(sep)); err != nil {
				return err
			}
			if err := s.writeJSON(w); err != nil {
				return fmt.Errorf("write plan of lab %q as JSON: step %s: %w", p.Lab, s.ID, err)
			}
		}
		if err := writeAll(w, []byte("\n  ]")); err != nil {
			return err
		}
	}
	return writeAll(w, head[i+len(key):], []byte("\n"))
}

// writeJSON writes one step as an element of the plan's steps (indented
// by four spaces), its trials one at a time.
func (s *Step) writeJSON(w io.Writer) error {
	type plain Step
	q := plain(*s)
	q.Trials = nil
	b, err := json.MarshalIndent(q, "    ", "  ")
	if err != nil {
		return err
	}
	if len(s.Trials) == 0 {
		return writeAll(w, b)
	}
	// "trials" follows "level" (a number, on its own line).
	key := []byte("\n      \"level\": ")
	i := bytes.Index(b, key)
	if i < 0 {
		return fmt.Errorf("no level in %.40q", b)
	}
	end := i + len(key)
	for end < len(b) && (b[end] == '-' || b[end] >= '0' && b[end] <= '9') {
		end++
	}
	if err := writeAll(w, b[:end]); err != nil {
		return err
	}
	for k, t := range s.Trials {
		sep := ",\n        "
		if k == 0 {
			sep = ",\n      \"trials\": [\n        "
		}
		tb, err := json.MarshalIndent(t, "        ", "  ")
		if err != nil {
			return err
		}
		if err := writeAll(w, []byte(sep), tb); err != nil {
			return err
		}
	}
	return writeAll(w, []byte("\n      ]"), b[end:])
}

func writeAll(w io.Writer, bs ...[]byte) error {
	for _, b := range bs {
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}
