package results

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNewParseNote(t *testing.T) {
	long := strings.Repeat("é", MaxParseLineBytes) // 2 bytes a rune: cut on a rune boundary
	var many []string
	for i := range MaxParseLines + 5 {
		many = append(many, fmt.Sprintf("line %d", i))
	}
	tests := []struct {
		name          string
		unread, notes []string
		want          ParseNote
	}{
		{"nothing", nil, nil, ParseNote{}},
		{"deduplicated, blank dropped, trimmed", []string{" a ", "b", "a", ""}, []string{"n", "a"},
			ParseNote{Unread: []string{"a", "b"}, Notes: []string{"n"}}},
		{"a long line cut", []string{long}, nil, ParseNote{Unread: []string{strings.Repeat("é", MaxParseLineBytes/2) + "…"}}},
		{"capped, the rest counted", many, []string{"a note"}, ParseNote{Unread: many[:MaxParseLines], More: 6}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := NewParseNote(tc.unread, tc.notes, false)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
			if again := NewParseNote(got.Unread, got.Notes, false); !cmp.Equal(again.Unread, got.Unread) {
				t.Errorf("not stable: %q then %q", got.Unread, again.Unread)
			}
		})
	}
}

// parseRun is a run whose write_bw ran with perftest -b and printed lines
// the parser did not read, one of them hostile (terminal escapes), and a
// note of the parser's; a TCP baseline beside it.
func parseRun() *Run {
	meta := func(wl, tool string, size int64, rep int) Meta {
		return Meta{Workload: wl, Tool: tool, Size: size, Repeat: rep, Hosts: []string{"server", "client"}, Extra: map[string]string{"bidirectional": BothDirections}}
	}
	var ss []Sample
	for rep, v := range []float64{19.5, 20.5} {
		ss = append(ss, Sample{Metric: "bw_avg", Value: v, Unit: "Gb/s", Meta: meta("write_bw", "ib_write_bw", 65536, rep)},
			Sample{Metric: "msg_rate", Value: v / 524.288, Unit: "Mpps", Meta: meta("write_bw", "ib_write_bw", 65536, rep)})
	}
	ss = append(ss, Sample{Metric: "tcp_bw", Value: 9.4, Unit: "Gb/s", Meta: Meta{Workload: "tcp", Tool: "tcp", Hosts: []string{"server", "client"}}})
	unread := []string{"Device not recognized to implement inline feature. Disabling it", "evil \x1b[2J\x1b]0;owned\x07 line `x` | *y*"}
	return &Run{Lab: "parse", ID: "2026-11-26T120000Z", Status: RunOK, Duration: 12,
		Workloads: []Workload{
			{Name: "write_bw", Tool: "ib_write_bw", Status: StatusOK, Hosts: []string{"server", "client"}, Duration: 8,
				Parse: []ParseNote{
					{Size: 65536, Repeat: 0, Bidirectional: true, Unread: unread, Notes: []string{"BW peak reported as 0 (not measured on this side or in this mode): no bw_peak sample"}},
					{Size: 65536, Repeat: 1, Bidirectional: true, Unread: unread[:1], More: 2},
				}},
			{Name: "tcp", Tool: "tcp", Status: StatusOK, Hosts: []string{"server", "client"}, Duration: 3},
		},
		Samples: ss}
}

// TestParseNotesGolden: summary.md lists what the parser did not read under
// its workload and labels the bidirectional sum; the end-of-run table labels
// it and adds one NOTE line; host text is neutralised in both.
func TestParseNotesGolden(t *testing.T) {
	r := parseRun()
	sum := Summary(r, "")
	checkGolden(t, "summary-parse.golden.md", sum)
	var term bytes.Buffer
	if err := WriteHeadline(&term, r); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "headline-parse.golden.txt", term.Bytes())
	for name, b := range map[string][]byte{"summary.md": sum, "end-of-run table": term.Bytes(), "summary as text": TerminalText(sum)} {
		if bytes.ContainsAny(b, "\x1b\x07") {
			t.Errorf("%s carries a raw control character:\n%q", name, b)
		}
		if !bytes.Contains(b, []byte(BothDirections)) {
			t.Errorf("%s does not say the bandwidth is the %s", name, BothDirections)
		}
	}
	if n := strings.Count(term.String(), "NOTE "); n != 1 {
		t.Errorf("%d NOTE lines, want one for write_bw:\n%s", n, term.String())
	}

	// A class-sized run (compact summary) names them too.
	big := parseRun()
	for i := range compactAt {
		big.Workloads = append(big.Workloads, Workload{Name: fmt.Sprintf("x%d", i), Tool: "tcp", Status: StatusOK})
	}
	compact := string(Summary(big, ""))
	for _, want := range []string{"## Parser warnings", "- write_bw: the parser did not read 2 lines of ib_write_bw's output and noted 1 thing (first: `Device not recognized", "64 KiB (" + BothDirections + ")"} {
		if !strings.Contains(compact, want) {
			t.Errorf("compact summary lacks %q:\n%s", want, compact)
		}
	}
}

// TestParseNoticeRoutine: a duration-mode run's "no peak" note (every -D
// bandwidth run, the quickstart's) stays in results.json and summary.md but
// gets no line at the end of the run; a dropped value or an unread line does.
func TestParseNoticeRoutine(t *testing.T) {
	peak := "BW peak reported as 0 (not measured on this side or in this mode): no bw_peak sample"
	for _, tc := range []struct {
		name string
		note ParseNote
		want bool
	}{
		{"peak only", ParseNote{Notes: []string{peak}}, false},
		{"peak and bookworm's broken JSON", ParseNote{Notes: []string{peak, "perftest --out_json file is not valid JSON (perftest before 2024); read leniently"}}, false},
		{"peak and a dropped value", ParseNote{Notes: []string{peak, `result row "1048576 ...": column "BW average" is negative: dropped`}}, true},
		{"peak and an unread line", ParseNote{Notes: []string{peak}, Unread: []string{"something new"}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wl := Workload{Name: "write_bw", Tool: "ib_write_bw", Parse: []ParseNote{tc.note}}
			if got := parseNotice(wl) != ""; got != tc.want {
				t.Errorf("notice %q: want a notice %v", parseNotice(wl), tc.want)
			}
			if wl.ParseSummary() == "" {
				t.Error("the summary must still say it")
			}
		})
	}
}

// TestParseSectionNotesOnly: a workload with notes and no unread line says
// only what it has ("The parser noted 2 things", not "did not read 0 lines").
func TestParseSectionNotesOnly(t *testing.T) {
	var b bytes.Buffer
	parseSection(&b, Workload{Name: "w", Tool: "ib_write_bw", Parse: []ParseNote{{Notes: []string{"a", "b"}}}})
	if got := b.String(); !strings.HasPrefix(got, "The parser noted 2 things (") || strings.Contains(got, "did not read") {
		t.Errorf("section %q", got)
	}
}
