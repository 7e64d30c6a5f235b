package rundir_test

import (
	"encoding/json"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/engine/rundir"
)

// TestWriterMasks: every way into a run directory (WriteFile, Create,
// CreateStream) masks the registered run's sensitive values; a JSON file
// stays the JSON it was when a value holds JSON's own syntax; CreateRaw
// and an unregistered directory are written as given.
func TestWriterMasks(t *testing.T) {
	const tok = "s3cr3t-TOKEN"
	const syntax = `","` // a value that spans two JSON literals when encoded
	const slash = `ab\`  // a value ending in a backslash (an escape's start)
	dir := t.TempDir()
	defer rundir.Mask(dir, lab.Redactor([]string{tok, syntax, slash}))()
	other := t.TempDir()
	read := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	sub := filepath.Join(dir, "hosts", "a", "logs")
	if err := os.MkdirAll(sub, 0o700); err != nil {
		t.Fatal(err)
	}

	t.Run("text", func(t *testing.T) {
		p := filepath.Join(sub, "dmesg.txt")
		if err := rundir.WriteFile(p, []byte("login "+tok+" ok\n")); err != nil {
			t.Fatal(err)
		}
		if got := read(p); got != "login (sensitive) ok\n" {
			t.Errorf("got %q", got)
		}
		if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
			t.Errorf("mode %v, want 0600", fi.Mode().Perm())
		}
	})
	t.Run("json", func(t *testing.T) {
		v := map[string]any{"a": []string{"x", "y"}, "b": "Bearer " + tok, tok: 1, "c": `x"` + slash + `"y`, "d": "<" + tok + ">"}
		b, _ := json.Marshal(v) // compact: ["x","y"] holds the value `","`
		p := filepath.Join(dir, "results.json")
		if err := rundir.WriteFile(p, b); err != nil {
			t.Fatal(err)
		}
		got := read(p)
		var back map[string]any
		if err := json.Unmarshal([]byte(got), &back); err != nil {
			t.Fatalf("not JSON after masking: %v\n%s", err, got)
		}
		for _, s := range []string{tok, `x"ab\\`} {
			if strings.Contains(got, s) {
				t.Errorf("%q left in %s", s, got)
			}
		}
		if back["b"] != "Bearer (sensitive)" || back["(sensitive)"] != 1.0 || back["d"] != "<(sensitive)>" {
			t.Errorf("got %v", back)
		}
		if a, _ := back["a"].([]any); len(a) != 2 {
			t.Errorf("a %v: the value %q changed the document", back["a"], syntax)
		}
	})
	t.Run("json outside its literals", func(t *testing.T) {
		// A value met only outside the literals (a number, or `","`
		// spanning two of them) is not masked there: masking it broke the
		// document or changed what it says (attack round 15).
		num := t.TempDir()
		defer rundir.Mask(num, lab.Redactor([]string{"65536", syntax}))()
		for _, doc := range []string{
			`{"size":65536,"list":["a","b"]}`,
			`{"list":["a","b"],"n":[1,65536]}`,
		} {
			p := filepath.Join(num, "results.json")
			if err := rundir.WriteFile(p, []byte(doc)); err != nil {
				t.Fatal(err)
			}
			if got := read(p); got != doc {
				t.Errorf("%s written as %s", doc, got)
			}
		}
	})
	t.Run("records", func(t *testing.T) {
		p := filepath.Join(dir, "events.jsonl")
		f, err := rundir.Create(p, rundir.New)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte(`{"msg":"` + tok + `"}` + "\n"))
		if got := read(p); got != `{"msg":"(sensitive)"}`+"\n" {
			t.Errorf("a record is on disk masked at once, got %q", got)
		}
		f.Close()
	})
	t.Run("stream", func(t *testing.T) {
		p := filepath.Join(sub, "wl.out")
		w, err := rundir.CreateStream(p)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte("a s3cr"))
		w.Write([]byte("3t-TOKEN b"))
		w.Close()
		if got := read(p); got != "a (sensitive) b" {
			t.Errorf("a value cut across writes: got %q", got)
		}
	})
	t.Run("raw", func(t *testing.T) {
		p := filepath.Join(dir, "c.pcap")
		f, err := rundir.CreateRaw(p)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte(tok))
		f.Close()
		if got := read(p); got != tok {
			t.Errorf("a capture is kept as it is, got %q", got)
		}
	})
	t.Run("unregistered", func(t *testing.T) {
		p := filepath.Join(other, "x.txt")
		if err := rundir.WriteFile(p, []byte(tok)); err != nil {
			t.Fatal(err)
		}
		if got := read(p); got != tok {
			t.Errorf("got %q", got)
		}
	})
}

