package proto

import (
	"encoding/json"
	"fmt"
)

// MaxValues bounds the objects and array elements one reply, or one file
// of facts read back from a run directory, may hold. JSON decoding builds
// a struct or a slot for each, a hundred times or more the few bytes of
// text an empty object takes ("{},"): a host answering facts with a line
// of MaxLine bytes of empty netdevs took the controller about 2 GB, and a
// received facts.json of 15 MB took rlab report to 3.9 GB. A files.list
// page, the largest reply, holds about 20,000.
const MaxValues = 100_000

// CheckValues counts the objects and array elements of the JSON text b,
// in one pass over its bytes that builds nothing, and says so when there
// are more than max: call it before decoding text a host or a received
// run directory wrote.
func CheckValues(b []byte, max int) error {
	if n, _ := countValues(b, max, -1); n > max {
		return fmt.Errorf("more than %d objects and list elements (%d bytes of JSON): refusing to decode it", max, len(b))
	}
	return nil
}

// CheckObjects is CheckValues with a bound of its own on the objects, the
// dear part (a struct each): for a document that legitimately holds many
// short strings (argv lists) but not as many objects.
func CheckObjects(b []byte, maxValues, maxObjects int) error {
	if n, objs := countValues(b, maxValues, maxObjects); n > maxValues || objs > maxObjects {
		return fmt.Errorf("more than %d objects or %d values (%d bytes of JSON): refusing to decode it", maxObjects, maxValues, len(b))
	}
	return nil
}

// countValues counts '{' and array elements outside strings (n), and the
// '{' alone (objs), stopping past max or maxObjs (-1: no bound of its own).
func countValues(b []byte, max, maxObjs int) (n, objs int) {
	return CountJSON(b, 1, true, max, maxObjs)
}

// jsonStrings follows the JSON strings of a text read byte by byte, so the
// scanners below see only the bytes outside them.
type jsonStrings struct{ in, escaped bool }

// open starts a string: the byte was its opening quote.
func (s *jsonStrings) open() { s.in = true }

// inside reports whether c belongs to an open string (its closing quote
// included), and follows the string's escapes and end.
func (s *jsonStrings) inside(c byte) bool {
	if !s.in {
		return false
	}
	switch {
	case s.escaped:
		s.escaped = false
	case c == '\\':
		s.escaped = true
	case c == '"':
		s.in = false
	}
	return true
}

// CountJSON counts, in one pass over the JSON text b that builds nothing,
// the elements of every array that is the depth-th open container or
// deeper (1: every array; 3: results.json's workloads[i].expects, not the
// workloads) in n, and objects in objs: with every, each object anywhere,
// once in both; without, only the objects that are such elements. It
// stops past maxN or maxObjs (-1: no bound of its own).
// The one scanner of JSON cost for text a host or a received run
// directory wrote (CheckValues here, results.Decode's nested lists).
func CountJSON(b []byte, depth int, every bool, maxN, maxObjs int) (n, objs int) {
	var stack []byte // '[' or '{' per open container
	var str jsonStrings
	want := false // an array element may start here
	for _, c := range b {
		if str.inside(c) {
			continue
		}
		if want && c != ' ' && c != '\t' && c != '\n' && c != '\r' && c != ']' {
			want = false
			switch {
			case !every:
				n++
				if c == '{' {
					objs++
				}
			case c != '{': // with every, an object counts once, below
				n++
			}
		}
		switch c {
		case '"':
			str.open()
		case '[', '{':
			if c == '{' && every {
				n++
				objs++
			}
			stack = append(stack, c)
			want = c == '[' && len(stack) >= depth
		case ']', '}':
			want = false
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		case ',':
			want = len(stack) >= depth && stack[len(stack)-1] == '['
		}
		if n > maxN || maxObjs >= 0 && objs > maxObjs {
			return n, objs
		}
	}
	return n, objs
}

// CountMembers counts the members ("key": value) of the object that the
// JSON text b is, or with all those of every object it holds, in one pass
// over its bytes that builds nothing, stopping past max. A map decodes
// each member into a key string and a value of its own: 20 to 80 times
// the bytes of a member such as "k":null (a struct skips a key it has no
// field for, almost for free), which CheckValues does not count. Call it
// on the text of a map before decoding it (Tools, results.Decode).
func CountMembers(b []byte, all bool, max int) int {
	n, depth := 0, 0
	var str jsonStrings
	for _, c := range b {
		if str.inside(c) {
			continue
		}
		switch c {
		case '"':
			str.open()
		case '[', '{':
			depth++
		case ']', '}':
			depth--
		case ':': // only a member has one outside a string
			if all || depth == 1 {
				if n++; n > max {
					return n
				}
			}
		}
	}
	return n
}

// Members, as a field of a skeleton type decoded before the real one,
// adds up the members of every JSON object the decoder meets for that
// field: a key spelled twice (or in two cases) fills the real one's map
// twice, and is counted twice. It builds nothing else. Compare the sum
// with a bound before decoding the real type (results.Decode, state.json).
type Members int

// UnmarshalJSON adds b's members (counted up to 1<<30).
func (m *Members) UnmarshalJSON(b []byte) error {
	*m += Members(CountMembers(b, false, 1<<30))
	return nil
}

// MaxTools bounds Facts.Tools: a facts request probes a few dozen
// programs (FactsParams.Probe).
const MaxTools = 1_000

// Tools maps a program a facts request probed to where it is and its
// version (Facts.Tools). It decodes only up to MaxTools of them: a host's
// reply, or a received facts.json, of MaxLine bytes of "name":null took
// the controller 128 MB as a plain map.
type Tools map[string]Tool

// UnmarshalJSON refuses more than MaxTools members before building any,
// with those of an earlier "tools" of the same object (which a map adds
// to) counted in.
func (t *Tools) UnmarshalJSON(b []byte) error {
	if n := len(*t) + CountMembers(b, false, MaxTools); n > MaxTools {
		return fmt.Errorf("tools: more than %d (%d bytes of JSON), more than any facts request probes: refusing to decode them", MaxTools, len(b))
	}
	return json.Unmarshal(b, (*map[string]Tool)(t))
}
