package lab

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/apparentlymart/go-textseg/v15/textseg"
	"github.com/hashicorp/hcl/v2"

	"github.com/rlab-dev/rlab/engine/termsafe"
)

// NoSource is the Extra of a diagnostic whose subject's file is not
// quoted (a -var-file's line of an undeclared variable, which holds its
// value): SourceFiles leaves that file out, so the diagnostic shows its
// position without source lines.
type NoSource struct{}

// SourceFiles returns the sources diagnostics point into, in the form
// hcl.NewDiagnosticTextWriter wants: the loaded files when l is not nil,
// else the files named by the diagnostics (read again, within MaxFileBytes),
// but for a NoSource diagnostic's; each with its sensitive defaults blanked
// (Lab.Source).
func SourceFiles(l *Lab, diags hcl.Diagnostics) map[string]*hcl.File {
	out := map[string]*hcl.File{}
	if l != nil {
		for n := range l.Files {
			out[n] = &hcl.File{Bytes: l.Source(n)}
		}
	}
	skip := map[string]bool{}
	for _, d := range diags {
		if _, ok := d.Extra.(NoSource); ok && d.Subject != nil {
			skip[d.Subject.Filename] = true
		}
	}
	for _, d := range diags {
		if d.Subject == nil || out[d.Subject.Filename] != nil || skip[d.Subject.Filename] {
			continue
		}
		// Checked on the open file (readInFolder), not by name first: a
		// file swapped for a FIFO between the two would hang the print,
		// and one swapped for a symlink out of its folder would show
		// what it names (SECURITY 174, 192).
		if b, err := readInFolder(d.Subject.Filename); err == nil && len(b) <= MaxFileBytes {
			out[d.Subject.Filename] = &hcl.File{Bytes: b}
		}
	}
	return out
}

// JSONPos is a position in a diagnostic's JSON form.
type JSONPos struct {
	Line   int `json:"line"`
	Column int `json:"column"`
	Byte   int `json:"byte"`
}

// JSONRange is a source range in a diagnostic's JSON form.
type JSONRange struct {
	Filename string  `json:"filename"`
	Start    JSONPos `json:"start"`
	End      JSONPos `json:"end"`
}

// JSONDiagnostic is the JSON form of one diagnostic, as `rlab validate -json`
// prints it.
type JSONDiagnostic struct {
	Severity string     `json:"severity"` // "error" or "warning"
	Summary  string     `json:"summary"`
	Detail   string     `json:"detail"`
	Range    *JSONRange `json:"range,omitempty"`
}

// JSONResult is the whole output of `rlab validate -json`.
type JSONResult struct {
	Valid        bool             `json:"valid"`
	ErrorCount   int              `json:"error_count"`
	WarningCount int              `json:"warning_count"`
	Diagnostics  []JSONDiagnostic `json:"diagnostics"`
}

// NewJSONResult converts diagnostics to their JSON form.
func NewJSONResult(diags hcl.Diagnostics) JSONResult {
	r := JSONResult{Diagnostics: []JSONDiagnostic{}}
	for _, d := range diags {
		jd := JSONDiagnostic{Severity: "error", Summary: d.Summary, Detail: d.Detail}
		if d.Severity == hcl.DiagWarning {
			jd.Severity = "warning"
			r.WarningCount++
		} else {
			r.ErrorCount++
		}
		if s := d.Subject; s != nil {
			jd.Range = &JSONRange{
				Filename: s.Filename,
				Start:    JSONPos{s.Start.Line, s.Start.Column, s.Start.Byte},
				End:      JSONPos{s.End.Line, s.End.Column, s.End.Byte},
			}
		}
		r.Diagnostics = append(r.Diagnostics, jd)
	}
	r.Valid = r.ErrorCount == 0
	return r
}

// MarshalJSONResult renders diagnostics as indented JSON.
func MarshalJSONResult(diags hcl.Diagnostics) ([]byte, error) {
	return json.MarshalIndent(NewJSONResult(diags), "", "  ")
}

