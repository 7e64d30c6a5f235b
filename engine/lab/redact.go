package lab

import (
	"bytes"
	"encoding/json"
	"html"
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
func Redactor(secrets []string) *strings.Replacer {
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
	last    *strings.Replacer
	lastKey string
)

func buildRedactor(secrets []string) *strings.Replacer {
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
	pairs := make([]string, 0, 2*len(forms))
	for _, f := range forms {
		pairs = append(pairs, f, "(sensitive)")
	}
	return strings.NewReplacer(pairs...)
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
