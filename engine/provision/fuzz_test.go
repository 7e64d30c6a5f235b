package provision

import (
	"strings"
	"testing"
)

// FuzzManagerText: what a host's package manager printed (host text, the
// agent's log of a failed provision) gives at most n of its own lines, none
// blank and none of the log's "# " notes or "$ " commands; an os-release
// ID and ID_LIKE give one of the three families or none.
func FuzzManagerText(f *testing.F) {
	f.Add("$ apt-get install -y perftest\nReading package lists...\nE: Unable to locate package perftest\n", 2, "ubuntu", "debian")
	f.Add("# waited 3s for the lock\r\n\n  \nError: Unable to find a match: perftest\r\n", 6, "rocky", "rhel centos fedora")
	f.Add("", 0, "opensuse-leap", "suse opensuse")
	f.Fuzz(func(t *testing.T, out string, n int, id, idLike string) {
		if n < 0 || n > 64 {
			return
		}
		got := lastLines(out, n)
		if got == "" {
			return
		}
		lines := strings.Split(got, "\n")
		if len(lines) > n {
			t.Fatalf("lastLines(%q, %d) = %d lines", out, n, len(lines))
		}
		for _, l := range lines {
			if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "# ") || strings.HasPrefix(l, "$ ") || !strings.Contains(out, l) {
				t.Fatalf("lastLines(%q, %d): line %q", out, n, l)
			}
		}
		switch fam := FamilyOf(id, strings.Fields(idLike)); fam {
		case "", Debian, RHEL, SUSE:
		default:
			t.Fatalf("FamilyOf(%q, %q) = %q", id, idLike, fam)
		}
	})
}

// TestLastLines: the tail of a failed provision's log that an error quotes:
// the manager's last words, without the log's notes, commands and blank
// lines (a line of tabs is blank too).
func TestLastLines(t *testing.T) {
	for _, tt := range []struct {
		in   string
		n    int
		want string
	}{
		{"$ apt-get install -y perftest\nReading package lists...\nE: Unable to locate package perftest\n", 1, "E: Unable to locate package perftest"},
		{"# waited 3s for the lock\r\nError: Unable to find a match: perftest\r\n\t\n \u00a0\n", 6, "Error: Unable to find a match: perftest"},
		{"a\nb\nc\n", 2, "b\nc"},
		{"", 3, ""},
	} {
		if got := lastLines(tt.in, tt.n); got != tt.want {
			t.Errorf("lastLines(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}