// WriteDiagnostics prints diagnostics as hcl.NewDiagnosticTextWriter does,
// with two additions users of compilers expect: the location as
// FILE:LINE,COL-COL (hcl.Range's form, which editors can jump to) and,
// without colour, a ^~~~ line under the range in the source line.
//
// A lab from a course repository is untrusted: its text (in the source
// line shown, a summary or detail quoting it, a file name) must not reach
// the terminal with control characters (termsafe). They are escaped in the
// diagnostic and masked with '.' in the source lines (which keeps the
// range's columns); without colour the whole output is escaped again.
func WriteDiagnostics(w io.Writer, files map[string]*hcl.File, diags hcl.Diagnostics, width uint, color bool) error {
	files = safeSources(files)
	for i, d := range diags {
		if i == MaxShownDiagnostics {
			return writeNotShown(w, diags[i:])
		}
		d = safeDiag(d)
		var buf bytes.Buffer
		own, shown, before := window(files, d)
		hw := hcl.NewDiagnosticTextWriter(&buf, own, width, color)
		if err := hw.WriteDiagnostic(shown); err != nil {
			return err
		}
		out := renumber(buf.String(), before)
		if !color {
			out = termsafe.Block(out)
		}
		if s := d.Subject; s != nil {
			old := fmt.Sprintf("  on %s line %d", s.Filename, s.Start.Line)
			out = strings.Replace(out, old, "  on "+s.String(), 1)
			var r hcl.Range
			out, r = clipSource(out, *s, files[s.Filename], color)
			if !color {
				out = addCaret(out, files[s.Filename], r)
			}
		}
		if _, err := io.WriteString(w, out); err != nil {
			return err
		}
	}
	return nil
}

// window is what hcl's writer is given for d: its file cut to the lines
// d shows (its subject's and its context's), d with its ranges moved to
// match, and how many lines were cut before them (renumber puts them back
// in the line numbers it prints). hcl's writer scans its file from the
// start for each diagnostic, allocating for every line: one diagnostic at
// the end of a 4 MB lab of comment lines cost seconds, and 100 of them
// held `rlab validate` over 10 minutes.
func window(files map[string]*hcl.File, d *hcl.Diagnostic) (map[string]*hcl.File, *hcl.Diagnostic, int) {
	if d.Subject == nil || files[d.Subject.Filename] == nil {
		return files, d, 0
	}
	b := files[d.Subject.Filename].Bytes
	snip := *d.Subject
	if d.Context != nil {
		snip = hcl.RangeOver(snip, *d.Context)
	}
	if snip.Start.Byte < 0 || snip.Start.Byte > snip.End.Byte || snip.End.Byte > len(b) {
		return files, d, 0
	}
	from, to := lineSpan(b, snip)
	c := *d
	if d.Context != nil && !fewLines(b[from:to]) {
		// A context of many lines (hcl gives every mistake in a
		// template the whole template) is left out: the subject's
		// lines are shown.
		snip, c.Context = *d.Subject, nil
		if snip.Start.Byte < 0 || snip.Start.Byte > snip.End.Byte || snip.End.Byte > len(b) {
			return files, d, 0
		}
		from, to = lineSpan(b, snip)
	}
	to = from + cutLines(b[from:to], MaxSnippetLines)
	move := func(r *hcl.Range) *hcl.Range {
		if r == nil {
			return nil
		}
		m := *r
		m.Start.Byte -= from
		m.End.Byte -= from
		return &m
	}
	c.Subject, c.Context = move(c.Subject), move(c.Context)
	return map[string]*hcl.File{d.Subject.Filename: {Bytes: b[from:to]}}, &c, bytes.Count(b[:from], []byte{'\n'})
}

// MaxSnippetLines bounds the source lines a diagnostic shows: hcl's
// writer prints every line of its subject and context, and one template's
// context is the whole template, so 100 mistakes at the head of a long
// heredoc printed it 100 times (attack round 16).
const MaxSnippetLines = 12

// lineSpan is where the lines holding r start and end in b.
func lineSpan(b []byte, r hcl.Range) (from, to int) {
	from, to = bytes.LastIndexByte(b[:r.Start.Byte], '\n')+1, len(b)
	if i := bytes.IndexByte(b[r.End.Byte:], '\n'); i >= 0 {
		to = r.End.Byte + i + 1
	}
	return from, to
}

// fewLines reports whether b holds at most MaxSnippetLines lines.
func fewLines(b []byte) bool { return cutLines(b, MaxSnippetLines) == len(b) }

// cutLines is the length of b's first n lines (all of b if it has fewer),
// found without reading past them.
func cutLines(b []byte, n int) int {
	at := 0
	for range n {
		i := bytes.IndexByte(b[at:], '\n')
		if i < 0 {
			return len(b)
		}
		at += i + 1
	}
	return at
}

// renumber adds n to the line numbers of the source lines hcl's writer
// printed (each "%4d: ", between the "  on " line and the blank line
// after it).
func renumber(out string, n int) string {
	if n == 0 {
		return out
	}
	lines := strings.SplitAfter(out, "\n")
	sourceLines(lines, func(i, k int, rest string) {
		lines[i] = fmt.Sprintf("%4d: ", k+n) + rest
	})
	return strings.Join(lines, "")
}

