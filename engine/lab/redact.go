package lab

import (
	"bytes"
	"encoding/json"
	"github.com/hashicorp/hcl/v2"
	"html"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/rlab-dev/rlab/engine/termsafe"
)

// Redactor returns a replacer of every sensitive value with "(sensitive)",
// matched as written in each encoding rlab puts text through on its way to a
// file, a log or a terminal: as it is; JSON (Go's, which escapes <, > and &
// as \u003c…, and without that escaping); Go quoting (%q, slog's text
// handler) plain and ASCII-only; HTML; the terminal escaping of termsafe;
// and each of those applied twice (a Go-quoted argv inside a JSON error,
// a JSON line inside a quoted log value). A value is replaced whole, longest
// form first, so a secret holding another is not half replaced.
//
// It is a Replacer, linear in the text whatever the values are (SECURITY
// 180); strings.Replacer was not.
func Redactor(secrets []string) *Replacer {
	// A run asks for its lab's redactor many times (events, state, each
	// host's agent.log, results); a class lab's hundreds of values take
	// milliseconds to build: the last one is kept.
	key := strings.Join(secrets, "\x00")
	lastMu.Lock()
	defer lastMu.Unlock()
	if last != nil && key == lastKey {
		return last
	}
	last, lastKey = buildRedactor(secrets), key
	return last
}

var (
	lastMu  sync.Mutex
	last    *Replacer
	lastKey string
)

func buildRedactor(secrets []string) *Replacer {
	r := NewReplacer(redactForms(secrets), "(sensitive)")
	r.anchors = anchors(secrets)
	return r
}

// maxAnchors is how many values may have anchors looked for before the
// automaton runs: each is a pass of strings.Contains over the text.
const maxAnchors = 16

// anchors is, for each secret, its longest run of ASCII letters and
// digits, which every form of it holds unchanged (no encoding of
// redactForms escapes a letter or digit, nor puts anything between two):
// a text that holds none of them holds no form, and Replace returns it
// after a few strings.Contains (SIMD) instead of the automaton's pass,
// 20 times slower (BenchmarkRunDirWrite). Nil, no shortcut, if a secret
// has no letter or digit or there are more than maxAnchors.
func anchors(secrets []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range secrets {
		if s == "" {
			continue
		}
		best, start := "", -1
		for i := 0; i <= len(s); i++ {
			alnum := i < len(s) && (s[i] >= 'a' && s[i] <= 'z' || s[i] >= 'A' && s[i] <= 'Z' || s[i] >= '0' && s[i] <= '9')
			if alnum && start < 0 {
				start = i
			}
			if !alnum && start >= 0 {
				if i-start > len(best) {
					best = s[start:i]
				}
				start = -1
			}
		}
		if best == "" {
			return nil
		}
		if !seen[best] {
			seen[best] = true
			out = append(out, best)
		}
	}
	if len(out) > maxAnchors {
		return nil
	}
	return out
}

// redactForms is every form of every secret Redactor matches, longest
// first.
func redactForms(secrets []string) []string {
	seen := map[string]bool{}
	var forms []string
	add := func(s string) {
		if s != "" && !seen[s] {
			seen[s] = true
			forms = append(forms, s)
		}
	}
	for _, s := range secrets {
		if s == "" {
			continue
		}
		add(s)
		for _, e1 := range encodings {
			once := e1(s)
			add(once)
			for _, e2 := range encodings {
				add(e2(once))
			}
		}
	}
	sort.SliceStable(forms, func(i, j int) bool { return len(forms[i]) > len(forms[j]) })
	return forms
}

// MaskWriter writes what it is given to w with every sensitive value
// replaced as Redactor replaces it, as a CI system masks a secret in a
// job's log: for a stream (a workload's stdout as it is pulled) whose
// value may be cut across writes, so it holds back at most the longest
// form's length (less one) until the next write or Close, which flushes.
// Nil when there are no secrets. Close does not close w.
func MaskWriter(secrets []string, w io.Writer) io.WriteCloser {
	r := Redactor(secrets)
	if r.maxLen == 0 {
		return nil
	}
	return &maskWriter{w: w, r: r, keep: r.maxLen - 1, next: flushAt + r.maxLen - 1}
}

type maskWriter struct {
	w    io.Writer
	r    *Replacer
	keep int // bytes a match may still need after the last write
	buf  []byte
	// next is the buffer's length at which it is flushed again: flushAt
	// more than it kept, so that each flush, which reads the buffer, has
	// flushAt new bytes to read (SECURITY 178).
	next    int
	flushes int // for tests
}

