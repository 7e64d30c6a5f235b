package rundir

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
)

// The one writer of a run directory. Every file a run writes into its run
// directory (results.json, summary.md, report.html, events, state, logs,
// the lab's files, pulled outputs) is written by WriteFile, Create or
// CreateRaw, which mask the run's sensitive values (SECURITY 209): a text
// the lab controls or a sensitive -var value reaching a file without the
// redactor was found fourteen times, each at its own spot (SECURITY
// 179–185, 195, 199–206). internal/archtest's TestRunDirWritesGoThroughRundir
// fails on a direct file write in a package that writes run directories.
//
// The run registers its directory's masker once (Mask) where it makes the
// directory; writers deep in engine/results, engine/report, engine/runstate
// or steps, which may not import engine/lab, find it by the path they write.
// A directory nobody registered (a test's, `rlab report` of a received
// run, whose sensitive values rlab does not know) is written as given.

// Masker masks a run's sensitive values: engine/lab's Replacer.
type Masker interface {
	// Replace is the text with every sensitive value masked.
	Replace(s string) string
	// Writer masks a stream written to w in pieces, a value cut across two
	// writes included; Close flushes and does not close w.
	Writer(w io.Writer) io.WriteCloser
}

var (
	masksMu sync.Mutex
	masks   = map[string]Masker{} // absolute run directory -> its masker
)

// Mask makes every file written under dir by this package masked by m
// until release is called. A nil m masks nothing.
func Mask(dir string, m Masker) (release func()) {
	abs, err := filepath.Abs(dir)
	if err != nil || m == nil {
		return func() {}
	}
	masksMu.Lock()
	masks[abs] = m
	masksMu.Unlock()
	return func() {
		masksMu.Lock()
		if masks[abs] == m {
			delete(masks, abs)
		}
		masksMu.Unlock()
	}
}

// maskerFor is the masker of the registered directory path lies in, nil
// if none.
func maskerFor(path string) Masker {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil
	}
	masksMu.Lock()
	defer masksMu.Unlock()
	if len(masks) == 0 {
		return nil
	}
	for d := abs; ; {
		if m, ok := masks[d]; ok {
			return m
		}
		up := filepath.Dir(d)
		if up == d {
			return nil
		}
		d = up
	}
}

// MaskText is s masked as a file written at path would be: for a text
// written into the run directory by other means (a file's name).
func MaskText(path, s string) string {
	if m := maskerFor(path); m != nil {
		return m.Replace(s)
	}
	return s
}

// WriteFile writes b to path masked, through a temporary name synced
// before the rename and the folder synced after it, so that path is whole
// or absent after a crash and a planted symlink at path is replaced, not
// followed; mode 0600, as every file of a run directory. A .json file is
// masked inside its string literals only (maskJSON), so it stays the JSON
// it was; an .html or .xml file in its text and quoted attribute values
// only (maskHTML); any other file as text.
func WriteFile(path string, b []byte) error { return Write(path, b, true) }

// Write is WriteFile, synced only if sync: a file rewritten often (the
// run's state.json after each step) whose crash-safety comes from the
// next write.
func Write(path string, b []byte, sync bool) error {
	if m := maskerFor(path); m != nil {
		switch {
		case strings.HasSuffix(path, ".json"):
			b = maskJSON(m, b)
		case strings.HasSuffix(path, ".html"), strings.HasSuffix(path, ".xml"):
			// junit.xml is encoding/xml's, which escapes <, >, & and
			// both quotes in every value too: the same markup rule.
			b = maskHTML(m, b)
		default:
			b = []byte(m.Replace(string(b)))
		}
	}
	return replace(path, b, sync)
}

// WriteUnmasked is Write without the masking, for the one file that must
// hold the run's values as they are: state.json, whose host user, address
// and rxe devices `rlab down` acts on, and whose signature (runstate's
// HMAC) covers the bytes as the run wrote them; masked after signing, down
// refused the user's own run ("not written by your rlab", attack round
// 15). runstate redacts what down does not need (argv) before signing.
func WriteUnmasked(path string, b []byte, sync bool) error {
	return replace(path, b, sync)
}