// sourceLines calls f for each source line hcl's writer printed in lines
// (each "%4d: " line between the "  on " line and the blank line after
// it): its index, its number, and the text after the number's ": ".
func sourceLines(lines []string, f func(i, n int, rest string)) {
	in := false
	for i, ln := range lines {
		if strings.HasPrefix(ln, "  on ") {
			in = true
			continue
		}
		if !in {
			continue
		}
		if ln == "\n" || ln == "" {
			break
		}
		colon := strings.Index(ln, ": ")
		if colon < 0 {
			continue
		}
		if n, err := strconv.Atoi(strings.TrimSpace(ln[:colon])); err == nil {
			f(i, n, ln[colon+2:])
		}
	}
}

// MaxShownDiagnostics bounds the diagnostics WriteDiagnostics shows; the
// rest are counted in one line. hcl's writer finds a diagnostic's source
// lines by scanning its whole file from the start, so each one shown costs
// the file's length: a lab of many small mistakes took time quadratic in
// its size to print (`x{}` 4,000 times, 16 KB, held `rlab validate` 53 s;
// the 4 MiB a lab file may hold, weeks).
const MaxShownDiagnostics = 100

// writeNotShown writes the line that counts the diagnostics not shown.
func writeNotShown(w io.Writer, rest hcl.Diagnostics) error {
	errs := 0
	for _, d := range rest {
		if d.Severity == hcl.DiagError {
			errs++
		}
	}
	var parts []string
	for _, c := range []struct {
		n    int
		what string
	}{{errs, "error"}, {len(rest) - errs, "warning"}} {
		switch {
		case c.n == 1:
			parts = append(parts, "1 more "+c.what)
		case c.n > 1:
			parts = append(parts, fmt.Sprintf("%d more %ss", c.n, c.what))
		}
	}
	_, err := fmt.Fprintf(w, "%s not shown: the first %d diagnostics are above (rlab validate -json lists every one).\n\n", strings.Join(parts, " and "), MaxShownDiagnostics)
	return err
}

// safeDiag is d with its texts and file names escaped for a terminal.
func safeDiag(d *hcl.Diagnostic) *hcl.Diagnostic {
	c := *d
	c.Summary, c.Detail = termsafe.Line(d.Summary), termsafe.Block(d.Detail)
	for _, r := range []**hcl.Range{&c.Subject, &c.Context} {
		if *r != nil && !termsafe.Safe((*r).Filename) {
			x := **r
			x.Filename = termsafe.Line(x.Filename)
			*r = &x
		}
	}
	return &c
}

// safeSources masks every byte of a control character in the sources with
// '.', so the source lines a diagnostic quotes are printable and byte
// offsets still hold; file names are escaped as safeDiag escapes them.
func safeSources(files map[string]*hcl.File) map[string]*hcl.File {
	out := make(map[string]*hcl.File, len(files))
	for name, f := range files {
		b := f.Bytes
		if !termsafe.Safe(string(b)) {
			m := make([]byte, 0, len(b))
			for i := 0; i < len(b); {
				r, n := utf8.DecodeRune(b[i:])
				if (r == utf8.RuneError && n <= 1) || !termsafe.Safe(string(r)) {
					m = append(m, bytes.Repeat([]byte{'.'}, n)...)
				} else {
					m = append(m, b[i:i+n]...)
				}
				i += n
			}
			b = m
		}
		out[termsafe.Line(name)] = &hcl.File{Bytes: b}
	}
	return out
}

// MaxSourceLine bounds, in characters, a source line a diagnostic shows:
// longer, it shows a window of this many around the range's start, with …
// where it was cut. A lab of one 4 MB line was printed whole.
const MaxSourceLine = 160

// Terminal codes hcl's writer puts around the range in colour.
const (
	highlightOn  = "\x1b[1;4m"
	highlightOff = "\x1b[0m"
)

