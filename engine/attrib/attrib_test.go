package attrib

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/rlab-dev/rlab/engine/termsafe"
)

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t
}

// TestLoadPorts: the port each tcp workload's server listened on comes
// from results.json's samples (results.ServerPortExtra), once each.
func TestLoadPorts(t *testing.T) {
	r, err := Load("../../testdata/attrib/tcpport")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]uint16{}
	for _, w := range r.Workloads {
		got[w.Name] = w.Ports
	}
	want := map[string][]uint16{"write_bw": nil, "tcp_small": {40001}, "tcp_big": {40002}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("workloads' ports (-want +got):\n%s", d)
	}
}

// TestLoadRecordedRun reads a real run's directory: the windows from its
// events.jsonl and the QPNs its perftest and pingpong logs printed.
func TestLoadRecordedRun(t *testing.T) {
	r, err := Load("../../testdata/report/run")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]uint32{}
	for _, w := range r.Workloads {
		got[w.Name] = w.QPNs
		if w.Start.IsZero() || w.End.Before(w.Start) {
			t.Errorf("%s: window %v .. %v", w.Name, w.Start, w.End)
		}
	}
	want := map[string][]uint32{
		"write_bw": {0x11, 0x1a}, "read_bw": {0x13}, "write_lat": {0x12},
		"pingpong": {0x18}, "tcp": nil,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("workloads' QPNs (-want +got):\n%s", d)
	}
	if w := r.Workloads[0]; w.Name != "write_bw" || !w.Start.Equal(at("2026-11-25T21:03:42.418Z")) || !w.End.Equal(at("2026-11-25T21:04:04.318Z")) {
		t.Errorf("first workload %+v", w)
	}
}