func replace(path string, b []byte, sync bool) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			os.Remove(tmp)
		}
	}()
	_, err = f.Write(b)
	if err == nil {
		err = f.Chmod(0o600)
	}
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err = os.Rename(tmp, path); err != nil || !sync {
		return err
	}
	return SyncDir(filepath.Dir(path))
}

// SyncDir syncs a folder, so the names in it survive a crash.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// maskJSON masks the string literals of an encoded JSON text (keys
// included), leaving its structure and layout as they are. Masking the
// encoded bytes whole is not safe: a value may hold JSON's own syntax (a
// sensitive `","`), and masking it across two literals changes the
// document. The forms of a value include its JSON escapings, so a literal
// is masked as written; should that leave it no longer a literal (a value
// ending in a backslash matched the start of an escape), it is decoded,
// masked and encoded again. A text with no value anywhere is returned as
// it is after one pass.
func maskJSON(m Masker, b []byte) []byte {
	s := string(b)
	if m.Replace(s) == s {
		return b
	}
	var out strings.Builder
	out.Grow(len(s))
	last, broken := 0, false
	for i := 0; i < len(s); i++ {
		if s[i] != '"' {
			continue
		}
		j := i + 1
		for j < len(s) && s[j] != '"' {
			if s[j] == '\\' {
				j++
			}
			j++
		}
		if j >= len(s) {
			broken = true // not JSON: the rest is masked as text below
			break
		}
		lit := s[i+1 : j]
		if masked := m.Replace(lit); masked != lit {
			out.WriteString(s[last : i+1])
			if !json.Valid([]byte(`"` + masked + `"`)) {
				var v string
				if json.Unmarshal([]byte(s[i:j+1]), &v) == nil {
					e, _ := json.Marshal(m.Replace(v))
					masked = string(e[1 : len(e)-1])
				}
			}
			out.WriteString(masked)
			last = j
		}
		i = j
	}
	if broken {
		out.WriteString(m.Replace(s[last:]))
	} else {
		// Outside its literals a JSON document holds numbers, true, false,
		// null and punctuation: a value masked there (a sensitive "1", or
		// `","` spanning two literals) broke the document or changed what
		// it says (attack round 15). A sensitive number is kept as the
		// number it is, as lab.RedactJSON keeps it.
		out.WriteString(s[last:])
	}
	return []byte(out.String())
}

// maskHTML masks an HTML document (report.html, from html/template) in its
// text and the values of its quoted attributes, leaving its tags as they
// are. html/template escapes <, >, " and ' in what it writes, so they
// stand raw only in the template's own markup, where no value is; masked
// as text, a lab's sensitive value `"` stripped every attribute's quotes,
// and the rest of a title attribute holding a metric's unit became
// attributes of its own, an onmouseover handler among them (attack round
// 18, labs, high).
func maskHTML(m Masker, b []byte) []byte {
	s := string(b)
	if m.Replace(s) == s {
		return b
	}
	var out strings.Builder
	out.Grow(len(s))
	i := 0
	for i < len(s) {
		lt := strings.IndexByte(s[i:], '<')
		if lt < 0 {
			out.WriteString(maskRefs(m, s[i:]))
			break
		}
		out.WriteString(maskRefs(m, s[i:i+lt]))
		i += lt
		if strings.HasPrefix(s[i:], "<?") {
			// The XML declaration (version, encoding) is the
			// writer's own: a sensitive "1.0" or "UTF-8" masked there
			// made junit.xml no XML (attack round 19, labs).
			end := strings.Index(s[i:], "?>")
			if end < 0 {
				out.WriteString(maskRefs(m, s[i:]))
				return []byte(out.String())
			}
			out.WriteString(s[i : i+end+2])
			i += end + 2
			continue
		}
		// A tag, to its '>' outside quotes: its quoted values are masked.
		for i < len(s) && s[i] != '>' {
			q := s[i]
			if q != '"' && q != '\'' {
				out.WriteByte(q)
				i++
				continue
			}
			end := strings.IndexByte(s[i+1:], q)
			if end < 0 {
				out.WriteString(maskRefs(m, s[i:])) // not HTML: the rest as text
				return []byte(out.String())
			}
			out.WriteByte(q)
			out.WriteString(maskRefs(m, s[i+1:i+1+end]))
			out.WriteByte(q)
			i += end + 2
		}
		if i < len(s) {
			out.WriteByte('>')
			i++
		}
	}
	return []byte(out.String())
}

