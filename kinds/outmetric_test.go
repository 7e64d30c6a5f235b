package kinds

import (
	"bytes"
	"strings"
	"testing"
)

// TestReadOutputMetric: a value group reads the last matching line's number;
// without one the metric counts matching lines; a pattern that never matched,
// a value that is no number and a bad pattern are errors naming the metric
// and the pattern.
func TestReadOutputMetric(t *testing.T) {
	out := "listening on 7471\nRDMA_WRITE complete\nRDMA client wrote 1073741824 bytes in 41.2 s (24.85 MiB/s)\r\nRDMA_WRITE complete\nin 2 s (30 MiB/s)\n"
	for _, tc := range []struct {
		name, pattern string
		want          float64
		matched       int
		err           string
	}{
		{"count", "RDMA_WRITE complete", 2, 2, ""},
		{"value, last line wins", `in [0-9.]+ s \((?P<value>[0-9.]+) MiB/s\)`, 30, 2, ""},
		{"anchored per line", `^RDMA_WRITE complete$`, 2, 2, ""},
		{"never matched", "RDMA_READ complete", 0, 0, `metric "m": pattern "RDMA_READ complete" matched no line of the output`},
		{"not a number", `^(?P<value>RDMA_WRITE) complete`, 0, 1, `whose value "RDMA_WRITE" is not a number`},
		{"value group unmatched", `listening on (?P<value>x)?`, 0, 1, `matched "listening on 7471" without its value group`},
		{"bad pattern", `(`, 0, 0, `metric "m": pattern "(": error parsing regexp`},
		{"value twice", `(?P<value>\d+) (?P<value>\d+)`, 0, 0, "appears 2 times"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, n, err := ReadOutputMetric(OutputMetric{Name: "m", Pattern: tc.pattern}, []byte(out))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if v != tc.want || n != tc.matched {
				t.Errorf("= %v, %d matched; want %v, %d", v, n, tc.want, tc.matched)
			}
		})
	}
	if u := (OutputMetric{Pattern: "x"}).UnitOf(); u != CountUnit {
		t.Errorf("count unit %q", u)
	}
	if u := (OutputMetric{Pattern: "(?P<value>x)", Unit: "MiB/s"}).UnitOf(); u != "MiB/s" {
		t.Errorf("unit %q", u)
	}
}

// FuzzReadOutputMetric: for any pattern and output, reading never panics; a
// count equals the number of lines the pattern matches on its own; a
// success means some line matched, and a failure with no line matched says
// so naming the pattern.
func FuzzReadOutputMetric(f *testing.F) {
	f.Add("RDMA_WRITE complete", "RDMA_WRITE complete\nx\n")
	f.Add(`\((?P<value>[0-9.]+) MiB/s\)`, "wrote in 1 s (24.85 MiB/s)\n")
	f.Add(`(?P<value>.*)`, "\n\r\n")
	f.Fuzz(func(t *testing.T, pattern, out string) {
		if len(pattern) > 200 || len(out) > 4096 {
			return
		}
		m := OutputMetric{Name: "m", Pattern: pattern}
		v, n, err := ReadOutputMetric(m, []byte(out))
		re, cerr := CompileOutputMetric(pattern)
		if cerr != nil {
			if err == nil {
				t.Fatalf("bad pattern %q accepted", pattern)
			}
			return
		}
		lines := 0
		for _, l := range bytes.Split([]byte(out), []byte("\n")) {
			if re.Match(bytes.TrimSuffix(l, []byte("\r"))) {
				lines++
			}
		}
		if n != lines && !(err != nil && n < lines) {
			t.Fatalf("matched %d, counted %d lines (err %v)", n, lines, err)
		}
		if err == nil && n == 0 {
			t.Fatalf("success with no line matched")
		}
		if lines == 0 && (err == nil || !strings.Contains(err.Error(), "matched no line")) {
			t.Fatalf("no line matched but err = %v", err)
		}
		if err == nil && re.SubexpIndex(ValueGroup) < 0 && v != float64(lines) {
			t.Fatalf("count %v, want %d", v, lines)
		}
	})
}

// TestReadOutputMetricErrorBounded: the output is the host's (up to a reply
// line, 8 MiB) and a failed metric's error is the trial's, kept for the
// run; the line it names and the value are quoted bounded (SECURITY 152:
// a line of a megabyte made a 2 MB error before).
func TestReadOutputMetricErrorBounded(t *testing.T) {
	mib := strings.Repeat("x", 1<<20)
	for _, tc := range []struct {
		name, pattern, out, want string
	}{
		{"not a number", `^rate: (?P<value>.*)$`, "rate: " + mib + "\n", "is not a number"},
		{"value group unmatched", `^rate(?P<value>:\d+)?`, "rate" + mib + "\n", "without its value group"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := ReadOutputMetric(OutputMetric{Name: "m", Pattern: tc.pattern}, []byte(tc.out))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %.200v, want %q", err, tc.want)
			}
			if n := len(err.Error()); n > 4096 {
				t.Errorf("an error of %d bytes, want at most 4 KiB", n)
			}
		})
	}
}
