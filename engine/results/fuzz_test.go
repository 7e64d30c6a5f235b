package results

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// FuzzRender decodes arbitrary results.json content and renders it: the
// summary must not panic and junit.xml must stay well-formed XML with counts
// that match its cases, whatever a (hand-edited, truncated) file holds.
func FuzzRender(f *testing.F) {
	// Small seeds: the fuzzer's coverage-guided minimisation crawls on the
	// 20 KB fixture runs; these hold every kind of field they do.
	f.Add([]byte(`{"schema":1,"lab":"n","id":"t","started":"2026-11-20T02:00:00Z","duration":65.2,"status":"failed",` +
		`"workloads":[{"name":"bw","tool":"ib_write_bw","status":"failed","error":"e","hosts":["s","c"],"duration":2,` +
		`"expects":[{"condition":"result.bw_avg_gbps > 1","message":"m","held":false,"size":4096,"repeat":0,"value":"v"}],` +
		`"thresholds":{"bw_avg":15}},{"name":"t","tool":"tcp","status":"ok"}],` +
		`"samples":[{"metric":"bw_avg","value":0.07,"unit":"Gb/s","metadata":{"workload":"bw","tool":"ib_write_bw","size":65536,"repeat":1,"hosts":["s","c"]}},` +
		`{"metric":"bw_avg","value":0.06,"unit":"Gb/s","metadata":{"workload":"bw","tool":"ib_write_bw","size":65536,"repeat":0,"hosts":["s","c"]}},` +
		`{"metric":"lat_p99","value":3817.4,"unit":"usec","metadata":{"workload":"bw","size":2}},` +
		`{"metric":"tcp_bw","value":0.42,"unit":"Gb/s","metadata":{"workload":"t","tool":"tcp"}}]}`))
	f.Add([]byte(`{"lab":"x","status":"error","error":"\u0000<&>","workloads":[{"name":"w","status":"skipped"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		rp, err := Decode(b) // the one reader, as rlab show and the report read
		if err != nil {
			return
		}
		r := *rp
		sum := Summary(&r, "runs/x")
		if again := Summary(&r, "runs/x"); !bytes.Equal(sum, again) {
			t.Fatalf("two summaries of one run differ:\n%s\n---\n%s", sum, again)
		}
		if bytes.ContainsFunc(TerminalText(sum), func(c rune) bool { return c < 0x20 && c != '\n' || c == 0x7f }) {
			t.Fatalf("terminal text of the summary holds a control character")
		}
		c := Compare(&r, &r, CompareOptions{})
		if err := c.WriteText(io.Discard); err != nil {
			t.Fatal(err)
		}
		r.Dir = ""
		if err := WriteHeadline(io.Discard, &r); err != nil {
			t.Fatal(err)
		}
		x, err := JUnit(&r)
		if err != nil {
			t.Fatal(err)
		}
		if again, _ := JUnit(&r); !bytes.Equal(x, again) {
			t.Fatalf("two junit.xml of one run differ:\n%s\n---\n%s", x, again)
		}
		var back JUnitSuites
		if err := xml.Unmarshal(x, &back); err != nil {
			t.Fatalf("junit.xml does not parse: %v\n%s", err, x)
		}
		if back.Tests != len(back.Suites[0].Cases) {
			t.Fatalf("tests=%d but %d cases", back.Tests, len(back.Suites[0].Cases))
		}
	})
}

// FuzzTerminalText lays out arbitrary Markdown (a summary.md edited by hand
// or from another version) for a terminal: it must not panic, and nothing
// that moves the cursor may come out.
func FuzzTerminalText(f *testing.F) {
	f.Add([]byte("# t: **FAILED**\n\n| a | b |\n|---|---:|\n| `x\\|y` | 1 |\n- item [l](u)\n"))
	f.Add([]byte("| | |\n|---|---|\n| run | \x1b[2J |\n|\n|a|b|c|\n"))
	f.Fuzz(func(t *testing.T, md []byte) {
		out := TerminalText(md)
		if bytes.ContainsFunc(out, func(c rune) bool { return c < 0x20 && c != '\n' || c == 0x7f || c >= 0x80 && c < 0xa0 }) {
			t.Fatalf("control character in %q", out)
		}
	})
}

// FuzzDecode reads arbitrary results.json content, of schema 1 or 2, as
// ReadRun and the report do: what reads is of the current schema (every
// sample a tool or counter, no platforms left in a sample), and reading
// what it writes again gives the same run (the upgrade is done once).
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"schema":1,"lab":"n","status":"ok","samples":[` +
		`{"metric":"tcp_bw","value":0.04,"unit":"Gb/s","metadata":{"workload":"t","tool":"tcp","repeat":0,"hosts":["s","c"],` +
		`"platforms":[{"host":"s","kernel":"6.1"},{"kernel":"6.2"}],"extra":{"bytes":"14417920","server_bytes":"x","impair_loss":"1.5","impair":"loss"}}},` +
		`{"metric":"rcvd_seq_err","value":3,"unit":"count","metadata":{"workload":"w","repeat":0,"hosts":["s"],"extra":{"counter":"hw_counters","interval":"2"}}}]}`))
	f.Add([]byte(`{"schema":2,"lab":"n","platforms":{"s":{"kernel":"6.1"}},"workloads":[{"name":"w","tool":"tcp","status":"ok","duration":1,` +
		`"started":"2026-11-20T02:00:00+01:00"}],"samples":[{"metric":"m","value":1,"unit":"s","kind":"counter","metadata":{"workload":"w","tool":"t","repeat":0,"bytes":5}}]}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`null`)) // panicked in upgradeV1 (a nil map) before
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := Decode(b)
		if err != nil {
			return
		}
		if r.Schema > SchemaVersion {
			t.Fatalf("read a document of schema %d", r.Schema)
		}
		for _, s := range r.Samples {
			if s.Source != SourceTool && s.Source != SourceCounter {
				t.Fatalf("sample %q of kind %q", s.Metric, s.Source)
			}
		}
		r.Schema = SchemaVersion
		out, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("encode what was read: %v", err)
		}
		if bytes.Contains(out, []byte(`"platforms":[`)) {
			t.Fatalf("platforms left in a sample: %s", out)
		}
		again, err := Decode(out)
		if err != nil {
			t.Fatalf("read what was written: %v\n%s", err, out)
		}
		if d := cmp.Diff(r, again, cmpopts.EquateEmpty()); d != "" {
			t.Fatalf("read, written and read again differs (-first +again):\n%s", d)
		}
	})
}