// charRef is a character or entity reference (&#34;, &#x27;, &amp;).
var charRef = regexp.MustCompile(`&(#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{0,31});`)

// maskRefs masks text of an HTML or XML document between its character
// references, never inside one: html/template and encoding/xml write every
// quote as &#34; or &#39;, and a sensitive "34" or ";" masked inside one
// made it no reference (junit.xml refused by XML readers, report.html
// showing "&#(sensitive);"; attack round 19, labs). A value is masked only
// as it stands between references (a value holding a quote is written as a
// reference, which the masker does not know: a known gap).
func maskRefs(m Masker, s string) string {
	if !strings.Contains(s, "&") {
		return m.Replace(s)
	}
	var out strings.Builder
	last := 0
	for _, r := range charRef.FindAllStringIndex(s, -1) {
		out.WriteString(m.Replace(s[last:r[0]]))
		out.WriteString(s[r[0]:r[1]])
		last = r[1]
	}
	out.WriteString(m.Replace(s[last:]))
	return out.String()
}

// Flags for Create: a new file, or appended to.
const (
	New    = os.O_EXCL
	Append = os.O_APPEND
	Trunc  = os.O_TRUNC
)

// Create opens path for writing (flag: New, Append or Trunc; never through
// a symlink) for a file written a record at a time (events.jsonl, a log's
// lines): each Write is masked whole before it reaches the file, a .jsonl
// line inside its literals as WriteFile does, so nothing is held back and
// a reader of the file sees each record when it is written. A writer of
// pieces that may cut a value uses CreateStream.
func Create(path string, flag int) (*File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|flag|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, err
	}
	return &File{f: f, m: maskerFor(path), json: strings.HasSuffix(path, ".jsonl")}, nil
}

// File is a file of the run directory written a record at a time
// (Create).
type File struct {
	f    *os.File
	m    Masker // nil: written as given
	json bool
}

func (r *File) Write(p []byte) (int, error) {
	b := p
	switch {
	case r.m == nil:
	case r.json:
		b = maskJSON(r.m, p)
	default:
		b = []byte(r.m.Replace(string(p)))
	}
	if _, err := r.f.Write(b); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Sync syncs the file.
func (r *File) Sync() error { return r.f.Sync() }

// Close closes the file.
func (r *File) Close() error { return r.f.Close() }

// CreateStream is Create (Trunc) for a stream written in pieces, masked as
// the run's masker masks a stream: a value cut across two writes is masked
// too, and up to the longest value's length is held back until the next
// write or Close, which flushes it and closes the file.
func CreateStream(path string) (io.WriteCloser, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, err
	}
	m := maskerFor(path)
	if m == nil {
		return f, nil
	}
	return &maskedFile{WriteCloser: m.Writer(f), f: f}, nil
}

type maskedFile struct {
	io.WriteCloser // the masker's writer
	f              *os.File
}

func (m *maskedFile) Close() error {
	err := m.WriteCloser.Close()
	if cerr := m.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// CreateRaw creates path (truncating it, never through a symlink) and
// writes what it is given unmasked. It is for the bytes pulled from a host
// (engine/remote's pull, which hashes what the host sent and masks a
// text artifact itself, as it streams, through the run's own masker:
// engine/run pullMask) and for binary artifacts (captures), which a
// rewrite of their bytes would break: a pcap's records carry their
// lengths, and "(sensitive)" is not the length of the value it stands
// for. SECURITY's caveats say a capture holds the lab's traffic.
func CreateRaw(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, 0o600)
}

// Rename moves a file written beside its final name (a pulled file's
// .part) to it.
func Rename(from, to string) error { return os.Rename(from, to) }
