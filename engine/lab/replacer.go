package lab

import (
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Replacer replaces every occurrence of a set of strings (a lab's
// sensitive values in all their forms, redactForms) with one replacement,
// as strings.NewReplacer does with the forms given longest first: scanning
// left to right, the longest form that starts at a position is replaced and
// the scan goes on after it. It takes time linear in the text, whatever the
// forms are. strings.Replacer walks its trie from every position of the
// text as deep as the text follows it, so forms that share long prefixes
// (the sensitive values " b", "  b", …, a space more each) made each byte
// of a text cost as many steps as the longest form: a 283-byte lab whose
// sensitive default was 3,000 such values held `rlab report` of a received
// run directory 48 s on a 1 MB argument, an hour on the 64 MiB a lab may
// make (SECURITY 163).
//
// It finds, for each position, the longest form starting there with an
// Aho-Corasick automaton of the reversed forms run backwards over the text:
// the automaton's state after reading s[i:] backwards is the longest
// reversed prefix of s[i:] in the trie, and best[state] the longest form
// among its suffixes in the trie's sense, that is the longest form that
// s[i:] begins with. A Replacer is safe for concurrent use.
type Replacer struct {
	with   string
	maxLen int      // longest form
	sorted []string // the forms, sorted (ReplaceHead)
	// The trie of the reversed forms, node 0 the root: a node's children
	// are edges[first[n]:first[n+1]] (labels in label), sorted by label.
	first []int32
	label []byte
	child []int32
	fail  []int32
	best  []int32 // length of the longest form that is a suffix of the node's string; 0: none
	depth []int32 // length of the node's string
	root  [256]int32
	// anchors, when set (Redactor), are strings every form holds one of:
	// a text holding none is returned by Replace at once.
	anchors []string
}

// NewReplacer builds a Replacer of forms (empty ones ignored) by with.
func NewReplacer(forms []string, with string) *Replacer {
	r := &Replacer{with: with}
	for _, f := range forms {
		if f != "" {
			r.sorted = append(r.sorted, f)
		}
	}
	slices.Sort(r.sorted)
	r.sorted = slices.Compact(r.sorted)
	// Build the trie as linked lists (first child, next sibling: 9 bytes a
	// node; a map took 130), then lay it out flat in breadth-first order
	// so that a node's children are contiguous and sorted.
	kid, sib := []int32{-1}, []int32{-1}
	lab := []byte{0}
	terminal := []int32{0} // per node: the form ending there, its length; 0 none
	for _, f := range forms {
		if f == "" {
			continue
		}
		r.maxLen = max(r.maxLen, len(f))
		n := int32(0)
		for i := len(f) - 1; i >= 0; i-- {
			c := kid[n]
			for c >= 0 && lab[c] != f[i] {
				c = sib[c]
			}
			if c < 0 {
				c = int32(len(kid))
				kid, sib, lab, terminal = append(kid, -1), append(sib, kid[n]), append(lab, f[i]), append(terminal, 0)
				kid[n] = c
			}
			n = c
		}
		terminal[n] = int32(len(f))
	}
	count := len(kid)
	order := make([]int32, 0, count) // new id -> old id
	newID := make([]int32, count)
	order = append(order, 0)
	var l []int32
	for i := 0; i < len(order); i++ {
		l = l[:0]
		for c := kid[order[i]]; c >= 0; c = sib[c] {
			l = append(l, c)
		}
		slices.SortFunc(l, func(a, b int32) int { return int(lab[a]) - int(lab[b]) })
		for _, c := range l {
			newID[c] = int32(len(order))
			order = append(order, c)
		}
	}
	r.first = make([]int32, count+1)
	r.label = make([]byte, 0, count-1)
	r.child = make([]int32, 0, count-1)
	r.best = make([]int32, count)
	r.fail = make([]int32, count)
	r.depth = make([]int32, count)
	// New node n's children are the new ids of old's, which breadth-first
	// numbering made consecutive, in the order of their labels.
	for n, old := range order {
		r.first[n] = int32(len(r.label))
		r.best[n] = terminal[old]
		l = l[:0]
		for c := kid[old]; c >= 0; c = sib[c] {
			l = append(l, newID[c])
		}
		slices.Sort(l)
		for _, c := range l {
			r.label = append(r.label, lab[order[c]])
			r.child = append(r.child, c)
			r.depth[c] = r.depth[n] + 1 // a parent comes first in BFS order
		}
	}
	r.first[count] = int32(len(r.label))
	// The root's transitions for every byte (a miss stays at the root).
	for i := r.first[0]; i < r.first[1]; i++ {
		r.root[r.label[i]] = r.child[i]
	}
	// Failure links and best, breadth first (node ids are BFS order, so a
	// node's failure target, shallower, is done before it).
	for n := int32(0); n < int32(count); n++ {
		for i := r.first[n]; i < r.first[n+1]; i++ {
			c, v := r.label[i], r.child[i]
			if n == 0 {
				r.fail[v] = 0
			} else {
				r.fail[v] = r.step(r.fail[n], c)
			}
			if r.best[v] == 0 {
				r.best[v] = r.best[r.fail[v]]
			}
		}
	}
	return r
}

// edge is n's child by c, or -1.
func (r *Replacer) edge(n int32, c byte) int32 {
	if n == 0 {
		if t := r.root[c]; t != 0 {
			return t
		}
		return -1
	}
	lo, hi := r.first[n], r.first[n+1]
	if hi-lo <= 8 {
		for i := lo; i < hi; i++ {
			if r.label[i] == c {
				return r.child[i]
			}
		}
		return -1
	}
	for lo < hi {
		m := int32(uint32(lo+hi) >> 1)
		switch {
		case r.label[m] == c:
			return r.child[m]
		case r.label[m] < c:
			lo = m + 1
		default:
			hi = m
		}
	}
	return -1
}

// step is the automaton's move from n on c, following failure links.
func (r *Replacer) step(n int32, c byte) int32 {
	for {
		if t := r.edge(n, c); t >= 0 {
			return t
		}
		if n == 0 {
			return 0
		}
		n = r.fail[n]
	}
}

// replaceBlock is how many bytes of text Replace looks at for matches at
// once (or the longest form's length, if more); a match may reach past the
// block, so each block is read with maxLen-1 bytes after it: at most twice
// the text in all.
const replaceBlock = 64 << 10

// Replace returns s with every form replaced.
func (r *Replacer) Replace(s string) string {
	if r != nil && r.anchors != nil && !r.holdsAnchor(s) {
		return s
	}
	return r.replace(s, 0)
}

func (r *Replacer) holdsAnchor(s string) bool {
	for _, a := range r.anchors {
		if strings.Contains(s, a) {
			return true
		}
	}
	return false
}

// ReplaceTail is Replace for the end of a longer text, cut off before it
// (an output tail a host kept, an error's stderr tail): a form the cut fell
// inside left its end at s's start, which Replace no longer matches
// (SECURITY 195). The longest start of s that ends a form, if any, is
// replaced too, and with it any form Replace would take that starts in it
// and reaches past it. A start that ends a form by chance (a value ending
// in "ed", a text starting "ed") is replaced as well: what a cut text loses
// is a few bytes at the cut, never part of a value.
func (r *Replacer) ReplaceTail(s string) string {
	if r == nil || r.maxLen == 0 || len(s) == 0 {
		return s
	}
	// The automaton's state after reading s[:e] backwards is the longest
	// s[:j] whose reverse is in the trie: the longest start of s that ends
	// a form (a whole form included: Replace would take it anyway).
	n := int32(0)
	for i := min(len(s), r.maxLen) - 1; i >= 0; i-- {
		n = r.step(n, s[i])
	}
	return r.replace(s, int(r.depth[n]))
}

// ReplaceHead is Replace for the start of a longer text, cut off after it
// (the first bytes of a file or of a command's output a host kept): a
// form the cut fell inside left its start at s's end. The longest end of
// s that starts a form is replaced too, and with it any form Replace
// would take that reaches into it (SECURITY 195).
func (r *Replacer) ReplaceHead(s string) string { return r.ReplaceCut(s, false, true) }

// ReplaceCut is Replace for a text that may have been cut before it
// (start: ReplaceTail) and after it (end: ReplaceHead).
func (r *Replacer) ReplaceCut(s string, start, end bool) string {
	if r == nil || r.maxLen == 0 || len(s) == 0 {
		return s
	}
	if start && end && len(s) < r.maxLen {
		// Cut at both ends, s may lie inside one value.
		for _, f := range r.sorted {
			if strings.Contains(f, s) {
				return r.with
			}
		}
	}
	k := len(s)
	if end {
		k = r.startsForm(s)
	}
	if k == len(s) {
		if start {
			return r.ReplaceTail(s)
		}
		return r.Replace(s)
	}
	// A form Replace takes that starts before k and reaches past it
	// goes too: s ends the text, so SafeCut knows every form there.
	c := r.SafeCut(s, k)
	if start {
		return r.ReplaceTail(s[:c]) + r.with
	}
	return r.Replace(s[:c]) + r.with
}

// startsForm is where the longest end of s that is the start of a form
// (a proper one: a whole form Replace takes) begins, len(s) if none. It
// looks up at most the longest form's length of ends, each by binary
// search in the sorted forms.
func (r *Replacer) startsForm(s string) int {
	for k := max(0, len(s)-r.maxLen+1); k < len(s); k++ {
		p := s[k:]
		if i := sort.SearchStrings(r.sorted, p); i < len(r.sorted) && strings.HasPrefix(r.sorted[i], p) {
			return k
		}
	}
	return len(s)
}

// replace is Replace with s[:pre] replaced as a form is, and every form
// that starts inside s[:pre] and ends after it replaced with it.
func (r *Replacer) replace(s string, pre int) string {
	if r == nil || r.maxLen == 0 || len(s) == 0 {
		return s
	}
	var out *strings.Builder
	last := 0 // s[:last] is written to out (or needs no change)
	next := 0 // the scan resumes here (after a replaced form)
	merge := pre > 0
	if merge {
		out = &strings.Builder{}
		out.Grow(len(s))
		out.WriteString(r.with)
		last, next = pre, pre
	}
	type match struct{ at, n int32 }
	var found []match
	blk := max(replaceBlock, r.maxLen) // so that blocks are read at most twice
	for a := 0; a < len(s); a += blk {
		b := min(len(s), a+blk)
		e := min(len(s), b+r.maxLen-1)
		// Longest form starting at each i in [a, b), backwards: the
		// automaton's state at i depends on s[i:i+maxLen] only, which
		// [a, e) holds for every i below b.
		found = found[:0]
		n := int32(0)
		for i := e - 1; i >= a; i-- {
			n = r.step(n, s[i])
			if i < b && r.best[n] > 0 {
				found = append(found, match{int32(i - a), r.best[n]})
			}
		}
		// Left to right: the longest form at each position not inside an
		// earlier replaced one.
		for k := len(found) - 1; k >= 0; k-- {
			at := a + int(found[k].at)
			if at < next {
				if merge && at+int(found[k].n) > next {
					next = at + int(found[k].n) // the masked start grows
					last = next
				}
				continue
			}
			merge = false
			if out == nil {
				out = &strings.Builder{}
				out.Grow(len(s))
			}
			out.WriteString(s[last:at])
			out.WriteString(r.with)
			next = at + int(found[k].n)
			last = next
		}
	}
	if out == nil {
		return s
	}
	out.WriteString(s[last:])
	return out.String()
}

// Longest is the length of the longest form, 0 when there is none: a
// writer that replaces a stream in pieces holds back Longest()-1 bytes
// and cuts where SafeCut says (MaskWriter, engine/run's agent.log).
func (r *Replacer) Longest() int {
	if r == nil {
		return 0
	}
	return r.maxLen
}

// SafeCut is where a writer that replaces a stream in pieces may cut s at
// or before cut (MaskWriter, engine/run's agent.log): replacing s[:c] now
// and the rest with what follows gives what replacing the whole gives. It
// is cut, unless a form that Replace, scanning s from its start, replaces
// starts before cut and ends after it: then that form's start. s must
// start where such a scan starts afresh (the stream's start, a line's, or
// an earlier cut of SafeCut's), and hold the longest form's length less one
// after cut (or end the stream), so that the longest form at each position
// before cut is known. It reads s up to there once.
//
// Only the forms Replace takes count. Counting every form that crossed the
// cut, overlapping ones (a value like "8080" in "808080…", or any value
// whose last byte is its first, printed in a chain) moved the cut back one
// form at a time to the start: the writer held the whole stream and each
// write read it all again (SECURITY 173).
func (r *Replacer) SafeCut(s string, cut int) int {
	if r == nil || r.maxLen <= 1 {
		return cut
	}
	// The longest form at each position below cut, found backwards as
	// Replace finds them; then Replace's choice, left to right.
	var found []int32 // pairs of position, length; positions descending
	n := int32(0)
	for i := min(len(s), cut+r.maxLen-1) - 1; i >= 0; i-- {
		n = r.step(n, s[i])
		if i < cut && r.best[n] > 0 {
			found = append(found, int32(i), r.best[n])
		}
	}
	next := 0
	for k := len(found) - 2; k >= 0; k -= 2 {
		at, l := int(found[k]), int(found[k+1])
		if at < next {
			continue
		}
		if at+l > cut {
			return at
		}
		next = at + l
	}
	return cut
}

// Writer masks a stream written to w in pieces as MaskWriter does (a value
// cut across two writes included); Close flushes and does not close w. It
// makes a Replacer an engine/rundir Masker, the one writer of a run
// directory.
func (r *Replacer) Writer(w io.Writer) io.WriteCloser {
	if r == nil || r.maxLen == 0 {
		return nopCloser{w}
	}
	return &maskWriter{w: w, r: r, keep: r.maxLen - 1, next: flushAt + r.maxLen - 1}
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// TermWriter writes what it is given to w with every sensitive value
// masked, at once: it holds back only an end of what it was given that may
// be the start of a value (a value cut across two writes, or a line
// break inside a value: a PEM key), until the next write shows what
// follows or Flush. A terminal's output is never held longer, so a
// progress bar that redraws a line with '\r' shows each frame when it is
// written. Nil r: w's writes pass through. Safe for concurrent use.
type TermWriter struct {
	mu  sync.Mutex
	w   io.Writer
	r   *Replacer
	buf []byte
}

// TermWriter is a TermWriter of w (engine/lab's: cmd/rlab's stdout and
// stderr once a command has loaded its lab).
func (r *Replacer) TermWriter(w io.Writer) *TermWriter { return &TermWriter{w: w, r: r} }

func (t *TermWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.r == nil || t.r.maxLen == 0 {
		return t.w.Write(p)
	}
	t.buf = append(t.buf, p...)
	s := string(t.buf)
	// Every form that starts before k lies inside s or cannot match (s[j:]
	// starts no form for j < k): SafeCut knows them all.
	c := t.r.SafeCut(s, t.r.startsForm(s))
	if c > 0 {
		if _, err := io.WriteString(t.w, t.r.Replace(s[:c])); err != nil {
			return len(p), err
		}
		t.buf = append(t.buf[:0], s[c:]...)
	}
	return len(p), nil
}

// Flush writes what was held back, masked.
func (t *TermWriter) Flush() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.buf) == 0 {
		return nil
	}
	_, err := io.WriteString(t.w, t.r.Replace(string(t.buf)))
	t.buf = t.buf[:0]
	return err
}

// Fd is the descriptor of the file written to, for a terminal check (not
// a descriptor if w is not a file): cmd/rlab draws a progress bar and wraps
// diagnostics only on a terminal.
func (t *TermWriter) Fd() uintptr {
	if f, ok := t.w.(interface{ Fd() uintptr }); ok {
		return f.Fd()
	}
	return ^uintptr(0)
}
