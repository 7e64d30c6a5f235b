package lab

import (
	"strings"
	"testing"
)

// TestTermWriter: cmd/rlab's output writer masks a value cut across two
// writes (and one with a line break in it, written a line at a time),
// and holds back nothing but what may start a value: a progress bar's
// frame, written with '\r', is on the terminal when it is written.
func TestTermWriter(t *testing.T) {
	const tok = "tok-s3cr3t"
	const pem = "-----BEGIN KEY-----\nAAAAB3NzaC1yc2E\n-----END KEY-----"
	for _, tc := range []struct {
		name   string
		writes []string
		now    string // on w after the writes, before Flush
		all    string // after Flush
	}{
		{"whole", []string{"a " + tok + " b\n"}, "a (sensitive) b\n", "a (sensitive) b\n"},
		{"cut across writes", []string{"a tok-s3", "cr3t b\n"}, "a (sensitive) b\n", "a (sensitive) b\n"},
		{"a line at a time", []string{"key: -----BEGIN KEY-----\n", "AAAAB3NzaC1yc2E\n", "-----END KEY-----\n"}, "key: (sensitive)\n", "key: (sensitive)\n"},
		{"progress frame", []string{"\r[====>   ] 3/8 w1"}, "\r[====>   ] 3/8 w1", "\r[====>   ] 3/8 w1"},
		{"held start", []string{"x tok-s3"}, "x ", "x tok-s3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			w := Redactor([]string{tok, pem}).TermWriter(&b)
			for _, s := range tc.writes {
				w.Write([]byte(s))
			}
			if b.String() != tc.now {
				t.Errorf("before Flush: %q, want %q", b.String(), tc.now)
			}
			w.Flush()
			if b.String() != tc.all {
				t.Errorf("after Flush: %q, want %q", b.String(), tc.all)
			}
		})
	}
}