// flushAt is how much the buffer holds before the safe part is written.
const flushAt = 64 << 10

func (m *maskWriter) Write(p []byte) (int, error) {
	m.buf = append(m.buf, p...)
	if len(m.buf) < m.next {
		return len(p), nil
	}
	m.flushes++
	// Write all but the last keep bytes, unless a form starts before the
	// cut and ends after it: then cut where it starts, so it is replaced
	// whole next time. The Replacer finds that cut in one pass; a search
	// of the window for each form took a second a flush with thousands of
	// forms beside a long one (SECURITY 165).
	cut := m.r.SafeCut(string(m.buf), len(m.buf)-m.keep)
	if _, err := io.WriteString(m.w, m.r.Replace(string(m.buf[:cut]))); err != nil {
		return len(p), err
	}
	m.buf = append(m.buf[:0], m.buf[cut:]...)
	// What was kept (up to the longest form twice, when one crossed the
	// cut) is read again at the next flush: not before flushAt more. A
	// kept part past flushAt+keep made every write flush, reading it all,
	// and a host writing a few bytes at a time cost a form's length each.
	m.next = max(flushAt+m.keep, len(m.buf)+flushAt)
	return len(p), nil
}

func (m *maskWriter) Close() error {
	_, err := io.WriteString(m.w, m.r.Replace(string(m.buf)))
	m.buf = nil
	return err
}

// encodings write a string as it appears inside each kind of quoted text
// (without the quotes).
var encodings = []func(string) string{
	func(s string) string { b, _ := json.Marshal(s); return unquote(b) },
	func(s string) string {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		enc.Encode(s)
		return unquote(bytes.TrimSpace(buf.Bytes()))
	},
	func(s string) string { return unquote([]byte(strconv.Quote(s))) },
	func(s string) string { return unquote([]byte(strconv.QuoteToASCII(s))) },
	html.EscapeString,
	termsafe.Line,
	termsafe.Block,
}

func unquote(b []byte) string {
	if len(b) >= 2 {
		b = b[1 : len(b)-1]
	}
	return string(b)
}

// Redact returns a function that replaces every sensitive value of the lab
// in a text with "(sensitive)" (see Redactor); the identity when l is nil
// or has none. Diagnostics print values (an address, "with var.x as ..."),
// so their text goes through it.
func Redact(l *Lab) func(string) string {
	if l == nil || len(l.Sensitive) == 0 {
		return func(s string) string { return s }
	}
	return Redactor(l.Sensitive).Replace
}

// RedactJSON is a decoded JSON value (any, []any, map[string]any, as
// encoding/json decodes into an any) with every string in it, keys
// included, redacted by red; maps are copied, slices changed in place.
func RedactJSON(red *Replacer, v any) any {
	switch x := v.(type) {
	case string:
		return red.Replace(x)
	case []any:
		for i := range x {
			x[i] = RedactJSON(red, x[i])
		}
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[red.Replace(k)] = RedactJSON(red, e)
		}
		return m
	}
	return v
}

// RedactDiags is diags with l's sensitive values redacted in each summary
// and detail, before anything writes them: a warning quotes a value ("this
// host logs in as %q"), and on a terminal hcl wraps a detail at its width,
// which split a value with a space in it over two lines that a redactor of
// the written output no longer matched.
func RedactDiags(l *Lab, diags hcl.Diagnostics) hcl.Diagnostics {
	red := Redact(l)
	out := make(hcl.Diagnostics, len(diags))
	for i, d := range diags {
		c := *d
		c.Summary, c.Detail = red(d.Summary), red(d.Detail)
		out[i] = &c
	}
	return out
}

// ErrorMask masks the sensitive values in the text of an error an agent
// answers with before it is cut (rpc.Options.Mask, SECURITY 195); a text
// the agent cut (a stderr's tail or head) loses a value's end at its
// start and a value's start at its end (Replacer.ReplaceCut). Nil without
// sensitive values.
func ErrorMask(secrets []string) func(s string, cut bool) string {
	if len(secrets) == 0 {
		return nil
	}
	red := Redactor(secrets)
	return func(s string, cut bool) string { return red.ReplaceCut(s, cut, cut) }
}

// CutMask masks the sensitive values in a text a host cut before it
// (start) or after it (end): steps.Env.MaskCut. Nil without sensitive
// values.
func CutMask(secrets []string) func(s string, start, end bool) string {
	if len(secrets) == 0 {
		return nil
	}
	return Redactor(secrets).ReplaceCut
}
