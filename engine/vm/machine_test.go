package vm

import (
	"bytes"
	"strings"
	"testing"
)

func TestParseMemAvailable(t *testing.T) {
	tests := []struct {
		in      string
		want    int64
		wantErr string
	}{
		{"MemTotal:        8029848 kB\nMemFree:          310252 kB\nMemAvailable:    3456789 kB\nBuffers:  1 kB\n", 3456789 << 10, ""},
		{"MemAvailable: 0 kB\n", 0, ""},
		{"MemTotal: 8029848 kB\n", 0, "no MemAvailable line"},
		{"MemAvailable: 12 MB\n", 0, "not \"N kB\""},
		{"MemAvailable: -1 kB\n", 0, "not a size"},
		{"MemAvailable: 99999999999999999999 kB\n", 0, "not a size"},
	}
	for _, tt := range tests {
		got, err := parseMemAvailable([]byte(tt.in))
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%q: err %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%q: %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
}

// FuzzParseMemAvailable: whatever /proc/meminfo holds, the answer is a
// non-negative byte count taken from a MemAvailable line, or an error.
func FuzzParseMemAvailable(f *testing.F) {
	f.Add([]byte("MemTotal: 8029848 kB\nMemAvailable:    3456789 kB\n"))
	f.Add([]byte("MemAvailable: 1 kB"))
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := parseMemAvailable(b)
		if err != nil {
			return
		}
		if n < 0 || n%1024 != 0 {
			t.Fatalf("MemAvailable %d bytes: negative or not whole KiB", n)
		}
		if !bytes.Contains(b, []byte("MemAvailable:")) {
			t.Fatalf("%d bytes read from input without a MemAvailable line", n)
		}
	})
}