// clipSource cuts each source line out shows (between the "  on " line and
// the blank line after it) to MaxSourceLine characters, around the
// subject's start on its own line (the highlight, in colour), and returns
// the subject's range with its columns where the cut line has them (for
// addCaret). The line is cut in code points, found from the subject's byte
// offset in f (the sources as shown); hcl counts columns in characters as a
// reader sees them (grapheme clusters: e and a combining accent are one),
// so a column is never taken for a code point's index.
func clipSource(out string, subject hcl.Range, f *hcl.File, color bool) (string, hcl.Range) {
	// The subject's start and end as code point indexes in its line.
	ri, re := subject.Start.Column-1, -1
	if f != nil && subject.Start.Byte <= len(f.Bytes) && subject.End.Byte <= len(f.Bytes) && subject.Start.Byte <= subject.End.Byte {
		ls := bytes.LastIndexByte(f.Bytes[:subject.Start.Byte], '\n') + 1
		ri = utf8.RuneCount(f.Bytes[ls:subject.Start.Byte])
		if subject.End.Line == subject.Start.Line {
			re = ri + utf8.RuneCount(f.Bytes[subject.Start.Byte:subject.End.Byte])
		}
	}
	lines := strings.SplitAfter(out, "\n")
	sourceLines(lines, func(i, n int, rest string) {
		prefix, src := lines[i][:len(lines[i])-len(rest)], strings.TrimSuffix(rest, "\n")
		// The characters of the line, the highlight taken out.
		hiStart, hiEnd := -1, -1
		if color {
			if a := strings.Index(src, highlightOn); a >= 0 {
				if b := strings.Index(src[a:], highlightOff); b >= 0 {
					hiStart = utf8.RuneCountInString(src[:a])
					hiEnd = hiStart + utf8.RuneCountInString(src[a+len(highlightOn):a+b])
					src = src[:a] + src[a+len(highlightOn):a+b] + src[a+b+len(highlightOff):]
				}
			}
		}
		chars := []rune(src)
		if len(chars) <= MaxSourceLine {
			return
		}
		at := 0 // the character the window is around
		switch {
		case hiStart >= 0:
			at = hiStart
		case n == subject.Start.Line:
			at = ri
		}
		from := min(max(at-MaxSourceLine/4, 0), len(chars)-MaxSourceLine)
		to := from + MaxSourceLine
		var b strings.Builder
		b.WriteString(prefix)
		if from > 0 {
			b.WriteString("…")
		}
		for j := from; j < to; j++ {
			if j == hiStart {
				b.WriteString(highlightOn)
			}
			b.WriteRune(chars[j])
			if j == hiEnd-1 || (j == to-1 && hiStart <= j && j < hiEnd) {
				b.WriteString(highlightOff)
			}
		}
		if to < len(chars) {
			b.WriteString("…")
		}
		b.WriteString("\n")
		lines[i] = b.String()
		if n == subject.Start.Line {
			// Columns in characters as shown, … with them (a window
			// that starts inside a character joins its rest to …).
			a := min(max(ri, from), to)
			e := to // the caret ends where the window does
			if re >= 0 {
				e = min(max(re, a), to)
			}
			var shown []rune
			if from > 0 {
				shown = append(shown, '…')
			}
			shown = append(shown, chars[from:a]...)
			subject.Start.Column = 1 + graphemes(shown)
			subject.End.Line, subject.End.Column = subject.Start.Line, 1+graphemes(append(shown, chars[a:e]...))
		}
	})
	return strings.Join(lines, ""), subject
}

// graphemes counts the characters of rs as a reader sees them, as hcl
// counts a column.
func graphemes(rs []rune) int {
	n, _ := textseg.TokenCount([]byte(string(rs)), textseg.ScanGraphemeClusters)
	return n
}

// addCaret inserts a marker line under the first source line of the range.
func addCaret(out string, f *hcl.File, r hcl.Range) string {
	if f == nil || r.Start.Byte > len(f.Bytes) {
		return out
	}
	prefix := fmt.Sprintf("%4d: ", r.Start.Line)
	lines := strings.SplitAfter(out, "\n")
	for i, ln := range lines {
		if !strings.HasPrefix(ln, prefix) {
			continue
		}
		src := strings.TrimSuffix(ln[len(prefix):], "\n")
		var pad strings.Builder
		col := 1
		for _, c := range src {
			if col >= r.Start.Column {
				break
			}
			if c == '\t' {
				pad.WriteByte('\t')
			} else {
				pad.WriteByte(' ')
			}
			col++
		}
		n := 1
		if r.End.Line == r.Start.Line && r.End.Column > r.Start.Column {
			n = r.End.Column - r.Start.Column
		}
		marker := strings.Repeat(" ", len(prefix)) + pad.String() + "^" + strings.Repeat("~", n-1) + "\n"
		return strings.Join(lines[:i+1], "") + marker + strings.Join(lines[i+1:], "")
	}
	return out
}

// Source is the lab file name as loaded, with each of l.Hidden (a
// sensitive variable's default) blanked: every byte but a line break is
// a '*', so that lines and columns stay where they were.
func (l *Lab) Source(name string) []byte {
	b := l.Files[name]
	var out []byte
	for _, r := range l.Hidden {
		if r.Filename != name || r.Start.Byte < 0 || r.End.Byte > len(b) || r.Start.Byte >= r.End.Byte {
			continue
		}
		if out == nil {
			out = append([]byte(nil), b...)
		}
		for i := r.Start.Byte; i < r.End.Byte; i++ {
			if out[i] != '\n' && out[i] != '\r' {
				out[i] = '*'
			}
		}
	}
	if out == nil {
		return b
	}
	return out
}
