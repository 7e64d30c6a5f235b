package results

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHeadlineGolden renders the end-of-run table of each fixture run.
func TestHeadlineGolden(t *testing.T) {
	for _, rel := range []string{runBase, runFailed} {
		var buf bytes.Buffer
		if err := WriteHeadline(&buf, readFixture(t, rel)); err != nil {
			t.Fatal(err)
		}
		checkGolden(t, "headline-"+filepath.Base(rel)+".golden.txt", buf.Bytes())
	}
}

func TestKeyNumbers(t *testing.T) {
	s := func(metric string, v float64, unit string, size int64, rep int) Sample {
		return Sample{Metric: metric, Value: v, Unit: unit, Meta: Meta{Workload: "w", Size: size, Repeat: rep}}
	}
	tests := []struct {
		name    string
		samples []Sample
		want    string
	}{
		{"bandwidth per size and message rate", []Sample{s("bw_avg", 1.2, "Gb/s", 4096, 0), s("bw_avg", 21.1, "Gb/s", 1<<20, 0),
			s("msg_rate", 0.327, "Mpps", 4096, 0), s("msg_rate", 0.0025, "Mpps", 1<<20, 0)}, "4 KiB 1.2 Gb/s, 1 MiB 21.1 Gb/s; 0.327 Mpps at 4 KiB"},
		{"many sizes elided", []Sample{s("bw_avg", 1, "Gb/s", 2, 0), s("bw_avg", 2, "Gb/s", 4, 0), s("bw_avg", 3, "Gb/s", 8, 0),
			s("bw_avg", 4, "Gb/s", 16, 0), s("bw_avg", 5, "Gb/s", 32, 0)}, "2 B 1 Gb/s, …, 16 B 4 Gb/s, 32 B 5 Gb/s"},
		{"latency", []Sample{s("lat_typical", 658.4, "usec", 2, 0), s("lat_p99", 3817, "usec", 2, 0)}, "typical 658.4 usec, p99 3817 usec at 2 B"},
		{"pingpong", []Sample{s("pp_bw", 1500, "Mbit/s", 4096, 0), s("pp_lat", 21.8, "usec/iter", 4096, 0)}, "1500 Mbit/s, 21.8 usec/iter at 4 KiB"},
		{"tcp, one metric for one quantity", []Sample{s("tcp_bw", 0.42, "Gb/s", 0, 0), s("tcp_bw_mib", 50.07, "MiB/s", 0, 0)}, "0.42 Gb/s"},
		{"exec", []Sample{s("exit_code", 0, "code", 0, 0), s("duration", 0.21, "s", 0, 0)}, "exit 0; in 0.21 s"},
		{"repeats", []Sample{s("tcp_bw", 0.4, "Gb/s", 0, 0), s("tcp_bw", 0.42, "Gb/s", 0, 1), s("tcp_bw", 0.5, "Gb/s", 0, 2)}, "0.42 Gb/s (median of 3)"},
		{"nothing", nil, "–"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := KeyNumbers(Workload{Name: "w"}, Aggregate(tc.samples)); got != tc.want {
				t.Errorf("KeyNumbers = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestHeadlineExecOutput: an exec workload's output is shown, its first
// lines, made printable.
func TestHeadlineExecOutput(t *testing.T) {
	dir := t.TempDir()
	logs := filepath.Join(dir, "hosts", "h0", "logs")
	os.MkdirAll(logs, 0o755)
	os.WriteFile(filepath.Join(logs, "hi.stdout"), []byte("hello\x1b[2J\n2\n3\n4\n5\n6\n7\n"), 0o644)
	os.WriteFile(filepath.Join(logs, "hi.stderr"), []byte("warn\n"), 0o644)
	r := &Run{Dir: dir, Workloads: []Workload{{Name: "hi", Tool: "exec", Status: StatusOK, Hosts: []string{"h0"},
		Logs: []string{"hosts/h0/logs/hi.stdout", "hosts/h0/logs/hi.stderr"}}}}
	var buf bytes.Buffer
	if err := WriteHeadline(&buf, r); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, w := range []string{"hi stdout (hosts/h0/logs/hi.stdout):\n  hello\\x1b[2J\n  2\n", "  5\n  … (the rest in hosts/h0/logs/hi.stdout)"} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	if strings.Contains(out, "warn") || strings.Contains(out, "\x1b") {
		t.Errorf("stderr of an ok exec, or a control character, shown:\n%s", out)
	}
}

// TestReadmeOutputExamples: the README's examples of rlab run's end table
// and of rlab compare are what the code prints (the goldens).
func TestReadmeOutputExamples(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, golden := range []string{"headline-2026-11-20T020000Z.golden.txt", "compare-noise.golden.txt"} {
		b, err := os.ReadFile(filepath.Join("testdata", golden))
		if err != nil {
			t.Fatal(err)
		}
		// The table of the golden (compare's: its header and rows).
		want := string(b)
		if i := strings.Index(want, "WORKLOAD"); i >= 0 {
			want = want[i:]
		}
		if j := strings.Index(want, "\n\n"); j >= 0 {
			want = want[:j+1]
		}
		if !strings.Contains(string(readme), want) {
			t.Errorf("README.md lacks the output of %s:\n%s", golden, want)
		}
	}
}

// TestKeyNumbersDeclared: a program's or exec's own metric blocks head its
// result in the order the lab declares them (results.json's metrics), at
// most kinds.DeclaredHeadlineMax, a count as a bare number and a sweep at
// its largest size; with none of them measured (a failed workload) the
// result falls back to exit code and time, and a tool whose View is not
// Declared ignores metrics it does not record.
func TestKeyNumbersDeclared(t *testing.T) {
	s := func(metric string, v float64, unit string, size int64) Sample {
		return Sample{Metric: metric, Value: v, Unit: unit, Meta: Meta{Workload: "w", Size: size}}
	}
	common := []Sample{s("exit_code", 0, "code", 0), s("duration", 1.5, "s", 0)}
	tests := []struct {
		name     string
		tool     string
		declared []string
		samples  []Sample
		want     string
	}{
		{"declaration order, not name order", "program", []string{"write_ok", "mibps"},
			append([]Sample{s("mibps", 24.85, "MiB/s", 0), s("write_ok", 1, "lines", 0)}, common...), "write_ok 1; mibps 24.85 MiB/s"},
		{"the first three", "exec", []string{"d", "c", "b", "a"},
			[]Sample{s("a", 1, "s", 0), s("b", 2, "s", 0), s("c", 3, "s", 0), s("d", 4, "s", 0)}, "d 4 s; c 3 s; b 2 s"},
		{"a sweep at its largest size", "program", []string{"mibps"},
			[]Sample{s("mibps", 10, "MiB/s", 4096), s("mibps", 20, "MiB/s", 1<<20)}, "mibps 20 MiB/s at 1 MiB"},
		{"one not measured", "program", []string{"lost", "mibps"}, []Sample{s("mibps", 2, "MiB/s", 0)}, "mibps 2 MiB/s"},
		{"none measured: exit and time", "program", []string{"mibps"}, common, "exit 0; in 1.5 s"},
		{"not a declared tool", "tcp", []string{"mibps"}, append([]Sample{s("mibps", 2, "MiB/s", 0)}, common...), "exit 0; in 1.5 s"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wl := Workload{Name: "w", Tool: tc.tool, Metrics: tc.declared}
			if got := KeyNumbers(wl, Aggregate(tc.samples)); got != tc.want {
				t.Errorf("KeyNumbers = %q, want %q", got, tc.want)
			}
		})
	}
}