func TestName(t *testing.T) {
	r := &Run{Workloads: []Workload{
		{Name: "a", Start: at("2026-01-01T00:00:10Z"), End: at("2026-01-01T00:00:20Z"), QPNs: []uint32{0x11}},
		{Name: "b", Start: at("2026-01-01T00:00:20.5Z"), End: at("2026-01-01T00:00:30Z"), QPNs: []uint32{0x11, 0x12}},
		{Name: "c", Start: at("2026-01-01T00:00:25Z"), End: at("2026-01-01T00:00:35Z"), Ports: []uint16{40001, 40002}},
		{Name: "e", Start: at("2026-01-01T00:00:25Z"), End: at("2026-01-01T00:00:35Z"), Ports: []uint16{40003}},
		{Name: "f", Start: at("2026-01-01T00:02:00Z"), End: at("2026-01-01T00:02:10Z"), Ports: []uint16{40002}},
		{Name: "d", Start: at("2026-01-01T00:01:00Z"), End: at("2026-01-01T00:01:10Z")},
	}}
	for _, tc := range []struct {
		name string
		c    Conn
		want Match
	}{
		{"unique QPN, outside every window", Conn{First: at("2026-01-01T05:00:00Z"), QPNs: []uint32{0x12}},
			Match{[]string{"b"}, "QPN 0x000012 in its output", 0}},
		{"shared QPN, time picks", Conn{First: at("2026-01-01T00:00:12Z"), QPNs: []uint32{0x11}},
			Match{[]string{"a"}, "QPN 0x000011 in its output, time window", 0}},
		{"shared QPN, no window", Conn{First: at("2026-01-01T05:00:00Z"), QPNs: []uint32{0x11}},
			Match{[]string{"a", "b"}, "QPN 0x000011 in its output (no window holds it)", 0}},
		{"window only", Conn{First: at("2026-01-01T00:01:05Z"), QPNs: []uint32{0x99}},
			Match{[]string{"d"}, "time window", 0}},
		{"parallel windows", Conn{First: at("2026-01-01T00:00:26Z")},
			Match{[]string{"b", "c", "e"}, "time window", 0}},
		{"port picks in parallel windows", Conn{First: at("2026-01-01T00:00:26Z"), Ports: []uint16{51234, 40003}},
			Match{[]string{"e"}, "port 40003 in its results", 0}},
		{"unique port, outside every window", Conn{First: at("2026-01-01T05:00:00Z"), Ports: []uint16{40001, 51234}},
			Match{[]string{"c"}, "port 40001 in its results", 0}},
		{"shared port, time picks", Conn{First: at("2026-01-01T00:02:01Z"), Ports: []uint16{51234, 40002}},
			Match{[]string{"f"}, "port 40002 in its results, time window", 0}},
		{"port nobody recorded", Conn{First: at("2026-01-01T00:01:05Z"), Ports: []uint16{51234, 18515}},
			Match{[]string{"d"}, "time window", 0}},
		{"slack", Conn{First: at("2026-01-01T00:01:10.5Z")},
			Match{[]string{"d"}, "time window ±1s", 0}},
		{"CM began inside, first packet after", Conn{Began: at("2026-01-01T00:00:59.9Z"), First: at("2026-01-01T00:01:12Z")},
			Match{[]string{"d"}, "time window ±1s", 0}},
		{"long-lived QP1 spans several", Conn{First: at("2026-01-01T00:00:11Z"), Last: at("2026-01-01T00:01:01Z"), QPNs: []uint32{1}},
			Match{[]string{"a", "b", "c", "e", "d"}, "time window", 0}},
		{"nothing", Conn{First: at("2026-01-01T03:00:00Z")}, Match{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, r.Name(tc.c)); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

// TestLoadHostile: a received run directory whose events.jsonl is a
// symlink out of it, whose results.json lists logs outside it, and whose
// names carry control characters gives notes and safe names, never the
// outside files' contents.
func TestLoadHostile(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte(" local address: LID 0000 QPN 0x00beef PSN 0x1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	evOutside := filepath.Join(outside, "events.jsonl")
	if err := os.WriteFile(evOutside, []byte(`{"time":"2026-01-01T00:00:00Z","type":"step.start","workload":"stolen"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		events    string // "" none; "LINK" a symlink out
		results   string
		wantNames []string
		wantNote  string
	}{
		{"no events, no results", "", "", nil, "the run has no events.jsonl"},
		{"events a symlink out", "LINK", "", nil, "leaves the run directory"},
		{"garbage lines and a long line", "not json\n{\"time\":\"x\"}\n" + strings.Repeat("a", maxEventLine+10) + "\n" +
			`{"time":"2026-01-01T00:00:00Z","type":"step.start","workload":"w"}` + "\n", "", []string{"w"}, "3 lines of events.jsonl are not events"},
		{"control characters in names", `{"time":"2026-01-01T00:00:00Z","type":"step.start","workload":"w\u001b[2J\nfake"}` + "\n", "", []string{`w\x1b[2J\nfake`}, ""},
		{"logs outside the run", `{"time":"2026-01-01T00:00:00Z","type":"step.start","workload":"w"}` + "\n",
			`{"schema":2,"lab":"l","id":"x","workloads":[{"name":"w","tool":"ib_write_bw","logs":["../` + filepath.Base(outside) + `/secret.txt","` + secret + `"]}],"samples":[]}`,
			[]string{"w"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			switch tc.events {
			case "":
			case "LINK":
				if err := os.Symlink(evOutside, filepath.Join(dir, "events.jsonl")); err != nil {
					t.Fatal(err)
				}
			default:
				if err := os.WriteFile(filepath.Join(dir, "events.jsonl"), []byte(tc.events), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if tc.results != "" {
				if err := os.WriteFile(filepath.Join(dir, "results.json"), []byte(tc.results), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			r, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, w := range r.Workloads {
				names = append(names, w.Name)
				if len(w.QPNs) > 0 {
					t.Errorf("%s: QPNs %x read from outside the run", w.Name, w.QPNs)
				}
			}
			if d := cmp.Diff(tc.wantNames, names); d != "" {
				t.Errorf("names (-want +got):\n%s", d)
			}
			notes := strings.Join(r.Notes, "\n")
			if tc.wantNote != "" && !strings.Contains(notes, tc.wantNote) {
				t.Errorf("notes %q lack %q", notes, tc.wantNote)
			}
			assertSafe(t, r)
		})
	}
}

func assertSafe(t *testing.T, r *Run) {
	t.Helper()
	for _, w := range r.Workloads {
		if termsafe.Line(w.Name) != w.Name || termsafe.Line(w.Tool) != w.Tool {
			t.Errorf("workload %q (tool %q) is not safe to print", w.Name, w.Tool)
		}
	}
	for _, n := range r.Notes {
		if termsafe.Line(n) != n {
			t.Errorf("note %q is not safe to print", n)
		}
	}
}

// FuzzLoad: whatever events.jsonl and results.json hold, Load returns
// without error, every name and note prints as itself, every window is
// ordered, and a workload is named only by what the files say.
func FuzzLoad(f *testing.F) {
	ev, _ := os.ReadFile("../../testdata/report/run/events.jsonl")
	res, _ := os.ReadFile("../../testdata/report/run/results.json")
	f.Add(ev, res)
	f.Add([]byte(`{"time":"2026-01-01T00:00:00Z","type":"step.end","workload":"w"}`), []byte(`{"workloads":[{"name":"w","logs":["/etc/passwd"]}]}`))
	f.Add([]byte("\x00\n\n{"), []byte("null"))
	f.Fuzz(func(t *testing.T, events, results []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "events.jsonl"), events, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "results.json"), results, 0o600); err != nil {
			t.Fatal(err)
		}
		r, err := Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		assertSafe(t, r)
		for _, w := range r.Workloads {
			if w.End.Before(w.Start) {
				t.Errorf("%s: end %v before start %v", w.Name, w.End, w.Start)
			}
			if w.Name == "" && !strings.Contains(string(events)+string(results), `""`) && !strings.Contains(string(events)+string(results), `workload`) {
				t.Errorf("an empty name from nowhere")
			}
		}
		// Naming any connection is total: a match names only loaded workloads.
		m := r.Name(Conn{First: time.Unix(0, 0), QPNs: []uint32{1, 0x11}})
		for _, n := range m.Workloads {
			found := false
			for _, w := range r.Workloads {
				found = found || w.Name == n
			}
			if !found {
				t.Errorf("match names %q, not a workload", n)
			}
		}
	})
}

// TestLoadLogListedOften: a tool log results.json lists again and again
// (in every workload, several times each, spelled differently) is read
// once (issue 24 attack round): each listing read up to 1 MiB of it
// again, so a received results.json of a few MB held rlab report and
// rlab pcap RUN for hours. Every workload still gets the log's QPN.
func TestLoadLogListedOften(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "hosts", "a", "logs"), 0o700); err != nil {
		t.Fatal(err)
	}
	log := " local address: LID 0000 QPN 0x00beef PSN 0x1\n" + strings.Repeat(strings.Repeat("x", 99)+"\n", (maxLogRead/100)+10)
	if err := os.WriteFile(filepath.Join(dir, "hosts", "a", "logs", "w.txt"), []byte(log), 0o600); err != nil {
		t.Fatal(err)
	}
	const n = 3000
	var ws []string
	for i := range n {
		ws = append(ws, fmt.Sprintf(`{"name":"w%d","tool":"ib_write_bw","started":"2026-01-01T00:00:00Z","finished":"2026-01-01T00:00:01Z","logs":["hosts/a/logs/w.txt","hosts/a/logs/./w.txt","hosts//a/logs/w.txt"]}`, i))
	}
	doc := `{"schema":2,"lab":"l","id":"x","workloads":[` + strings.Join(ws, ",") + `],"samples":[]}`
	if err := os.WriteFile(filepath.Join(dir, "results.json"), []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	r, err := Load(dir)
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Workloads) != n {
		t.Fatalf("%d workloads, want %d", len(r.Workloads), n)
	}
	for _, w := range r.Workloads {
		if len(w.QPNs) != 1 || w.QPNs[0] != 0xbeef {
			t.Fatalf("workload %s: QPNs %x, want [beef]", w.Name, w.QPNs)
		}
	}
	// Read once: milliseconds; 9,000 times: minutes.
	if took > 10*time.Second {
		t.Errorf("Load took %s for one 1 MiB log listed %d times", took, 3*n)
	}
}

// TestLoadLogLinkedOften: promise 84's read-once holds when the one log is
// named by many files (symlinks inside the run directory, hard links), one
// per workload: each was read as a log of its own.
func TestLoadLogLinkedOften(t *testing.T) {
	dir := t.TempDir()
	logs := filepath.Join(dir, "hosts", "a", "logs")
	if err := os.MkdirAll(logs, 0o700); err != nil {
		t.Fatal(err)
	}
	log := " local address: LID 0000 QPN 0x00beef PSN 0x1\n" + strings.Repeat(strings.Repeat("x", 99)+"\n", (maxLogRead/100)+10)
	if err := os.WriteFile(filepath.Join(logs, "w.txt"), []byte(log), 0o600); err != nil {
		t.Fatal(err)
	}
	const n = 2000
	var ws []string
	for i := range n {
		name := fmt.Sprintf("w%d.txt", i)
		var err error
		if i%2 == 0 {
			err = os.Symlink("w.txt", filepath.Join(logs, name))
		} else {
			err = os.Link(filepath.Join(logs, "w.txt"), filepath.Join(logs, name))
		}
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, fmt.Sprintf(`{"name":"w%d","tool":"ib_write_bw","started":"2026-01-01T00:00:00Z","finished":"2026-01-01T00:00:01Z","logs":["hosts/a/logs/%s"]}`, i, name))
	}
	doc := `{"schema":2,"lab":"l","id":"x","workloads":[` + strings.Join(ws, ",") + `],"samples":[]}`
	if err := os.WriteFile(filepath.Join(dir, "results.json"), []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	r, err := Load(dir)
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range r.Workloads {
		if len(w.QPNs) != 1 || w.QPNs[0] != 0xbeef {
			t.Fatalf("workload %s: QPNs %x, want [beef]", w.Name, w.QPNs)
		}
	}
	if len(r.Workloads) != n || took > 5*time.Second {
		t.Errorf("%d workloads named in %s, want %d within 5s (one 1 MiB log named by %d files)", len(r.Workloads), took.Round(time.Millisecond), n, n)
	}
}

// TestNameBounded: a received run whose workloads all fit every
// connection (thousands of windows holding its start, or starting within
// a long-lived flow, or sharing its QPN) names each connection after at
// most MaxMatchNames of them, each cut to MaxShownName bytes, and counts
// the rest. Before, every connection listed every workload (a capture of
// 2,000 flows and a run of 2,000 workloads: 50 MB of report.html and
// 22 s, cubic in the two, through a look-up per name added), and a
// workload name of a megabyte was repeated whole in each.
func TestNameBounded(t *testing.T) {
	const n = 3000
	t0 := at("2026-01-01T00:00:00Z")
	long := strings.Repeat("é", 1<<19) // a megabyte, cut on a rune boundary
	r := &Run{}
	for i := range n {
		name := fmt.Sprintf("w%05d", i)
		if i < 2*MaxMatchNames {
			name += long // the names listed
		}
		w := Workload{Name: name, Start: t0.Add(time.Duration(i+1) * time.Millisecond), End: t0.Add(time.Hour), QPNs: []uint32{0x11}}
		if i == 0 {
			w.Start = t0
		}
		r.Workloads = append(r.Workloads, w)
	}
	for _, tc := range []struct {
		name string
		c    Conn
	}{
		{"long-lived flow over every window", Conn{First: t0, Last: t0.Add(time.Minute)}},
		{"every window holds it", Conn{First: t0.Add(time.Minute)}},
		{"every workload printed its QPN", Conn{First: t0.Add(2 * time.Hour), QPNs: []uint32{0x11}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := r.Name(tc.c)
			if len(m.Workloads) != MaxMatchNames || m.More != n-MaxMatchNames {
				t.Fatalf("%d names and %d more, want %d and %d", len(m.Workloads), m.More, MaxMatchNames, n-MaxMatchNames)
			}
			for _, w := range m.Workloads {
				if len(w) > MaxShownName+len("…") || !strings.HasSuffix(w, "…") || !strings.HasPrefix(w, "w0") || !utf8.ValidString(w) {
					t.Fatalf("name of %d bytes shown: %.40q…", len(w), w)
				}
			}
			if got := m.Name(); len(got) > MaxMatchNames*(MaxShownName+5)+40 || !strings.HasSuffix(got, fmt.Sprintf(" and %d more", n-MaxMatchNames)) {
				t.Errorf("Name() is %d bytes, ending %q", len(got), got[max(0, len(got)-40):])
			}
		})
	}
	for _, w := range r.Windows(t0, t0.Add(time.Minute)) {
		if len(w.Name) > MaxShownName+len("…") {
			t.Fatalf("window of a %d-byte name", len(w.Name))
		}
	}
}

// TestListedBounded: a capture's summary lists at most MaxListed of the
// run's workloads and says how many it left out, without changing the
// run; a run with fewer is listed whole. Before, `rlab pcap RUN` listed
// every workload again for every capture: 1,001 one-packet captures
// beside 10,000 workloads printed 442 MB of text and 1.6 GB of -json.
func TestListedBounded(t *testing.T) {
	t0 := at("2026-01-01T00:00:00Z")
	r := &Run{Notes: []string{"a note"}}
	for i := range MaxListed + 5 {
		r.Workloads = append(r.Workloads, Workload{Name: fmt.Sprintf("w%05d", i), Start: t0, End: t0.Add(time.Second)})
	}
	var b strings.Builder
	if err := WriteText(&b, r, nil, t0); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if n := strings.Count(out, "\n  w0"); n != MaxListed {
		t.Errorf("%d workloads listed, want %d", n, MaxListed)
	}
	if !strings.Contains(out, fmt.Sprintf("only %d of the run's %d workloads are listed (the first ones)", MaxListed, MaxListed+5)) {
		t.Errorf("no note of the workloads left out:\n%.300s", out[len(out)-300:])
	}
	if len(r.Workloads) != MaxListed+5 || len(r.Notes) != 1 {
		t.Errorf("Listed changed the run: %d workloads, notes %q", len(r.Workloads), r.Notes)
	}
	small := &Run{Workloads: r.Workloads[:3]}
	if small.Listed(time.Time{}, time.Time{}) != small {
		t.Errorf("a run of 3 workloads is not listed whole")
	}
}

// TestListedCaptureSpanFirst: past MaxListed, the workloads whose windows
// overlap the capture are listed before the first others (a class run of
// 1,000 students has 3,000 workloads: student 900's capture must list
// student 900's), in the run's order. Before, the first 1,000 were listed
// whatever the capture.
func TestListedCaptureSpanFirst(t *testing.T) {
	t0 := at("2026-01-01T00:00:00Z")
	r := &Run{}
	for i := range 3000 {
		s := t0.Add(time.Duration(i) * time.Second)
		r.Workloads = append(r.Workloads, Workload{Name: fmt.Sprintf("w%05d", i), Start: s, End: s.Add(time.Second / 2)})
	}
	first, last := t0.Add(2700*time.Second), t0.Add(2702*time.Second+time.Second/4)
	l := r.Listed(first, last)
	if len(l.Workloads) != MaxListed {
		t.Fatalf("%d listed, want %d", len(l.Workloads), MaxListed)
	}
	var names []string
	for _, w := range l.Workloads {
		names = append(names, w.Name)
	}
	for _, want := range []string{"w02700", "w02701", "w02702", "w00000", "w00996"} {
		if !slices.Contains(names, want) {
			t.Errorf("%s not listed", want)
		}
	}
	if slices.Contains(names, "w00997") || slices.Contains(names, "w02703") {
		t.Errorf("more than the span's three and the first 997 listed")
	}
	if !slices.IsSorted(names) {
		t.Errorf("not in the run's order")
	}
	if !strings.Contains(strings.Join(l.Notes, "\n"), "those in the capture's span first") {
		t.Errorf("notes %q", l.Notes)
	}
}
