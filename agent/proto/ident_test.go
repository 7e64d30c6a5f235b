package proto

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"testing"
)

func TestParseStatStartTicks(t *testing.T) {
	for _, tc := range []struct {
		name string
		stat string
		want uint64
		ok   bool
	}{
		// A real line (Linux 6.x, `sleep 300`).
		{"sleep", "4242 (sleep) S 4200 4242 4200 34816 4242 4194304 95 0 0 0 0 0 0 0 20 0 1 0 1234567 5779456 256 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0", 1234567, true},
		{"name with spaces and parens", "7 (a) b (c) S 1 7 7 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 99 0 0", 99, true},
		{"short", "7 (x) S 1 7 7 0", 0, false},
		{"no paren", "7 x S 1 7 7 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 99 0 0", 0, false},
		{"not a number", "7 (x) S 1 7 7 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 -5 0 0", 0, false},
		{"empty", "", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ParseStatStartTicks([]byte(tc.stat))
			if got != tc.want || ok != tc.ok {
				t.Errorf("= %d, %v; want %d, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

// TestParseStatStartTicksSelf checks the parser against this process's own
// stat, split independently (by field count from the start, this test's
// command name having no spaces).
func TestParseStatStartTicksSelf(t *testing.T) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Skip("no /proc")
	}
	f := bytes.Fields(b)
	if bytes.ContainsAny(f[1], " ") || len(f) < 22 {
		t.Skipf("unexpected stat %q", b)
	}
	want, _ := strconv.ParseUint(string(f[21]), 10, 64)
	got, ok := ParseStatStartTicks(b)
	if !ok || got != want {
		t.Errorf("ParseStatStartTicks(/proc/self/stat) = %d, %v; want %d", got, ok, want)
	}
}

// FuzzParseStatStartTicks: whatever the command name holds, the start time
// comes from the fields after it: a name with ')' and digits in it never
// changes the answer.
func FuzzParseStatStartTicks(f *testing.F) {
	f.Add("sleep", uint64(1234567))
	f.Add("a) 1 2 3 (b", uint64(99))
	f.Fuzz(func(t *testing.T, comm string, ticks uint64) {
		stat := fmt.Sprintf("42 (%s) S 1 42 42 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 %d 0 0 0", comm, ticks)
		got, ok := ParseStatStartTicks([]byte(stat))
		if ticks == 0 {
			if ok {
				t.Fatalf("start 0 accepted: %q", stat)
			}
			return
		}
		if !ok || got != ticks {
			t.Fatalf("ParseStatStartTicks(%q) = %d, %v; want %d", stat, got, ok, ticks)
		}
	})
}
