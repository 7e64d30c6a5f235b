package kinds

import (
	"fmt"
	"time"
)

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

// SizeText prints a byte count (a size, bytes, memory) as a lab writes it:
// in the largest binary unit that divides it ("4KiB", "1GiB", "100B").
func SizeText(n int64) string {
	for _, u := range []struct {
		name string
		v    int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.v && n%u.v == 0 {
			return fmt.Sprintf("%d%s", n/u.v, u.name)
		}
	}
	return fmt.Sprintf("%dB", n)
}
