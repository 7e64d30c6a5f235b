package results

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// ParseNote is what a tool output's parser said about one run (one size ×
// repeat) of a workload besides its samples. Parsers fill Unread, Notes and
// Bidirectional (NewParseNote); the workload step fills Size and Repeat.
type ParseNote struct {
	Size   int64 `json:"size,omitempty"`
	Repeat int   `json:"repeat"` // 0-based
	// Unread are lines the tool printed (stdout or stderr) that the parser
	// did not read, as printed: a warning, a column it does not know.
	Unread []string `json:"unread,omitempty"`
	// Notes are the parser's own remarks on what it read: a value it
	// dropped and why, a file it read leniently.
	Notes []string `json:"notes,omitempty"`
	// More counts the unread lines and notes left out past MaxParseLines.
	More int `json:"more,omitempty"`
	// Bidirectional says every bandwidth and message rate of the run is
	// the sum of both directions (perftest -b).
	Bidirectional bool `json:"bidirectional,omitempty"`
}

// MaxParseLines caps the unread lines and notes a ParseNote keeps (each
// distinct line once); MaxParseLineBytes caps one line. The raw outputs in
// the run directory keep everything.
const (
	MaxParseLines     = 20
	MaxParseLineBytes = 300
)

// NewParseNote keeps a run's unread lines and notes deduplicated (first
// occurrence first), each cut at MaxParseLineBytes, MaxParseLines in all.
func NewParseNote(unread, notes []string, bidirectional bool) ParseNote {
	n := ParseNote{Bidirectional: bidirectional}
	seen := map[string]bool{}
	keep := func(dst *[]string, lines []string) {
		for _, l := range lines {
			l = cutLine(strings.TrimSpace(l))
			if l == "" || seen[l] {
				continue
			}
			seen[l] = true
			if len(n.Unread)+len(n.Notes) >= MaxParseLines {
				n.More++
				continue
			}
			*dst = append(*dst, l)
		}
	}
	keep(&n.Unread, unread)
	keep(&n.Notes, notes)
	return n
}

// cutLine cuts s to at most MaxParseLineBytes on a rune boundary, marking
// the cut with "…".
func cutLine(s string) string {
	if len(s) <= MaxParseLineBytes {
		return s
	}
	cut := MaxParseLineBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// Empty says the note says nothing: nothing unread, nothing noted, not a
// bidirectional sum.
func (n ParseNote) Empty() bool {
	return len(n.Unread) == 0 && len(n.Notes) == 0 && n.More == 0 && !n.Bidirectional
}

// Bidirectional says the workload's bandwidth and message rate are the sum
// of both directions (a run of it was perftest -b).
func (w Workload) Bidirectional() bool {
	for _, n := range w.Parse {
		if n.Bidirectional {
			return true
		}
	}
	return false
}

// BothDirections is how a bidirectional figure is labelled wherever it is
// shown.
const BothDirections = "sum of both directions"

// ParseLine is one distinct unread line or note of a workload, with the runs
// it came from.
type ParseLine struct {
	Text   string
	Unread bool // a line the tool printed; else a note of the parser
	Runs   []string
}

// ParseLines returns the workload's distinct unread lines, then its notes,
// each with the runs ("64 KiB, repeat 2") it came from, and the count of
// lines the notes left out.
func (w Workload) ParseLines() (lines []ParseLine, more int) {
	idx := map[string]int{}
	add := func(text string, unread bool, run string) {
		k := fmt.Sprintf("%t\x00%s", unread, text)
		i, ok := idx[k]
		if !ok {
			i = len(lines)
			idx[k] = i
			lines = append(lines, ParseLine{Text: text, Unread: unread})
		}
		lines[i].Runs = append(lines[i].Runs, run)
	}
	for _, n := range w.Parse {
		run := fmt.Sprintf("repeat %d", n.Repeat+1)
		if n.Size > 0 {
			run = HumanSize(n.Size) + ", " + run
		}
		for _, l := range n.Unread {
			add(l, true, run)
		}
		more += n.More
	}
	for _, n := range w.Parse {
		run := fmt.Sprintf("repeat %d", n.Repeat+1)
		if n.Size > 0 {
			run = HumanSize(n.Size) + ", " + run
		}
		for _, l := range n.Notes {
			add(l, false, run)
		}
	}
	return lines, more
}

// ParseCounts counts the workload's distinct unread lines and notes.
func (w Workload) ParseCounts() (unread, notes int) {
	lines, _ := w.ParseLines()
	for _, l := range lines {
		if l.Unread {
			unread++
		} else {
			notes++
		}
	}
	return unread, notes
}

// runsText says where a line came from: its runs, or how many when many.
func runsText(runs []string) string {
	if len(runs) > 3 {
		return fmt.Sprintf("%d runs", len(runs))
	}
	return strings.Join(runs, "; ")
}

// ParseSummary is a workload's parse warnings in one sentence for people
// ("the parser did not read 2 lines of ib_read_bw's output and noted 1
// thing"), "" when there are none.
func (w Workload) ParseSummary() string {
	unread, notes := w.ParseCounts()
	var parts []string
	if unread > 0 {
		parts = append(parts, fmt.Sprintf("did not read %s of %s's output", plural(unread, "line"), w.Tool))
	}
	if notes > 0 {
		parts = append(parts, "noted "+plural(notes, "thing"))
	}
	if len(parts) == 0 {
		return ""
	}
	return "the parser " + strings.Join(parts, " and ")
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