// BenchmarkRunDirWrite is what the writer costs on a big file of a run
// with sensitive values: a results.json-like JSON with no value in it
// (the common case: one pass) and with one value in every record (each
// literal masked), against the bytes written unmasked.
func BenchmarkRunDirWrite(b *testing.B) {
	const tok = "s3cr3t-TOKEN"
	var clean, dirty strings.Builder
	clean.WriteString("[")
	dirty.WriteString("[")
	for i := range 200_000 {
		if i > 0 {
			clean.WriteString(",")
			dirty.WriteString(",")
		}
		clean.WriteString(`{"workload":"tcp-bw","device":"rxe0","value":12345.678,"unit":"Gbit/s"}`)
		dirty.WriteString(`{"workload":"tcp-bw","device":"rxe-` + tok + `","value":12345.678,"unit":"Gbit/s"}`)
	}
	clean.WriteString("]")
	dirty.WriteString("]")
	for _, c := range []struct {
		name string
		mask bool
		data string
	}{{"unmasked", false, clean.String()}, {"masked-clean", true, clean.String()}, {"masked-dirty", true, dirty.String()}} {
		b.Run(c.name, func(b *testing.B) {
			dir := b.TempDir()
			if c.mask {
				defer rundir.Mask(dir, lab.Redactor([]string{tok, "other-secret"}))()
			}
			p := filepath.Join(dir, "results.json")
			b.SetBytes(int64(len(c.data)))
			for b.Loop() {
				if err := rundir.Write(p, []byte(c.data), false); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestHTMLMarkupKept: a report.html is masked in its text and quoted
// attribute values only, never in its markup. A lab's sensitive value `"`
// masked as text stripped every attribute's quotes, and a lab's metric
// unit in a title attribute became attributes of its own: report.html
// held `<td ... title=(sensitive)1 u onmouseover=alert(3) v(sensitive)>`,
// a handler the page runs (attack round 18, labs, high).
func TestHTMLMarkupKept(t *testing.T) {
	const tok = "s3cr3t-TOKEN"
	for _, markup := range []string{`"`, `" onmouseover=`, `td`, `<td`, `title=`, `>`} {
		t.Run(markup, func(t *testing.T) {
			dir := t.TempDir()
			defer rundir.Mask(dir, lab.Redactor([]string{tok, markup}))()
			doc := `<table><tr><td class="n" title="1 u onmouseover=alert(3) v ` + tok + `">` + tok + ` &#34;x&#34; td</td></tr></table>`
			p := filepath.Join(dir, "report.html")
			if err := rundir.WriteFile(p, []byte(doc)); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			got := string(b)
			if !strings.Contains(got, `<td class="n" title="1 u onmouseover=alert(3) v (sensitive)">`) {
				t.Errorf("the td tag's markup changed: %s", got)
			}
			if strings.Contains(got, tok) {
				t.Errorf("the value is not masked: %s", got)
			}
		})
	}
}

// TestXMLMarkupKept: junit.xml is masked as report.html is, in its text and
// quoted values only: a lab's sensitive value `"` masked as text made its
// XML declaration `<?xml version=(sensitive)1.0(sensitive)…`, which an XML
// reader (expat) refuses, so a CI system lost the results (attack round
// 18, labs, medium); a value inside a character reference (&#34;) or the
// declaration's did the same (round 19).
func TestXMLMarkupKept(t *testing.T) {
	const tok = "s3cr3t-TOKEN"
	for _, markup := range []string{`"`, `testcase`, `<testcase`, `name=`, `>`, `?>`,
		// Round 19: character references and the declaration's values.
		`34`, `;`, `amp;`, `lt;`, `#34;`, `&#`, `1.0`, `UTF-8`} {
		t.Run(markup, func(t *testing.T) {
			dir := t.TempDir()
			defer rundir.Mask(dir, lab.Redactor([]string{tok, markup}))()
			x := struct {
				XMLName xml.Name `xml:"testsuite"`
				Cases   []struct {
					Name string `xml:"name,attr"`
					Text string `xml:",chardata"`
				} `xml:"testcase"`
			}{}
			x.Cases = append(x.Cases, struct {
				Name string `xml:"name,attr"`
				Text string `xml:",chardata"`
			}{Name: `w "quoted" ` + tok, Text: `out <` + tok + `> "x"`})
			body, err := xml.Marshal(x)
			if err != nil {
				t.Fatal(err)
			}
			doc := append([]byte(xml.Header), body...)
			p := filepath.Join(dir, "junit.xml")
			if err := rundir.WriteFile(p, doc); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(b), tok) {
				t.Errorf("the value is not masked: %s", b)
			}
			d := xml.NewDecoder(strings.NewReader(string(b)))
			for {
				_, err := d.Token()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("junit.xml is no longer XML: %v: %s", err, b)
				}
			}
		})
	}
}
