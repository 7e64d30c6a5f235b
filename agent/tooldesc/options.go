package tooldesc

import "time"

// Options are the values of a workload's options: what the lab file set,
// checked against its tool's rules (engine/lab), and what its step kind reads
// (steps). One type that both models embed, so a new option is one field here
// and one rule in the descriptor, not two field lists copied by hand.
type Options struct {
	Command    []string      // exec: the argv to run
	Sizes      []int64       // nil = the tool's default size
	Iterations int64         // 0 = the tool's default (or Duration)
	Duration   time.Duration // 0 = run Iterations
	QPs        int           // 0 = the tool's default (1)
	Transport  string        // RC, UC or UD; "" when the tool fixes it
	Bytes      int64         // tcp
	Timeout    time.Duration
	Repeat     int
	Args       []string // extra argv appended to the tool
}
