package lab

import (
	"strings"
	"testing"
)

// TestCheckSSHAddress: addresses and jump strings that would put anything
// but a host name or an IP address at the start of a known_hosts line are
// refused; ordinary ones pass.
func TestCheckSSHAddress(t *testing.T) {
	tests := []struct {
		addr string
		ok   bool
	}{
		{"192.0.2.1", true},
		{"2001:db8::1", true},
		{"fe80::1%eth1", true},
		{"::%!", false},
		{"fe80::1%a b", false},
		{"server-1.lab.example.org", true},
		{"my_vm", true}, // an ~/.ssh/config alias
		{"restrict", false},
		{"RESTRICT", false},
		{"no-pty", false},
		{"cert-authority", false},
		{"restrict,command=\"id\"", false},
		{"a b", false},
		{"a\nb", false},
		{"a\x1b]0;x", false},
		{"@cert-authority", false},
		{"|1|abc=", false},
		{"!host", false},
		{"*.example.org", false},
		{"-oProxyCommand=x", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := checkSSHAddress(tt.addr) == ""; got != tt.ok {
			t.Errorf("checkSSHAddress(%q) ok = %v, want %v (%s)", tt.addr, got, tt.ok, checkSSHAddress(tt.addr))
		}
	}
}

func TestCheckJumpSpec(t *testing.T) {
	tests := []struct {
		spec string
		ok   bool
	}{
		{"bastion.example.org", true},
		{"ops@bastion.example.org:2222", true},
		{"ops@192.0.2.9,ops@10.0.0.1:22", true},
		{"ssh://ops@bastion.example.org", true},
		{"ops@[2001:db8::1]:22", true},
		{"2001:db8::1", true},
		{"restrict", false},
		{"ops@restrict:22", false},
		{"ops@bastion,restrict", false},
		{"ops@bastion.example.org:0", false},
		{"ops@bastion.example.org:x", false},
		{"@bastion.example.org", false},
		{"o ps@bastion.example.org", false},
		{"ops@bastion example", false},
		{"ops@[2001:db8::1", false},
		{"ops@[2001:db8::1]x", false},
		{"a,,b", false},
	}
	for _, tt := range tests {
		if got := checkJumpSpec(tt.spec) == ""; got != tt.ok {
			t.Errorf("checkJumpSpec(%q) ok = %v, want %v (%s)", tt.spec, got, tt.ok, checkJumpSpec(tt.spec))
		}
	}
}

// FuzzCheckJumpSpec: no panic, and an accepted jump string has no byte a
// known_hosts or authorized_keys line would read as structure (spaces,
// control characters, quotes, '=', '@' options, patterns).
func FuzzCheckJumpSpec(f *testing.F) {
	for _, s := range []string{"ops@bastion:22", "restrict", "a,b", "u@[::1]:22", "ssh://x", "@cert-authority *"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		if checkJumpSpec(spec) != "" {
			return
		}
		for _, hop := range strings.Split(spec, ",") {
			hop = strings.TrimPrefix(strings.TrimSpace(hop), "ssh://")
			if i := strings.LastIndex(hop, "@"); i >= 0 {
				hop = hop[i+1:]
			}
			if strings.ContainsAny(hop, " \t\r\n\"=*?!|\x00") {
				t.Fatalf("accepted %q with hop host part %q", spec, hop)
			}
		}
	})
}
