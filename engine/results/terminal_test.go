package results

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestTerminalTextGolden renders each fixture run's summary for a terminal.
func TestTerminalTextGolden(t *testing.T) {
	for _, rel := range []string{runBase, runFailed} {
		r := readFixture(t, rel)
		got := TerminalText(Summary(r, "runs/"+rel))
		checkGolden(t, "show-"+filepath.Base(rel)+".golden.txt", got)
	}
}

func TestTerminalText(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"heading", "# rlab run: x: **FAILED**\n", "rlab run: x: FAILED\n===================\n"},
		{"subheading", "## write_bw (ib_write_bw)\n", "write_bw (ib_write_bw)\n----------------------\n"},
		{"table aligned, right columns right", "| a | size |\n|---|---:|\n| long name | 4 KiB |\n| b | 2 B |\n",
			"a           size\nlong name  4 KiB\nb            2 B\n"},
		{"key-value table without header", "| | |\n|---|---|\n| run | `id` |\n", "run  id\n"},
		{"escapes undone", "| `a\\|b` | x \\* y &lt;z&gt; |\n|---|---|\n", "a|b  x * y <z>\n"},
		{"control characters escaped", "error: \x1b[2Jgone\r\n", `error: \x1b[2Jgone\r` + "\n"},
		{"link", "see [report](report.html)\n", "see report (report.html)\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(TerminalText([]byte(tc.in))); got != tc.want {
				t.Errorf("TerminalText(%q) =\n%q\nwant\n%q", tc.in, got, tc.want)
			}
		})
	}
}

func TestHumanValue(t *testing.T) {
	tests := []struct {
		v    float64
		unit string
		want string
	}{
		// The recorded unit, never rescaled: what an expect reads.
		{0.000327, "Mpps", "0.000327 Mpps"},
		{0.327, "Mpps", "0.327 Mpps"},
		{1.5, "Mpps", "1.5 Mpps"},
		{0.0755, "Gb/s", "0.0755 Gb/s"},
		{0.024956, "Gb/s", "0.02495 Gb/s"}, // cut, not rounded up
		{21.1, "Gb/s", "21.1 Gb/s"},
		{2500, "Mbit/s", "2500 Mbit/s"},
		{6638, "usec", "6638 usec"},
		{3.2, "usec", "3.2 usec"},
		{2048, "MiB/s", "2048 MiB/s"},
		{0, "Gb/s", "0 Gb/s"},
		{3, "count", "3 count"},
		{1.25, "s", "1.25 s"},
		{0.0006041, "s", "0.0006041 s"},
	}
	for _, tc := range tests {
		if got := HumanValue(tc.v, tc.unit); got != tc.want {
			t.Errorf("HumanValue(%v, %q) = %q, want %q", tc.v, tc.unit, got, tc.want)
		}
	}
	for n, want := range map[int64]string{512: "512 B", 268435456: "256 MiB", 1536: "1.5 KiB"} {
		if got := HumanBytes(n); got != want {
			t.Errorf("HumanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestTerminalTextFolds: each folded part names the flag of `rlab show`
// that unfolds it, and only that flag unfolds it.
func TestTerminalTextFolds(t *testing.T) {
	md := "<details class=\"students\"><summary>9 students ready</summary>\n\n| student |\n|---|\n| ana |\n\n</details>\n\n" +
		"<details><summary>Kernel counters: 2 moved</summary>\n\n| counter |\n|---|\n| rcvd_pkts |\n\n</details>\n\nend\n"
	tests := []struct {
		name string
		u    Unfold
		want string
	}{
		{"folded", Unfold{}, "9 students ready (rlab show --all)\n\nKernel counters: 2 moved (rlab show --counters)\n\nend\n"},
		{"students", Unfold{Students: true}, "9 students ready:\n\nstudent\nana\n\n\nKernel counters: 2 moved (rlab show --counters)\n\nend\n"},
		{"counters", Unfold{Counters: true}, "9 students ready (rlab show --all)\n\nKernel counters: 2 moved:\n\ncounter\nrcvd_pkts\n\n\nend\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(TerminalTextWith([]byte(md), tc.u)); got != tc.want {
				t.Errorf("TerminalTextWith(%+v) =\n%q\nwant\n%q", tc.u, got, tc.want)
			}
		})
	}
}

// TestTerminalTableWidthBounded: one long cell does not pad every row of
// its column to its width (SECURITY 120): a received summary.md of one
// 100 KB cell over 20,000 rows of two columns was 2 GB of output and
// 10 GB of memory in rlab show.
func TestTerminalTableWidthBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("| a | b |\n|---|--:|\n|" + strings.Repeat("x", 100_000) + "|b|\n")
	for range 20_000 {
		b.WriteString("|a|b|\n")
	}
	out := TerminalTextWith([]byte(b.String()), Unfold{})
	if len(out) > 2<<20 {
		t.Fatalf("%d bytes of output from %d of markdown", len(out), b.Len())
	}
	if !strings.Contains(string(out), strings.Repeat("x", 100_000)+"  b\n") {
		t.Errorf("the long cell is not written whole")
	}
	// A table within the bound is aligned as before.
	got := string(TerminalTextWith([]byte("| name | n |\n|---|--:|\n| alpha | 1 |\n| b | 22 |\n"), Unfold{}))
	if want := "name    n\nalpha   1\nb      22\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
